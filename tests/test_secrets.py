"""Agents cannot reach the poller's secrets, and no output shows a credential.

The attacks are real: a real ``tick`` starts a real agent, a shell script
that tries every route to a secret it can think of (its own environment,
``/proc/<pid>/environ`` and the open files of each ancestor, the files it
inherited, the database file) and posts what it found as its reply.  Root
can read any process's environment, so the agent that runs as the poller's
own user runs as a throwaway non-root user, poller and all; the ``--run-as``
agent runs as the throwaway user under a root poller.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import pwd
import random
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from support.agents import agent_command
from support import users
from support.cli import Cli
from support.machine import REPO, unavailable
from poller import secure
from poller.turns import wakers

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


# -- a throwaway Unix user and a way to run the poller as it -----------------------------


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


def python_as(user: pwd.struct_passwd, shared: Path) -> list[str]:
    """The argv prefix that runs this test's Python (and the project) as *user*."""
    prefix, python = users.python_as(user, shared)
    return prefix + python


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


def first_ancestor(reply: str) -> str:
    """What the probe found at its parent (the runner, or the poller itself)."""
    return next(s for s in sections(reply) if s.startswith("== ancestor "))


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
    # Its parent (a runner, or the poller itself when turns run as threads) and the
    # poller are this same user; neither lets it read its environment or open files.
    first = first_ancestor(reply)
    assert re.search(r"unreadable: /proc/\d+/environ", first), first
    assert re.search(r"unreadable: /proc/\d+/fd", first), first
    assert every_ancestor_environ_unreadable(reply)
    assert not [line for line in inherited(reply) if "moods.db" in line or "socket:" in line]


def test_an_agent_run_as_another_user_reads_no_secret_nor_the_database(throwaway_user, shared):
    user = throwaway_user
    probe = write_probe(shared)
    db = shared / "moods.db"  # in a directory anyone may enter: only the file's mode guards it
    url = f"sqlite:///{db}"
    cli = Cli(url)
    lobby(cli, probe, db, "--run-as", user.pw_name)
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    cli("agent", "add", "svc", "--url", "http://127.0.0.1:9/wake",
        "--header", f"Authorization: Bearer {HEADER_SECRET}")
    listed = cli("agent", "list").out
    assert f"(as {user.pw_name})" in listed and HEADER_SECRET not in listed

    run_tick([sys.executable], poller_env(url), REPO, 2)

    reply = probe_reply(cli)
    assert leaked(reply) == [], reply
    assert f"== uid {user.pw_uid}" in reply
    assert f"HOME={user.pw_dir}" in reply and f"USER={user.pw_name}" in reply
    assert f"== unreadable: {db}" in reply
    assert every_ancestor_environ_unreadable(reply)
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
    wake_vars = {"MOOD_WAKE_ID", "MOOD_AGENT", "MOOD_SLUG", "MOOD_WAKE_KIND", "MOOD_TOOLS"}
    assert set(seen) - {"PWD", "SHLVL", "_"} == set(passed) | wake_vars  # the shell adds those
    assert {k: seen[k] for k in passed} == passed
    assert seen["MOOD_WAKE_ID"] == str(wakes(c)[0]["id"]) and seen["MOOD_AGENT"] == "bot"
    assert not set(refused) - {"MOOD_WAKE_ID"} & set(seen)
    assert "sekrit" not in json.dumps(seen)


def test_the_allowlist_names_every_standard_locale_and_xdg_base_directory():
    turn = wakers.Turn(1, "bot", "lobby", "mention", "look", "hi")
    env = {"LC_MEASUREMENT": "C", "LC_PAPER": "C", "LC_SECRET_TOKEN": "x", "XDG_STATE_HOME": "/s",
           "XDG_CACHE_HOME": "/c", "XDG_SECRET": "x", "SHELL": "/bin/sh", "TERM": "dumb"}
    old = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)
        got = wakers.turn_env(turn)
        other = wakers.turn_env(turn, wakers.RunAs("agent", 1234, 1234, "/home/agent"))
    finally:
        os.environ.clear()
        os.environ.update(old)
    assert set(got) == {"LC_MEASUREMENT", "LC_PAPER", "XDG_STATE_HOME", "XDG_CACHE_HOME",
                        "MOOD_WAKE_ID", "MOOD_AGENT", "MOOD_SLUG", "MOOD_WAKE_KIND", "MOOD_TOOLS"}
    # Run as another user: its own HOME, USER and LOGNAME, none of the poller's own directories.
    assert other["HOME"] == "/home/agent" and other["USER"] == other["LOGNAME"] == "agent"
    assert "XDG_STATE_HOME" not in other and "XDG_CACHE_HOME" not in other


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
    turn = wakers.Turn(1, "bot", "lobby", "mention", "look", "hi", timeout=60)
    import threading

    out = wakers.CommandWaker(f"sh {script}").run(turn, lambda pgid: None, threading.Event())
    assert out.status == "failed" and out.public == "its command exited with status 2"
    assert "sekrit" not in out.error and "https://***@api.example/?api_key=***" in out.error


# -- credentials in command output ----------------------------------------------------


@pytest.mark.parametrize("url, shown", [
    ("postgresql+psycopg://mood:sekrit-pw@db.example.org/moods",
     "postgresql+psycopg://mood:***@db.example.org/moods"),
    ("postgresql+psycopg://mood@db/moods?password=sekrit-pw&sslmode=require",
     "postgresql+psycopg://mood@db/moods?password=***&sslmode=require"),
    ("postgresql://mood@db/moods?sslPassWord=sekrit-pw&AUTH_token=sekrit-t&application_name=x",
     "postgresql://mood@db/moods?sslPassWord=***&AUTH_token=***&application_name=x"),
    ("postgresql://mood:a/b?c@sekrit@db/moods", "postgresql://mood:***@db/moods"),
    ("https://bot:sekrit-pw@agent.example/wake?key=sekrit-k#access_token=sekrit-t",
     "https://***@agent.example/wake?key=***#access_token=***"),
    ("https://ghp_sekrit@agent.example/wake", "https://***@agent.example/wake"),
    ("https://agent.example/users/@bob?page=2", "https://agent.example/users/@bob?page=2"),
    ("sqlite:////var/lib/mood-poller/moods.db", "sqlite:////var/lib/mood-poller/moods.db"),
])
def test_mask_url(url, shown):
    assert secure.mask_url(url) == shown


def test_mask_text():
    text = ("connect failed: host=db password=sekrit-pw port=5432; Authorization: Bearer sekrit-t\n"
            "see postgresql://u:sekrit-pw@h/d and --api-key=sekrit-k")
    masked = secure.mask_text(text)
    assert "sekrit" not in masked
    assert "host=db password=*** port=5432" in masked and "postgresql://u:***@h/d" in masked


def test_init_and_config_check_mask_the_database_url(pg_url):
    url = pg_url + "?password=sekrit-q&application_name=mood"
    cli = Cli(url)
    out = cli("init").out
    assert "sekrit" not in out and "password=***&application_name=mood" in out
    checked = cli("config", "check").out + cli("config", "check", "--json").out
    assert "sekrit" not in checked and checked.count("password=***") == 2


def test_config_check_masks_every_url(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[summarizer]\nkind = "llm"\nmodel = "m"\n'
                      'url = "http://u:sekrit-s@127.0.0.1:9/v1?api_key=sekrit-k"\n')
    cli = Cli("postgresql+psycopg://mood:sekrit-pw@127.0.0.1:9/moods?sslpassword=sekrit-q",
              str(config))
    out = cli("config", "check").out
    resolved = json.loads(cli("config", "check", "--json").out)
    assert "sekrit" not in out + json.dumps(resolved)
    assert resolved["database"]["url"] == "postgresql+psycopg://mood:***@127.0.0.1:9/moods?sslpassword=***"
    assert resolved["summarizer"]["url"] == "http://***@127.0.0.1:9/v1?api_key=***"


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
