"""Bad input from outside: one line on stderr naming the problem, a non-zero exit,
no traceback, and the database exactly as it was.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading

import pytest
import sqlalchemy as sa

from support.cli import Cli
from support.machine import REPO

BIG = str(2**63)  # one past the largest id a database column holds
NOW = "2026-03-02T10:00:00Z"


def dump(db_url: str) -> dict[str, list[tuple]]:
    """Every row of every table, for comparing a database before and after."""
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            out = {}
            for table in sorted(sa.inspect(conn).get_table_names()):
                rows = conn.exec_driver_sql(f'SELECT * FROM "{table}"').all()
                out[table] = sorted((tuple(r) for r in rows), key=repr)
            return out
    finally:
        engine.dispose()


def world(cli: Cli) -> Cli:
    cli("mood", "add", "lobby", "--title", "The lobby", "--now", NOW)
    cli("person", "add", "ada", "--trust", "full", "--now", NOW)
    cli("agent", "add", "helper", "--command", "cat", "--now", NOW)
    cli("post", "lobby", "--as", "ada", "--at", NOW, "a first post")
    return cli


def refused(cli: Cli, *args, message: str, code: int | None = None, input=None,
            dump_url: str | None = None):
    """Run a bad command: one clear line, the exit code, nothing written."""
    dump_url = dump_url or cli.db_url
    before = dump(dump_url)
    r = cli.fails(*args, input=input)
    assert "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert message in r.err, r.err
    if code is not None:
        assert r.code == code, r.err
    assert dump(dump_url) == before
    return r


# -- times ------------------------------------------------------------------------------------

FAR = ["9999-12-31T23:59:00Z", "0001-01-01T00:00:00+01:00", "1969-12-31T23:59:59Z",
       "2201-01-01T00:00:00Z", "2200-12-31T23:00:00-05:00"]


@pytest.mark.parametrize("when", FAR)
def test_times_outside_1970_to_2200_are_refused_everywhere(cli, when):
    world(cli)
    for args, what in [
        (("post", "lobby", "--as", "ada", "--at", when, "hi"), "--at"),
        (("--now", when, "post", "lobby", "--as", "ada", "hi"), "--now"),
        (("post", "lobby", "--as", "ada", "--now", when, "hi"), "--now"),
        (("signin", "ada", "--mood", "lobby", "--at", when), "--at"),
        (("set", "listening", "off", "--until", when), "--until"),
        (("tick", "--now", when), "--now"),
        (("run", "--now", when), "--now"),
        (("--now", when, "run"), "--now"),  # refused before the loop says it runs
        (("scram", "--now", when), "--now"),
        (("mood", "add", "other", "--now", when), "--now"),
    ]:
        r = refused(cli, *args, message=f"{what} {when!r} is out of range", code=1)
        assert "1970 to 2200" in r.err


def test_the_edges_of_the_window_are_accepted(cli):
    world(cli)
    cli("post", "lobby", "--as", "ada", "--at", "1970-01-01T00:00:00Z", "the first moment")
    listening = cli("set", "listening", "off", "--until", "2200-12-31T23:59:59Z", "--now", NOW)
    tick = cli("tick", "--now", "2200-12-31T23:59:59Z")  # the loop adds its cooldowns without overflowing
    posts = json.loads(cli("posts", "lobby", "--json").out)
    assert [p["created_at"] for p in posts if p["text"] == "the first moment"] == ["1970-01-01T00:00:00Z"]
    assert "until 2200-12-31 23:59 UTC" in listening.out
    assert tick.code == 0 and "Traceback" not in tick.err


# -- whole numbers ----------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ("post", "lobby", "--as", "ada", "--reply-to", BIG, "hi"),
    ("post", "lobby", "--as", "ada", "--reply-to", "-1", "hi"),
    ("post", "lobby", "--as", "ada", "--reply-to", "0", "hi"),
    ("posts", "lobby", "--limit", BIG),
    ("posts", "lobby", "--limit", "-5"),
    ("wakes", "--limit", BIG),
    ("wakes", "show", BIG),
    ("wakes", "show", "--", "-3"),
    ("wakes", "show", "1e3"),
    ("wakes", "show", "²"),
    ("alarm", "remove", "9" * 23),
    ("alarm", "remove", "١"),
    ("outbox", "retry", "9" * 23),
], ids=lambda a: " ".join(a)[:40])
def test_ids_and_limits_are_whole_numbers_from_1_to_2_to_the_63_minus_1(cli, args):
    world(cli)
    refused(cli, *args, message="Invalid value", code=2)


def test_the_largest_id_is_a_clean_not_found(cli):
    world(cli)
    refused(cli, "post", "lobby", "--as", "ada", "--reply-to", str(2**63 - 1), "hi",
            message=f"no post {2**63 - 1}")
    cli("posts", "lobby", "--limit", str(2**63 - 1))


def test_a_line_break_in_what_was_given_stays_inside_the_one_line(cli):
    r = refused(cli, "config", "check", "--config=nowhere\r\n.toml", message="nowhere")
    assert "\\x0a" in r.err


# -- invalid UTF-8 on the command line ----------------------------------------------------------

@pytest.mark.parametrize("args,what", [
    (("post", "lobby", "--as", "ada", "caf\udce9"), "TEXT"),
    (("post", "lobby", "--as", "ad\udcff", "hi"), "--as"),
    (("mood", "add", "kitchen", "--title", "\udcff\udcfe"), "--title"),
    (("signin", "ada", "--mood", "lobby", "--label", "lap\udcfftop"), "--label"),
    (("set", "discretion", "chatty", "--note", "\udc80"), "--note"),
    (("agent", "add", "bot", "--command", "echo \udcff"), "--command"),
    (("--now", "2026\udcff", "posts", "lobby"), "--now"),
])
def test_invalid_utf8_in_argv_names_the_argument(cli, args, what):
    world(cli)
    refused(cli, *args, message=f"invalid UTF-8 in {what}", code=1)


def test_invalid_utf8_in_a_real_argv(sqlite_url):
    Cli(sqlite_url)("init")
    world(Cli(sqlite_url))
    before = dump(sqlite_url)
    for extra in ([b"post", b"lobby", b"--as", b"ada", b"\xff\xfe bad"],
                  [b"mood", b"add", b"x", b"--title", b"\xc3("]):
        r = subprocess.run([sys.executable.encode(), b"-m", b"poller", b"--db",
                            sqlite_url.encode(), *extra], capture_output=True, cwd=REPO,
                           timeout=60)
        err = r.stderr.decode("utf-8", "replace")
        assert r.returncode == 1 and "invalid UTF-8 in" in err and "Traceback" not in err, err
    assert dump(sqlite_url) == before


def test_nul_in_argv_is_refused(cli):
    world(cli)
    refused(cli, "mood", "add", "kitchen", "--title", "a\x00b", message="NUL character in --title")


# -- non-finite and huge seconds ----------------------------------------------------------------

@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "1e300", "0", "-1"])
def test_agent_timeouts_must_be_finite_and_positive(cli, value):
    world(cli)
    refused(cli, "agent", "add", "bot", "--command", "cat", "--timeout", value, message="timeout")


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e300", "0", "-2", "soon"])
def test_run_interval_must_be_finite_and_positive(cli, value):
    world(cli)
    refused(cli, "run", "--interval", value, message="--interval", code=2)


# -- the database ------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ("post", "lobby", "--as", "ada", "hi"),
    ("set", "discretion", "chatty", "--mood", "lobby"),
    ("mood", "add", "kitchen"),
    ("signin", "ada", "--mood", "lobby"),
])
def test_a_read_only_database_is_named(cli, tmp_path, args):
    world(cli)
    path = tmp_path / "moods.db"
    ro = Cli(f"sqlite:///file:{path}?mode=ro&uri=true")
    refused(ro, *args, message=f"database is read-only: {path}", code=78, dump_url=cli.db_url)


def test_a_read_only_postgresql_database_is_one_line(pg_url):
    cli = Cli(pg_url)
    cli("init")
    world(cli)
    engine = sa.create_engine(pg_url)
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
            f'ALTER DATABASE "{sa.engine.make_url(pg_url).database}" '
            "SET default_transaction_read_only = on")
    engine.dispose()
    for args in (("post", "lobby", "--as", "ada", "hi"), ("set", "discretion", "chatty")):
        refused(cli, *args, message="database is read-only: postgresql", code=78)


@pytest.mark.parametrize("url", [
    "postgresql://u:hunter2@[::1:5432/db",
    "postgresql+psycopg://u:hunter2@[::1]:99999/db",
    "postgresql://[::1]:port/db",
])
def test_a_malformed_database_url_is_one_line(url):
    r = Cli(url).fails("mood", "list")
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert "database" in r.err.lower() and "hunter2" not in r.err
    assert r.code == 78


def test_a_held_write_lock_waits_then_says_busy_with_exit_75(cli, monkeypatch):
    from poller.store import db

    world(cli)
    monkeypatch.setattr(db, "SQLITE_BUSY_TIMEOUT_MS", 300)
    path = cli.db_url.removeprefix("sqlite:///")
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    try:
        before = json.loads(cli("posts", "lobby", "--json").out)  # readers are not blocked
        r = cli.fails("post", "lobby", "--as", "ada", "hi")
        assert r.code == 75 and r.err.strip() == "mood-poller: database busy, try again"
        r = cli.fails("set", "discretion", "chatty")
        assert r.code == 75 and len(r.err.strip().splitlines()) == 1
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert json.loads(cli("posts", "lobby", "--json").out) == before


def test_a_write_lock_released_within_the_busy_timeout_is_waited_for(cli, monkeypatch):
    from poller.store import db

    world(cli)
    monkeypatch.setattr(db, "SQLITE_BUSY_TIMEOUT_MS", 5_000)
    holder = sqlite3.connect(cli.db_url.removeprefix("sqlite:///"), isolation_level=None,
                             check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    timer = threading.Timer(0.5, lambda: holder.execute("ROLLBACK"))
    timer.start()
    try:
        assert cli("post", "lobby", "--as", "ada", "hi").out.strip().isdigit()
    finally:
        timer.join()
        holder.close()


def test_other_database_errors_are_one_line(cli):
    world(cli)
    engine = sa.create_engine(cli.db_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE mentions")
    engine.dispose()
    before = dump(cli.db_url)
    r = cli.fails("post", "lobby", "--as", "ada", "hi @helper")
    assert r.err.strip() == "mood-poller: database error: no such table: mentions"
    assert r.code == 78
    assert dump(cli.db_url) == before


def test_a_failed_dials_refresh_says_why_on_stderr(cli):
    r = cli.fails("dials", "--refresh")
    assert r.code == 1 and "source:" in r.out
    assert r.err.strip() == ("mood-poller: the dials page could not be refreshed: "
                             "no wiki configured (wiki.site is empty)")


# -- preview of a mention once it has been answered ---------------------------------------------

def test_preview_of_the_quick_start_mention(cli, monkeypatch):
    """The README's Quick start, then a preview of the mention (answered or not)."""
    monkeypatch.setenv("MOOD_POLLER_LAUNCH", "thread")
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "helper", "--command", "cat")
    cli("post", "lobby", "--as", "ada", "hello @helper")
    cli("tick", "--wait")
    out = cli("preview", "--mood", "lobby", "--agent", "helper", "--kind", "mention").out
    assert out.startswith('<mood-wake mood="lobby" reason="mention">')
    assert "hello @helper" in out


def test_preview_of_a_mention_already_answered(cli, monkeypatch):
    monkeypatch.setenv("MOOD_POLLER_LAUNCH", "thread")
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "helper", "--command", "echo on it")
    cli("tick", "--now", "2026-03-02T10:00:00Z")
    cli("post", "lobby", "--as", "ada", "--at", "2026-03-02T10:00:01Z", "hello @helper")
    cli("tick", "--wait", "--now", "2026-03-02T10:00:02Z")
    posts = json.loads(cli("posts", "lobby", "--json").out)
    assert [(p["sender"], p["text"].strip()) for p in posts] == [
        ("ada", "hello @helper"), ("helper", "on it")]
    before = dump(cli.db_url)
    out = cli("preview", "--mood", "lobby", "--agent", "helper", "--kind", "mention",
              "--now", "2026-03-02T10:05:00Z").out
    assert out.startswith('<mood-wake mood="lobby" reason="mention">')
    assert "hello @helper" in out
    assert dump(cli.db_url) == before  # a preview writes nothing
