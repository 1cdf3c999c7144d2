"""Sandboxed turns: every agent process in a bubblewrap namespace of its own.

A probing agent (support.sandbox) reports what its process can see and touch; each test
checks one promise, with the poller's own user (root here, as CI runs) and with an agent
run as an unprivileged user, in both launch modes (a runner process per turn, a thread of
the poller).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

from support import runs
from support.sandbox import Listener, Probe, findings, running
from support.timeline import at
from support.waiting import wait_for

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None,
                                reason="bubblewrap is not installed (scripts/test.sh installs it)")

MODES = ["thread", "process"]
USERS = [None, "nobody"]


@pytest.fixture
def probe():
    p = Probe()
    yield p
    p.close()


@pytest.fixture
def port():
    listener = Listener()
    yield listener.port
    listener.close()


@pytest.fixture
def room(cli, monkeypatch, probe):
    """A Mood, a fully trusted and a look-only person; nothing writable but what a turn gets."""
    monkeypatch.delenv("MOOD_POLLER_SANDBOX_WRITABLE", raising=False)
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("person", "add", "bob", "--trust", "look")
    cli("set", "cooldown", "0")
    cli("set", "idle_after", "0")
    cli("set", "considers_per_hour", "0")
    cli("tick", "--now", at(0), "--wait")
    return cli


def needs_root(user):
    if user and os.geteuid() != 0:
        pytest.skip("an agent runs as another user only under a poller running as root")


def add_probe(cli, probe, port, *, user=None, mode="reply", marker="m", extra=()):
    work = probe.workdir(user)
    home = os.environ["HOME"] if user is None else os.path.expanduser(f"~{user}")
    db = cli.db_url.removeprefix("sqlite:///")
    cmd = probe.command(db, work, home, port, marker, mode)
    cli("agent", "add", "bot", "--command", cmd, "--workdir", str(work),
        *(["--run-as", user] if user else []), *extra)
    return work


def ask(cli, seconds: float, who: str = "ada", wait: bool = True) -> None:
    cli("post", "lobby", "--as", who, "--at", at(seconds), "@bot look around")
    cli("tick", "--now", at(seconds + 1), *(["--wait"] if wait else []))


def reply(cli) -> dict[str, str]:
    posts = [p for p in json.loads(cli("posts", "lobby", "--json").out) if p["sender"] == "bot"]
    assert posts, json.loads(cli("wakes", "--json").out)
    return findings(posts[-1]["text"])


def last_wake(cli) -> dict:
    return max(json.loads(cli("wakes", "--json").out), key=lambda w: w["id"])


@pytest.mark.parametrize("user", USERS)
@pytest.mark.parametrize("mode", MODES)
def test_a_turn_sees_only_itself_no_secret_and_not_the_database(room, probe, port, monkeypatch,
                                                                 mode, user):
    needs_root(user)
    monkeypatch.setenv("MOOD_POLLER_LAUNCH", mode)
    marker = f"see{mode}{user or 'root'}{os.getpid()}"
    try:
        add_probe(room, probe, port, user=user, marker=marker)
        room("post", "lobby", "--as", "ada", "--at", at(10), "@bot look around")
        # The poller as a process of its own, started with the secret in its environment
        # (a variable set later in a running process is not in its /proc/PID/environ).
        subprocess.run([sys.executable, "-m", "poller", "--db", room.db_url, "--now", at(11),
                        "tick", "--wait"], check=True, capture_output=True,
                       env=dict(os.environ, AGENT_CANARY_SECRET=probe.canary))
        found = reply(room)
        assert found["canary"] == "0"  # no /proc/*/environ holding the poller's secrets
        comms = [c for c in found["comms"].split(",") if c]
        assert not [c for c in comms if c.startswith("python")], comms  # no poller process
        assert int(found["procs"]) <= 8, found  # the turn's own few
        assert found["db"] == "refused"
    finally:
        os.system(f"pkill -9 -f {marker}")


@pytest.mark.parametrize("user", USERS)
def test_a_look_only_turn_writes_only_its_scratch_directory(room, probe, port, user):
    needs_root(user)
    marker = f"look{user or 'root'}{os.getpid()}"
    try:
        work = add_probe(room, probe, port, user=user, marker=marker)
        ask(room, 10, who="bob")
        assert last_wake(room)["tools"] == "look"
        found = reply(room)
        assert (found["work"], found["home"], found["tmp"]) == ("no", "no", "yes")
        assert not (work / f"probe-{marker}").exists()
        assert not os.path.exists(found["tmpdir"])  # the scratch directory went with the turn
    finally:
        os.system(f"pkill -9 -f {marker}")


@pytest.mark.parametrize("user", USERS)
def test_a_full_tool_turn_writes_its_work_directory(room, probe, port, user):
    needs_root(user)
    marker = f"full{user or 'root'}{os.getpid()}"
    try:
        work = add_probe(room, probe, port, user=user, marker=marker)
        ask(room, 10)
        assert last_wake(room)["tools"] == "full"
        found = reply(room)
        assert (found["work"], found["home"], found["tmp"]) == ("yes", "no", "yes")
        assert (work / f"probe-{marker}").exists()
    finally:
        os.system(f"pkill -9 -f {marker}")


def test_network_off_leaves_only_loopback_of_its_own(room, probe, port):
    marker = f"net{os.getpid()}"
    try:
        add_probe(room, probe, port, marker=marker)
        ask(room, 10)
        assert reply(room)["net"] == "yes"  # the same probe reaches the port when allowed
        room("agent", "set", "bot", "--network", "off")
        ask(room, 20)
        assert reply(room)["net"] == "no"
    finally:
        os.system(f"pkill -9 -f {marker}")


@pytest.mark.parametrize("user", USERS)
@pytest.mark.parametrize("mode", MODES)
def test_a_daemon_started_in_a_turn_is_gone_when_it_replies(room, probe, port, monkeypatch,
                                                            mode, user):
    needs_root(user)
    monkeypatch.setenv("MOOD_POLLER_LAUNCH", mode)
    marker = f"reply{mode}{user or 'root'}{os.getpid()}"
    try:
        add_probe(room, probe, port, user=user, marker=marker)
        ask(room, 10)
        assert last_wake(room)["status"] == "replied"
        wait_for(lambda: not running(f"daemon-{marker}"), what="the daemon to be gone")
        assert not running(marker)
    finally:
        os.system(f"pkill -9 -f {marker}")


@pytest.mark.parametrize("mode", MODES)
def test_a_daemon_is_gone_when_its_turn_times_out(room, probe, port, monkeypatch, mode):
    monkeypatch.setenv("MOOD_POLLER_LAUNCH", mode)
    marker = f"timeout{mode}{os.getpid()}"
    try:
        add_probe(room, probe, port, marker=marker, mode="hang", extra=("--timeout", "3"))
        ask(room, 10)
        assert last_wake(room)["status"] == "cut_off"
        wait_for(lambda: not running(f"daemon-{marker}"), what="the daemon to be gone")
        assert not running(marker)
    finally:
        os.system(f"pkill -9 -f {marker}")


def _ended_by(room, tmp_path, probe, port, marker: str, mode: str, end) -> None:
    """Start a hanging probe's turn (under `run` in thread mode, a detached runner in process
    mode), wait for its daemon, end the turn with *end*, and see everything it left go."""
    add_probe(room, probe, port, marker=marker, mode="hang")
    proc = None
    if mode == "thread":
        proc = runs.start_run(room.db_url, tmp_path, now=None)
        room("post", "lobby", "--as", "ada", "@bot look around")
    else:
        ask(room, 10, wait=False)
    try:
        wait_for(lambda: running(f"daemon-{marker}"), what="the probe's daemon to start")
        end(proc)
        wait_for(lambda: not running(f"daemon-{marker}"), what="the daemon to be gone")
        wait_for(lambda: not running(marker), what="the probe to be gone")
    finally:
        if proc is not None and proc.poll() is None:
            runs.stop(proc)


@pytest.mark.parametrize("mode", MODES)
def test_a_daemon_is_gone_when_its_turn_is_stopped(room, tmp_path, probe, port, mode):
    marker = f"stop{mode}{os.getpid()}"
    try:
        _ended_by(room, tmp_path, probe, port, marker, mode,
                  lambda _: room("stop", "--agent", "bot", "--mood", "lobby"))
    finally:
        os.system(f"pkill -9 -f {marker}")


@pytest.mark.parametrize("mode", MODES)
def test_a_daemon_is_gone_after_the_emergency_stop(room, tmp_path, probe, port, mode):
    marker = f"scram{mode}{os.getpid()}"
    try:
        _ended_by(room, tmp_path, probe, port, marker, mode, lambda _: room("scram"))
    finally:
        os.system(f"pkill -9 -f {marker}")


@pytest.mark.parametrize("mode", MODES)
def test_a_daemon_is_gone_when_run_is_told_to_stop(room, tmp_path, probe, port, monkeypatch,
                                                     mode):
    monkeypatch.setenv("MOOD_POLLER_LAUNCH", mode)
    marker = f"term{mode}{os.getpid()}"
    add_probe(room, probe, port, marker=marker, mode="hang")
    proc = runs.start_run(room.db_url, tmp_path, now=None)
    try:
        room("post", "lobby", "--as", "ada", "@bot look around")
        wait_for(lambda: running(f"daemon-{marker}"), what="the probe's daemon to start")
        assert runs.stop(proc) == 0
        wait_for(lambda: not running(f"daemon-{marker}"), what="the daemon to be gone")
        wait_for(lambda: not running(marker), what="the probe to be gone")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        os.system(f"pkill -9 -f {marker}")


def test_with_the_sandbox_off_a_turn_runs_as_before_and_it_is_said(room, probe, port,
                                                                    monkeypatch):
    monkeypatch.setenv("MOOD_POLLER_SANDBOX", "off")
    marker = f"off{os.getpid()}"
    try:
        work = add_probe(room, probe, port, marker=marker)
        ask(room, 10, who="bob")
        found = reply(room)
        # Unsandboxed, a look-only turn can write its work directory and see the poller.
        assert found["work"] == "yes" and (work / f"probe-{marker}").exists()
        assert any(c.startswith("python") for c in found["comms"].split(","))
        status = room("status")
        assert "agent turns are not sandboxed (poller.sandbox is 'off')" in status.out
        if os.geteuid() == 0:  # said louder: every command agent runs as root
            assert "runs as root" in status.out and "--run-as" in status.out
            assert "bubblewrap" in status.out
        st = json.loads(room("status", "--json").out)["sandbox"]
        assert (st["mode"], st["sandboxed"]) == ("off", False)
        checked = room("config", "check")
        assert "not sandboxed" in checked.err
        health = json.loads(room("health", "--json", ok=False).out)
        assert health["sandbox"]["sandboxed"] is False
    finally:
        os.system(f"pkill -9 -f {marker}")


def test_with_the_sandbox_on_status_says_so(room):
    st = json.loads(room("status", "--json").out)["sandbox"]
    assert (st["mode"], st["sandboxed"], st["warning"]) == ("auto", True, None)
    assert "run in bubblewrap" in room("status").out
    assert "not sandboxed" not in room("config", "check").err


def test_bwrap_required_but_missing_fails_the_turn_in_one_line(room, probe, port, monkeypatch,
                                                               tmp_path):
    # A PATH with no bwrap on it: `poller.sandbox = bwrap` refuses to run the turn bare.
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("sh", "bash", "cat"):
        (bare / tool).symlink_to(shutil.which(tool))
    monkeypatch.setenv("PATH", str(bare))
    monkeypatch.setenv("MOOD_POLLER_SANDBOX", "bwrap")
    marker = f"req{os.getpid()}"
    add_probe(room, probe, port, marker=marker)
    ask(room, 10)
    w = last_wake(room)
    assert w["status"] == "failed"
    assert "could not be sandboxed" in w["error"] and "not installed" in w["error"]
    assert not running(marker)


# A Claude Code stand-in that keeps its sessions where Claude Code does (~/.claude) and
# refuses a --resume it cannot find there, as Claude Code does.
CLAUDE = r"""#!/bin/bash
cat >/dev/null
resume=""
while [ $# -gt 0 ]; do [ "$1" = --resume ] && resume=$2; shift; done
mkdir -p "$HOME/.claude/projects"
if [ -n "$resume" ]; then
  [ -f "$HOME/.claude/projects/$resume" ] || { echo "No conversation found with session ID: $resume" >&2; exit 1; }
  sid=$resume
else
  sid="s-$RANDOM$RANDOM"
fi
echo "turn" >> "$HOME/.claude/projects/$sid" || exit 2
n=$(wc -l < "$HOME/.claude/projects/$sid")
wrote=no; touch "$PWD/probe-file" 2>/dev/null && wrote=yes
echo '{"type":"system","subtype":"init","session_id":"'$sid'","cwd":"'$PWD'","model":"m","tools":[],"slash_commands":[],"permissionMode":"dontAsk"}'
echo '{"type":"result","subtype":"success","is_error":false,"duration_ms":1,"duration_api_ms":1,"num_turns":1,"result":"turn '$n' of '$sid' wrote='$wrote'","session_id":"'$sid'","total_cost_usd":0.0,"usage":{"input_tokens":1,"output_tokens":1}}'
"""


def test_claude_code_keeps_its_sessions_writable_in_both_tiers(room, probe, tmp_path):
    claude = probe.dir / "claude"
    claude.write_text(CLAUDE)
    claude.chmod(0o755)
    sessions = tmp_path / "session-dir"
    room("agent", "add", "bot", "--claude-code", "--claude-bin", str(claude),
         "--session-dir", str(sessions))
    ask(room, 10, who="bob")  # look-only: the filesystem is read-only but ~/.claude
    first = last_wake(room)
    assert (first["tools"], first["status"]) == ("look", "replied")
    said = [p["text"] for p in json.loads(room("posts", "lobby", "--json").out)
            if p["sender"] == "bot"]
    assert said[-1].startswith("turn 1 of s-") and said[-1].endswith("wrote=no")
    sid = said[-1].split()[3]
    ask(room, 20)  # full tools: it resumes the same session, and may write its directory
    said = [p["text"] for p in json.loads(room("posts", "lobby", "--json").out)
            if p["sender"] == "bot"]
    assert said[-1] == f"turn 2 of {sid} wrote=yes"
    assert (sessions / "probe-file").exists()
    assert (tmp_path / "home" / ".claude" / "projects" / sid).read_text() == "turn\nturn\n"
