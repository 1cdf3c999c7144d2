"""Wakers as plugins: found by name through the ``mood_poller.wakers`` entry points.

The outside waker is a real package, ``tests/plugins/mood-poller-echo-waker``,
which ``scripts/test.sh`` installs beside the project: an agent on it runs its
turn through ``tick --wait`` on a real SQLite database.  What the core asks of a
waker (sessions, commands, cost, progress, where the rules go) is read from
its class, and a name nobody registered is one clear line.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
import subprocess
import sys
from importlib import metadata

import pytest

from support.machine import REPO, unavailable
from poller.turns import registry, wakers

T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)
PLUGIN = "mood-poller-echo-waker"


def at(seconds: float) -> str:
    return (T0 + dt.timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


@pytest.fixture
def echo_entry_point() -> metadata.EntryPoint:
    """The echo waker's entry point, as the installed package declares it."""
    found = [ep for ep in metadata.entry_points(group=registry.GROUP, name="echo")
             if ep.dist is not None and ep.dist.name == PLUGIN]
    if not found:
        unavailable(f"{PLUGIN} is not installed (scripts/test.sh installs "
                    f"tests/plugins/{PLUGIN})")
    return found[0]


@pytest.fixture
def room(cli):
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("set", "cooldown", "0")
    cli("set", "considers_per_hour", "0")
    return cli


def posts(cli) -> list[dict]:
    return json.loads(cli("posts", "lobby", "--limit", "50", "--json").out)


def test_the_outside_waker_is_found_through_its_entry_point(echo_entry_point):
    cls = registry.kind("echo")
    assert cls is echo_entry_point.load() and issubclass(cls, wakers.Waker)
    assert "echo" in registry.names() and cls in registry.every()
    assert (cls.keeps_session, cls.takes_commands, cls.reports_cost, cls.reports_progress,
            cls.instructions_in_wake, cls.accepts) == (False, False, False, False, True,
                                                       ("prefix",))


def test_an_agent_on_the_outside_waker_answers_in_its_mood(room, echo_entry_point):
    out = room("agent", "add", "echo", "--waker", "echo", "--option", "prefix=heard: ").out
    assert out.strip() == "added agent echo (echo)"
    (agent,) = json.loads(room("agent", "list", "--json").out)
    assert (agent["waker"], agent["options"]) == ("echo", {"prefix": "heard: "})
    room("tick", "--now", at(0), "--wait")
    asked = int(room("post", "lobby", "--as", "ada", "--at", at(1), "@echo are you there?").out)
    room("tick", "--now", at(2), "--wait")
    (wake,) = json.loads(room("wakes", "--json").out)
    assert (wake["agent"], wake["kind"], wake["status"], wake["answers"]) == (
        "echo", "mention", "replied", [asked])
    text = json.loads(room("wakes", "show", str(wake["id"]), "--json").out)["text"]
    assert "@echo are you there?" in text
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    reply = posts(room)[-1]
    assert (reply["sender"], reply["text"]) == (
        "echo", f"heard: mention wake of {len(text.split())} words, sha256 {digest}")


def test_the_outside_wakers_options_are_checked_and_changed_like_any(room, echo_entry_point):
    room("agent", "add", "echo", "--waker", "echo")
    r = room.fails("agent", "set", "echo", "--option", "colour=blue")
    assert r.err.strip() == ("mood-poller: --option colour: the echo waker takes no such "
                             "option (it takes prefix)")
    assert "--model only apply with --claude-code" in room.fails(
        "agent", "set", "echo", "--model", "opus").err
    r = room.fails("agent", "set", "echo", "--option", "prefix=Bearer abcdefghijklmnopqrstuvwx")
    assert "looks like a literal secret" in r.err and "abcdefghijklmnop" not in r.err
    assert "prefix: (none) -> hi " in room("agent", "set", "echo", "--option", "prefix=hi ").out
    assert "echo, prefix 'hi '" in room("agent", "list").out
    room("agent", "set", "echo", "--option", "prefix=")
    (agent,) = json.loads(room("agent", "list", "--json").out)
    assert agent["options"] == {}
    out = room("agent", "set", "echo", "--command", "cat").out
    assert "waker: echo -> command" in out and "command: (none) -> cat" in out


def test_a_waker_nobody_registered_is_one_clear_line(room):
    r = room.fails("agent", "add", "x", "--waker", "nope")
    assert r.err.strip().splitlines() == [
        "mood-poller: unknown waker 'nope' (known here: " + ", ".join(registry.names())
        + "; a waker from another package must be installed where the poller runs)"]
    assert json.loads(room("agent", "list", "--json").out) == []
    assert "exactly one of" in room.fails("agent", "add", "x", "--waker", "claude-code",
                                          "--command", "cat").err


def test_the_poller_s_own_wakers_go_by_the_same_names_and_flags(room):
    room("agent", "add", "cc", "--waker", "claude-code", "--model", "opus")
    room("agent", "add", "cmd", "--waker", "command", "--command", "cat")
    assert "an agent needs a command" in room.fails("agent", "add", "bare", "--waker",
                                                    "command").err
    got = {a["handle"]: (a["waker"], a["command"], a["options"])
           for a in json.loads(room("agent", "list", "--json").out)}
    assert got == {"cc": ("claude-code", None, {"model": "opus"}), "cmd": ("command", "cat", {})}


def test_a_turn_whose_waker_is_no_longer_installed_fails_with_the_reason(room):
    from poller.store import Store, db

    store = Store(db.make_engine(room.db_url))
    try:  # as if its package was removed after the agent was added
        store.add_agent("ghost", T0, waker="gone")
    finally:
        store.engine.dispose()
    assert "(gone: not installed here)" in room("agent", "list").out
    room("tick", "--now", at(0), "--wait")
    room("post", "lobby", "--as", "ada", "--at", at(1), "@ghost hello?")
    room("tick", "--now", at(2), "--wait")
    (wake,) = json.loads(room("wakes", "--json").out)
    assert wake["status"] == "failed"
    shown = json.loads(room("wakes", "show", str(wake["id"]), "--json").out)
    assert "unknown waker 'gone'" in shown["error"]
    assert posts(room)[-1]["text"] == ("@ghost's turn ended without a reply: its waker is not "
                                       "installed here.")


def test_the_core_asks_what_a_waker_can_do_not_which_it_is():
    assert [cls.name for cls in wakers.BUILT_IN] == ["command", "claude-code", "url"]
    claude = registry.kind("claude-code")
    assert claude.keeps_session and claude.takes_commands and claude.reports_cost
    assert claude.reports_progress and not claude.instructions_in_wake
    for name in ("command", "url"):
        plain = registry.kind(name)
        assert not (plain.keeps_session or plain.takes_commands or plain.reports_cost
                    or plain.reports_progress) and plain.instructions_in_wake
    # A name not installed here is taken to do nothing more than any waker.
    assert registry.find("gone") is None and registry.capabilities("gone") is wakers.Waker
    # Only the wakers themselves and the CLI's --claude-code flag spell the name out.
    spelled = {path.relative_to(REPO).as_posix() for path in (REPO / "poller").rglob("*.py")
               if '"claude-code"' in path.read_text() or "CLAUDE_CODE" in path.read_text()}
    assert spelled == {"poller/turns/wakers.py", "poller/cli/people.py"}


def test_the_built_in_wakers_are_known_where_no_distribution_metadata_is(tmp_path):
    # A bare copy of the source and -I -S (no site-packages): no installed distribution
    # and no entry point at all, as when the poller runs from a source tree.
    shutil.copytree(REPO / "poller", tmp_path / "poller",
                    ignore=shutil.ignore_patterns("__pycache__"))
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from importlib import metadata; "
            "from poller.turns import registry; "
            "print(len(list(metadata.entry_points(group=registry.GROUP))), registry.names(), "
            "registry.kind('url').__name__)")
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code, str(tmp_path)],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.strip() == "0 ['command', 'claude-code', 'url', 'model'] HttpWaker"
