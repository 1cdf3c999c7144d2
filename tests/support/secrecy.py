"""What the secret-keeping tests share: the secrets a poller holds, a probe agent that
reports what it could read, throwaway users, and a tick run as a process with them set."""

from __future__ import annotations

import datetime as dt
import json
import os
import pwd
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from support.cli import Cli
from support.machine import unavailable


T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


SECRETS = {
    "MOOD_POLLER_WIKI_BOT_PASSWORD": "sekrit-xyz",
    "MOOD_POLLER_SUMMARIZER_API_KEY": "sekrit-abc",
    "LC_SECRET_TOKEN": "sekrit-lc",
    "AGENT_TOKEN": "sekrit-tok",
}


HEADER_SECRET = "sekrit-hdr"  # stored in the database, as a literal header value


TICK_TIMEOUT_S = 300  # a hang guard only


# The attacker.  $1 is the database file.  Everything it learns goes to stdout,
# which is its reply, posted in the Mood.  ($$ is the agent's own process, the
# one the runner started.)
PROBE = r"""#!/bin/sh
db="$1"
cat >/dev/null
{
echo "== uid $(id -u)"
echo "== own environment"
env | sort
echo "== inherited files"
for f in /proc/$$/fd/*; do
    n=${f##*/}
    echo "fd $n -> $(readlink "$f")"
    if [ "$n" -gt 2 ] && [ "$(readlink "$f")" != "$(readlink -f "$0")" ]; then
        timeout 2 head -c 2000 "$f" 2>/dev/null | tr -c '[:print:]\n' '.'
        echo
    fi
done
pid=$$
while :; do
    ppid=$(sed 's/.*) //' "/proc/$pid/stat" | cut -d' ' -f2)
    [ -n "$ppid" ] && [ "$ppid" -gt 0 ] || break
    echo "== ancestor $ppid ($(cat "/proc/$ppid/comm" 2>/dev/null))"
    found=$(cat "/proc/$ppid/environ" 2>/dev/null | tr '\0' '\n')
    if [ -n "$found" ]; then echo "$found"; else echo "unreadable: /proc/$ppid/environ"; fi
    if ls "/proc/$ppid/fd/" >/dev/null 2>&1; then
        for f in /proc/$ppid/fd/*; do
            echo "its fd ${f##*/} -> $(readlink "$f")"
            timeout 2 head -c 2000 "$f" 2>/dev/null | tr -c '[:print:]\n' '.'
            echo
        done
    else
        echo "unreadable: /proc/$ppid/fd"
    fi
    pid=$ppid
done
for f in "$db" "$db-wal"; do
    if [ -e "$f" ]; then
        if head -c 1 "$f" >/dev/null 2>&1; then
            echo "== readable: $f"
            tr -c '[:print:]' '\n' < "$f" | grep -E '.{8,}' | sort -u | head -c 20000
        else
            echo "== unreadable: $f"
        fi
    fi
done
} 2>&1 | tr '`' "'"  # no block in the reply: it is read as plain text
"""


def at(seconds: float) -> str:
    return (T0 + dt.timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def leaked(text: str) -> list[str]:
    return [s for s in [*SECRETS.values(), HEADER_SECRET] if s in text]


def posts(cli, mood="lobby") -> list[dict]:
    return json.loads(cli("posts", mood, "--limit", "200", "--json").out)


def wakes(cli) -> list[dict]:
    return sorted(json.loads(cli("wakes", "--json").out), key=lambda w: w["id"])


@pytest.fixture
def shared():
    """A directory every user may enter (tmp_path is root's alone)."""
    where = Path(tempfile.mkdtemp(prefix="mood-secrets-", dir="/tmp"))
    where.chmod(0o755)
    yield where
    shutil.rmtree(where, ignore_errors=True)


@pytest.fixture
def throwaway_user():
    """A system user with no home, created for one test and removed after it."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        unavailable("creating a user and switching to it needs root on Linux")
    if not (shutil.which("useradd") and shutil.which("userdel") and shutil.which("setpriv")):
        unavailable("needs useradd, userdel and setpriv")
    name = f"mpagent{random.randrange(32768)}"
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                    name], check=True, capture_output=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)


def poller_env(db_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOOD_")}
    env.update(SECRETS, MOOD_POLLER_DB=db_url, **extra)
    return env


def run_tick(python: list[str], env: dict, cwd: Path, seconds: float) -> str:
    r = subprocess.run(python + ["-m", "poller", "tick", "--now", at(seconds), "--wait"],
                       cwd=cwd, env=env, capture_output=True, text=True, timeout=TICK_TIMEOUT_S)
    assert r.returncode == 0, r.stderr
    assert not leaked(r.stdout + r.stderr)
    return r.stdout


def lobby(cli: Cli, probe: Path, db: Path, *agent_args: str) -> None:
    """A Mood with the probing agent in it, and the first cycle run."""
    cli("init")
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "probe", "--command", f"exec sh {probe} {db}", *agent_args)
    cli("tick", "--now", at(0))
    cli("post", "lobby", "--as", "ada", "--at", at(1), "@probe what can you find?")


def probe_reply(cli: Cli) -> str:
    (w,) = [w for w in wakes(cli) if w["agent"] == "probe"]
    assert w["status"] == "replied", w
    reply = [p for p in posts(cli) if p["sender"] == "probe" and p["kind"] == "post"][-1]["text"]
    assert "MOOD_WAKE_ID=" in reply and "\n== ancestor" in reply  # the probe did its work
    return reply


def sections(reply: str) -> list[str]:
    """The probe's findings, one per ``== `` heading."""
    return re.split(r"^(?=== )", reply, flags=re.MULTILINE)


def every_ancestor_environ_unreadable(reply: str) -> bool:
    ancestors = re.findall(r"^== ancestor (\d+) ", reply, re.MULTILINE)
    return len(ancestors) >= 2 and all(f"unreadable: /proc/{pid}/environ" in reply
                                       for pid in ancestors)


def inherited(reply: str) -> list[str]:
    """The probe's own open files: its three pipes (and the script the shell reads)."""
    section = next(s for s in sections(reply) if s.startswith("== inherited files"))
    return [line for line in section.splitlines() if line.startswith("fd ")]


def write_probe(shared: Path) -> Path:
    probe = shared / "probe.sh"
    probe.write_text(PROBE)
    probe.chmod(0o755)
    return probe


def no_ancestor_to_read(reply: str) -> bool:
    """The probe found no process of the poller's to read: sandboxed, its only ancestor in
    its namespace is bubblewrap's (holding its own allowlisted environment); unsandboxed,
    every ancestor's environment is unreadable (non-dumpable)."""
    from support.agents import sandboxed

    if sandboxed():
        return re.findall(r"^== ancestor (\d+) \((\S+)\)", reply, re.MULTILINE) == [("1", "bwrap")]
    return every_ancestor_environ_unreadable(reply)
