"""Exit codes a supervisor understands: 78 (EX_CONFIG) for what only an operator can fix,
75 (EX_TEMPFAIL) for what may pass by itself; and ``init`` serialised between machines.

Here, the pure part (no database, no process); the rest sits under the same name
in the other layers.
"""

from __future__ import annotations

import sqlite3

import pytest

from support.cli import Cli
from poller import errors
from poller.store import db
from support.exit_codes import EX_CONFIG, one_line

# -- a database that cannot be reached is temporary -------------------------------------------

@pytest.mark.parametrize("reason, temporary", [
    ('connection failed: connection to server at "127.0.0.1", port 5432 failed: '
     "Connection refused", True),
    ("connection failed: connection timeout expired", True),
    ("failed to resolve host 'db.example.org': [Errno -3] Temporary failure in name resolution",
     True),
    ("failed to resolve host 'db.example.org': [Errno -2] Name or service not known", True),
    ('connection to server on socket "/run/postgresql/.s.PGSQL.5432" failed: '
     "No such file or directory", True),
    ("connection failed: FATAL:  the database system is starting up", True),
    ("connection failed: FATAL:  sorry, too many clients already", True),
    ('connection failed: FATAL:  database "moods" does not exist', False),
    ('connection failed: FATAL:  password authentication failed for user "mood"', False),
    ("connection failed: fe_sendauth: no password supplied", False),
])
def test_which_connection_failures_are_temporary(reason, temporary):
    assert db.connection_is_temporary(reason) is temporary


# -- what only an operator can fix stays 78 -----------------------------------------------------

@pytest.mark.parametrize("args", [("posts", "lobby"), ("tick",), ("init",)])
def test_a_malformed_config_exits_78(tmp_path, args):
    path = tmp_path / "config.toml"
    path.write_text("[poller\ninterval = 1\n")
    r = Cli(config=str(path)).fails(*args)
    assert r.code == EX_CONFIG
    assert "not valid TOML" in one_line(r)


@pytest.mark.parametrize("url", [
    "postgresql+psycopg://mood:hunter2@127.0.0.1:notaport/moods",
    "postgresql+psycopg://mood:hunter2@[::1:5432/moods",
])
def test_make_engine_turns_a_malformed_url_into_one_store_error(url):
    with pytest.raises(errors.StoreError) as caught:
        db.make_engine(url)
    assert type(caught.value) is errors.StoreError and caught.value.exit_code == EX_CONFIG
    assert str(caught.value).startswith("invalid database URL ")
    assert "hunter2" not in str(caught.value) and "\n" not in str(caught.value)


# -- processes opening one fresh SQLite file together -------------------------------------------

class LockedTwice:
    """A cursor whose first two WAL switches meet the deadlock."""

    def __init__(self, message: str = "database is locked"):
        self.calls, self.message = 0, message

    def execute(self, sql):
        self.calls += 1
        if self.calls <= 2:
            raise sqlite3.OperationalError(self.message)


def test_entering_wal_retries_a_locked_switch():
    cur = LockedTwice()
    db._enter_wal(cur)
    assert cur.calls == 3


def test_entering_wal_gives_up_at_its_deadline_and_passes_other_errors_at_once():
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        db._enter_wal(LockedTwice(), deadline_s=0)
    other = LockedTwice("disk I/O error")
    with pytest.raises(sqlite3.OperationalError, match="disk"):
        db._enter_wal(other)
    assert other.calls == 1
