"""Agents cannot reach the poller's secrets, and no output shows a credential.

The attacks are real: a real ``tick`` starts a real agent, a shell script
that tries every route to a secret it can think of (its own environment,
``/proc/<pid>/environ`` and the open files of each ancestor, the files it
inherited, the database file) and posts what it found as its reply.  Root
can read any process's environment, so the agent that runs as the poller's
own user runs as a throwaway non-root user, poller and all; the ``--run-as``
agent runs as the throwaway user under a root poller.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from support.agents import agent_command, sandboxed
from support import users
from support.cli import Cli
from poller.turns import wakers
from support.secrecy import (at, inherited, leaked, lobby, no_ancestor_to_read, poller_env,
                             posts, probe_reply, run_tick, sections, wakes, write_probe)
from support.secrecy import shared, throwaway_user  # noqa: F401  (fixtures)

# -- a throwaway Unix user and a way to run the poller as it -----------------------------


def python_as(user: pwd.struct_passwd, shared: Path) -> list[str]:
    """The argv prefix that runs this test's Python (and the project) as *user*."""
    prefix, python = users.python_as(user, shared)
    return prefix + python


def first_ancestor(reply: str) -> str:
    """What the probe found at its parent (the runner, or the poller itself)."""
    return next(s for s in sections(reply) if s.startswith("== ancestor "))


# -- the attacks ----------------------------------------------------------------------


@pytest.mark.parametrize("launch", ["process", "thread"])
def test_an_agent_of_the_pollers_own_user_reads_no_secret(throwaway_user, shared, launch):
    user = throwaway_user
    python = python_as(user, shared)
    data = shared / "data"
    data.mkdir(mode=0o700)
    db = data / "moods.db"
    url = f"sqlite:///{db}"
    probe = write_probe(shared)
    lobby(Cli(url), probe, db)
    for path in [data, *data.iterdir()]:
        os.chown(path, user.pw_uid, user.pw_gid)

    run_tick(python, poller_env(url, MOOD_POLLER_LAUNCH=launch, HOME=str(data)), shared, 2)

    reply = probe_reply(Cli(url))
    assert leaked(reply) == [], reply
    assert f"== uid {user.pw_uid}" in reply
    assert no_ancestor_to_read(reply)
    if not sandboxed():
        # Its parent (a runner, or the poller itself when turns run as threads) and the
        # poller are this same user; neither lets it read its environment or open files.
        first = first_ancestor(reply)
        assert re.search(r"unreadable: /proc/\d+/environ", first), first
        assert re.search(r"unreadable: /proc/\d+/fd", first), first
    assert not [line for line in inherited(reply) if "moods.db" in line or "socket:" in line]


def test_a_poller_that_cannot_switch_users_fails_the_turn_clearly(throwaway_user, shared):
    user = throwaway_user
    python = python_as(user, shared)
    data = shared / "data"
    data.mkdir(mode=0o700)
    db = data / "moods.db"
    url = f"sqlite:///{db}"
    other = "nobody" if _user_exists("nobody") else "root"
    lobby(Cli(url), write_probe(shared), db, "--run-as", other)
    for path in [data, *data.iterdir()]:
        os.chown(path, user.pw_uid, user.pw_gid)

    run_tick(python, poller_env(url, HOME=str(data)), shared, 2)

    cli = Cli(url)
    (w,) = wakes(cli)
    assert w["status"] == "failed"
    assert f"could not start its command as user {other}: Operation not permitted" in w["error"]
    assert "root, or with CAP_SETUID and CAP_SETGID" in w["error"]
    assert posts(cli)[-1]["text"] == ("@probe's turn ended without a reply: its command could "
                                      "not be started as its user.")


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def test_run_as_names_an_existing_user_and_a_process(cli):
    r = cli.fails("agent", "add", "bot", "--command", "true", "--run-as", "no-such-user-here")
    assert r.err.strip().splitlines() == [
        "mood-poller: --run-as: there is no Unix user 'no-such-user-here' on this machine"]
    r = cli.fails("agent", "add", "svc", "--url", "http://127.0.0.1:9/", "--run-as", "root")
    assert "--run-as applies only to agents that run a process" in r.err
    assert json.loads(cli("agent", "list", "--json").out) == []


def test_a_process_of_the_poller_is_not_dumpable():
    code = ("from poller import secure; before = secure.is_dumpable(); secure.undumpable(); "
            "print(before, secure.is_dumpable())")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.split() == ["True", "False"]


# -- the database's files -------------------------------------------------------------------


def test_the_database_its_wal_and_its_directory_are_private(tmp_path):
    from poller.store import db

    where = tmp_path / "new" / "dir"
    url = f"sqlite:///{where / 'moods.db'}"
    old = os.umask(0o022)
    try:
        engine = db.make_engine(url)
        with engine.connect() as conn:  # held open: the -wal and -shm files exist meanwhile
            conn.exec_driver_sql("CREATE TABLE t (x)")
            conn.exec_driver_sql("INSERT INTO t VALUES (1)")
            conn.commit()
            modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in where.iterdir()}
        engine.dispose()
    finally:
        os.umask(old)
    assert modes == {"moods.db": 0o600, "moods.db-wal": 0o600, "moods.db-shm": 0o600}
    assert stat.S_IMODE(where.stat().st_mode) == 0o700


def test_an_existing_database_directory_keeps_its_mode(tmp_path):
    from poller.store import db

    tmp_path.chmod(0o755)
    db.make_engine(f"sqlite:///{tmp_path / 'moods.db'}").dispose()
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "moods.db").stat().st_mode) == 0o600


# -- what agents see of the environment ---------------------------------------------------


def test_agents_see_exactly_the_allowlisted_environment(cli, tmp_path, monkeypatch):
    passed = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8", "LANGUAGE": "en", "TZ": "UTC",
              "LC_ALL": "C.UTF-8", "LC_TIME": "C", "LC_IDENTIFICATION": "C",
              "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_DATA_DIRS": "/usr/share",
              "XDG_RUNTIME_DIR": str(tmp_path / "run"), "NAMED_BY_OPERATOR": "yes"}
    refused = {"SHELL": "/bin/sh", "TERM": "xterm", "TMPDIR": str(tmp_path),
               "LC_SECRET_TOKEN": "sekrit-lc", "XDG_SECRET": "sekrit-xdg",
               "MOOD_POLLER_WIKI_BOT_PASSWORD": "sekrit-xyz", "MOOD_OTHER": "sekrit-mood",
               "MOOD_WAKE_ID": "999", "PGPASSWORD": "sekrit-pg"}
    for name, value in {**passed, **refused}.items():
        monkeypatch.setenv(name, value)
    passed |= {k: os.environ[k] for k in ("HOME", "USER", "LOGNAME", "XDG_DATA_HOME")
               if k in os.environ}
    config = tmp_path / "config.toml"
    config.write_text('[poller]\nagent_env = "NAMED_BY_OPERATOR, MOOD_POLLER_WIKI_BOT_PASSWORD"\n')
    c = Cli(cli.db_url, str(config))
    script = tmp_path / "envdump.py"
    script.write_text("import json, os, sys\nsys.stdin.read()\nprint(json.dumps(dict(os.environ)))\n")
    c("mood", "add", "lobby")
    c("person", "add", "ada", "--trust", "full")
    c("agent", "add", "bot", "--command", f"{sys.executable} {script}")
    c("tick", "--now", at(0))
    c("post", "lobby", "--as", "ada", "--at", at(1), "@bot what can you see?")
    c("tick", "--now", at(2), "--wait")
    seen = json.loads(posts(c)[-1]["text"])
    if sandboxed():  # its own scratch directory, never the poller's TMPDIR
        scratch = seen.pop("TMPDIR")
        assert scratch != str(tmp_path) and "mood-turn-" in scratch
    # The turn's own capability for its tools (mood-poller mcp), never the poller's secrets.
    wake_vars = {"MOOD_WAKE_ID", "MOOD_AGENT", "MOOD_SLUG", "MOOD_WAKE_KIND", "MOOD_TOOLS",
                 "MOOD_TURN_TOKEN", "MOOD_TURN_DOOR"}
    assert set(seen) - {"PWD", "SHLVL", "_"} == set(passed) | wake_vars  # the shell adds those
    assert {k: seen[k] for k in passed} == passed
    assert seen["MOOD_WAKE_ID"] == str(wakes(c)[0]["id"]) and seen["MOOD_AGENT"] == "bot"
    assert not set(refused) - {"MOOD_WAKE_ID"} & set(seen)
    assert "sekrit" not in json.dumps(seen)


# -- what the Mood is told when a turn fails ------------------------------------------


def test_a_failed_turn_posts_the_kind_of_failure_and_keeps_the_detail(cli, tmp_path):
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "bot", "--command", agent_command(tmp_path, "fail"))
    cli("tick", "--now", at(0))
    cli("post", "lobby", "--as", "ada", "--at", at(1), "@bot go")
    cli("tick", "--now", at(2), "--wait")
    (w,) = wakes(cli)
    assert w["status"] == "failed" and w["error"] == "exit code 3: something broke"
    note = posts(cli)[-1]
    assert note["kind"] == "system"
    assert note["text"] == "@bot's turn ended without a reply: its command exited with status 3."
    assert "note: exit code 3: something broke" in cli("wakes", "show", str(w["id"])).out


def test_an_agents_stderr_is_masked_even_in_the_record(tmp_path):
    script = tmp_path / "leaky.sh"
    script.write_text("cat >/dev/null\necho 'connecting to https://bot:sekrit-pw@api.example/?api_key=sekrit-k' >&2\n"
                      "exit 2\n")
    turn = wakers.TurnRequest(1, "bot", "lobby", "mention", "look", "hi", timeout=60)
    import threading

    out = wakers.CommandWaker(f"sh {script}").run(turn, lambda pgid: None, threading.Event())
    assert out.status == "failed" and out.public == "its command exited with status 2"
    assert "sekrit" not in out.error and "https://***@api.example/?api_key=***" in out.error


# -- credentials in command output ----------------------------------------------------


def test_init_and_config_check_mask_the_database_url(pg_url):
    url = pg_url + "?password=sekrit-q&application_name=mood"
    cli = Cli(url)
    out = cli("init").out
    assert "sekrit" not in out and "password=***&application_name=mood" in out
    checked = cli("config", "check").out + cli("config", "check", "--json").out
    assert "sekrit" not in checked and checked.count("password=***") == 2


@pytest.mark.parametrize("url", [
    "postgresql+psycopg://mood:sekrit-pw@127.0.0.1:9/moods?password=sekrit-q",  # nothing listens
    "postgresql+psycopg://mood@127.0.0.1:9/moods?no_such_option=1&password=sekrit-q",
])
def test_cannot_open_database_errors_mask_the_url(url):
    r = Cli(url).fails("posts", "lobby")
    assert "sekrit" not in r.out + r.err
    assert "cannot open database postgresql+psycopg://mood" in r.err


@pytest.mark.parametrize("url", [
    "postgresql+psycopg://mood:sekrit-pw@127.0.0.1:9/moods?password=sekrit-q",
    "password=sekrit-q",  # not a URL at all
    "nosuchdriver://mood:sekrit-pw@h/db?token=sekrit-q",
])
def test_the_store_never_names_a_password_when_it_cannot_open_a_database(url):
    from poller import errors
    from poller.store import db

    with pytest.raises(errors.StoreError) as caught:
        db.make_engine(url)
    assert "sekrit" not in str(caught.value)


def test_agent_list_masks_urls_and_commands(cli):
    cli("agent", "add", "svc", "--url", "https://bot:sekrit-pw@agent.example/wake?token=sekrit-t")
    cli("agent", "add", "cmd", "--command", "my-agent --api-key=sekrit-k --reply")
    table = cli("agent", "list").out
    listed = json.loads(cli("agent", "list", "--json").out)
    assert "sekrit" not in table + json.dumps(listed)
    assert "https://***@agent.example/wake?token=***" in table
    assert {a["handle"]: a["url"] or a["command"] for a in listed} == {
        "svc": "https://***@agent.example/wake?token=***", "cmd": "my-agent --api-key=*** --reply"}
