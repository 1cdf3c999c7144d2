"""Exit codes a supervisor understands: 78 (EX_CONFIG) for what only an operator can fix,
75 (EX_TEMPFAIL) for what may pass by itself; and ``init`` serialised between machines.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading

import pytest
import sqlalchemy as sa

from support.cli import Cli
from support.machine import REPO
from poller import errors
from poller.store import db
from support.exit_codes import EX_CONFIG, EX_TEMPFAIL, one_line
from support.exit_codes import closed_port  # noqa: F401  (fixtures)

# -- a database that cannot be reached is temporary -------------------------------------------

@pytest.mark.parametrize("args", [("posts", "lobby"), ("tick",), ("init",), ("mood", "list")])
def test_an_unreachable_postgresql_exits_75(closed_port, args):
    url = f"postgresql+psycopg://mood:hunter2@127.0.0.1:{closed_port}/moods"
    r = Cli(url).fails(*args)
    line = one_line(r)
    assert r.code == EX_TEMPFAIL, r.err
    assert "cannot open database postgresql+psycopg://mood:***@127.0.0.1" in line
    assert "refused" in line.lower() and "hunter2" not in line


def test_make_engine_raises_store_unavailable_for_a_refused_connection(closed_port):
    with pytest.raises(errors.StoreUnavailable) as caught:
        db.make_engine(f"postgresql://mood@127.0.0.1:{closed_port}/moods")
    assert caught.value.exit_code == EX_TEMPFAIL
    assert isinstance(caught.value, errors.StoreError)


# -- what only an operator can fix stays 78 -----------------------------------------------------

def test_a_missing_postgresql_database_exits_78(pg_url):
    missing = pg_url.rsplit("/", 1)[0] + "/no_such_database"
    r = Cli(missing).fails("posts", "lobby")
    assert r.code == EX_CONFIG
    assert 'database "no_such_database" does not exist' in one_line(r)


def test_postgresql_without_psycopg_says_which_extra_to_install(monkeypatch, closed_port):
    for name in [n for n in sys.modules if n == "psycopg" or n.startswith("psycopg.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` fails
    r = Cli(f"postgresql://mood:hunter2@127.0.0.1:{closed_port}/moods").fails("posts", "lobby")
    assert r.code == EX_CONFIG
    line = one_line(r)
    assert "cannot open database postgresql://mood:***@" in line
    assert "pip install 'mood-poller[postgres]'" in line


# -- init takes a migration lock -----------------------------------------------------------------

CHILD = """
import sys, time
from pathlib import Path
import poller.cli, poller.store.db, poller.models, alembic.command, sqlalchemy  # imported now
go = Path(sys.argv[1])
print("ready", flush=True)
while not go.exists():
    time.sleep(0.002)
poller.cli.main(["--db", sys.argv[2], "init"])
"""


def concurrent_inits(url: str, tmp_path, n: int = 3) -> list[subprocess.CompletedProcess]:
    """*n* ``init`` processes on *url*, released together once all have imported everything."""
    go = tmp_path / "go"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOOD_")}
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(go), url], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(n)]
    try:
        for p in procs:
            assert p.stdout.readline().strip() == "ready"
        go.touch()
        results = []
        for p in procs:
            out, err = p.communicate(timeout=180)
            results.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
        return results
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def assert_schema_at_head(url: str) -> None:
    from poller import models

    engine = sa.create_engine(url)
    try:
        assert db.stamped_revisions(engine) == [db.head_revision()]
        tables = set(sa.inspect(engine).get_table_names())
        assert set(models.Base.metadata.tables) <= tables
    finally:
        engine.dispose()
    Cli(url)("mood", "add", "lobby")  # and the schema works
    assert "lobby" in Cli(url)("mood", "list").out


def test_concurrent_inits_on_one_fresh_postgresql_database_all_succeed(pg_url, tmp_path):
    results = concurrent_inits(pg_url, tmp_path)
    for r in results:
        assert r.returncode == 0, r.stderr
    outs = sorted(r.stdout.strip() for r in results)
    head = db.head_revision()
    # Exactly one of them migrated; the others found the schema already at the newest.
    assert sum(out.startswith(f"schema empty -> {head}") for out in outs) == 1, outs
    assert sum(out.startswith(f"schema already at {head}") for out in outs) == len(outs) - 1
    assert_schema_at_head(pg_url)


def test_concurrent_inits_on_one_fresh_sqlite_file_all_succeed(tmp_path):
    url = f"sqlite:///{tmp_path / 'moods.db'}"
    results = concurrent_inits(url, tmp_path)
    for r in results:
        assert r.returncode == 0, r.stderr
    assert sum("schema empty ->" in r.stdout for r in results) == 1
    assert_schema_at_head(url)
    assert oct((tmp_path / "moods.db.init.lock").stat().st_mode & 0o777) == "0o600"


def test_init_waits_for_the_postgresql_migration_lock(pg_url, monkeypatch):
    holder = sa.create_engine(pg_url)
    with holder.connect() as conn:
        conn.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": db.MIGRATION_LOCK_KEY})
        conn.commit()
        done = threading.Event()
        result = {}

        def init():
            result["r"] = Cli(pg_url)("init", ok=False)
            done.set()

        worker = threading.Thread(target=init)
        worker.start()
        try:
            assert not done.wait(1.0), result  # it waits while another init holds the lock
            assert db.stamped_revisions(holder) == []
        finally:
            conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": db.MIGRATION_LOCK_KEY})
            conn.commit()
        worker.join(120)
    holder.dispose()
    assert result["r"].code == 0, result["r"].err
    assert db.head_revision() in result["r"].out


def test_init_gives_up_on_a_held_postgresql_lock_with_exit_75(pg_url, monkeypatch):
    monkeypatch.setattr(db, "MIGRATION_LOCK_WAIT_S", 0.3)
    holder = sa.create_engine(pg_url)
    with holder.connect() as conn:
        conn.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": db.MIGRATION_LOCK_KEY})
        conn.commit()
        r = Cli(pg_url).fails("init")
    holder.dispose()
    assert r.code == EX_TEMPFAIL
    assert "another `mood-poller init` is migrating" in one_line(r)
    Cli(pg_url)("init")  # the lock left with its holder's session


def test_init_gives_up_on_a_held_sqlite_lock_with_exit_75(tmp_path, monkeypatch):
    monkeypatch.setattr(db, "MIGRATION_LOCK_WAIT_S", 0.3)
    url = f"sqlite:///{tmp_path / 'moods.db'}"
    with open(tmp_path / "moods.db.init.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        r = Cli(url).fails("init")
    assert r.code == EX_TEMPFAIL
    assert "another `mood-poller init` is migrating" in one_line(r)
    assert "schema empty ->" in Cli(url)("init").out


# -- processes opening one fresh SQLite file together -------------------------------------------

OPENER = """
import sys, time
from pathlib import Path
from poller.store import db
go = Path(sys.argv[1])
print("ready", flush=True)
while not go.exists():
    time.sleep(0.001)
db.make_engine(sys.argv[2]).dispose()
print("opened", flush=True)
"""


def test_processes_opening_one_fresh_sqlite_file_together_all_open_it(tmp_path):
    # Switching a fresh file to WAL from several connections at once is a lock
    # deadlock SQLite settles by failing one of them at once, without waiting.
    # Each round races four openers of a new file; none may fail.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOOD_")}
    for round_ in range(12):
        go = tmp_path / f"go{round_}"
        url = f"sqlite:///{tmp_path / f'r{round_}.db'}"
        procs = [subprocess.Popen([sys.executable, "-c", OPENER, str(go), url], cwd=REPO, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(4)]
        for p in procs:
            assert p.stdout.readline().strip() == "ready"
        go.touch()
        for p in procs:
            out, err = p.communicate(timeout=180)
            assert p.returncode == 0 and out.strip() == "opened", err


def test_no_postgresql_statement_waits_for_a_lock_forever(pg_url):
    engine = db.make_engine(pg_url)
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SHOW lock_timeout").scalar() == "1min"
    finally:
        engine.dispose()
