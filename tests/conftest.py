"""Shared fixtures, for every layer (unit, integration, e2e): an isolated
environment per test, a real PostgreSQL per session, a database URL per test
(SQLite and PostgreSQL), and a CLI runner.  What they are built from lives in
support/."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # support/ as the package ``support``

from support import pg  # noqa: E402
from support.cli import Cli  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def declared_kinds():
    """Every kind of wake declared, as a poller declares them when it starts."""
    from poller.cycle import organs

    organs.load()


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch):
    """Every path and env var the service reads points into tmp_path."""
    for name in list(os.environ):
        if name.startswith("MOOD_POLLER_") or name.startswith("MOOD_"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    # Agent turns run sandboxed (bubblewrap, which scripts/test.sh installs), the filesystem
    # read-only; the stand-in agents keep their logs and queues in the test's directory, so
    # it is writable in every turn, as an operator makes a log directory writable.  The
    # database inside it stays hidden from them.  The sandbox's own tests set their own.
    monkeypatch.setenv("MOOD_POLLER_SANDBOX_WRITABLE", str(tmp_path))
    import logging

    loggers = [logging.getLogger(name) for name in ("", "poller", "wiki_rules")]
    saved = [(lg.handlers[:], lg.level, lg.propagate) for lg in loggers]
    yield
    # `tick`/`run` configure the process's logging for a terminal; undo that so
    # pytest's log capture keeps seeing records in later tests.
    for lg, (handlers, level, propagate) in zip(loggers, saved):
        lg.handlers[:], lg.level, lg.propagate = handlers, level, propagate


@pytest.fixture(scope="session")
def pg_server():
    if pg.find_bindir() is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL binaries are missing in CI: .ci/run must install them")
        pytest.skip("no PostgreSQL binaries under /usr/lib/postgresql (apt-get install postgresql)")
    server = pg.start()
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server):
    return pg_server.new_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    """A fresh, empty database of each kind."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'moods.db'}"
    return request.getfixturevalue("pg_url")


@pytest.fixture
def sqlite_url(tmp_path):
    return f"sqlite:///{tmp_path / 'moods.db'}"


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory):
    """One SQLite file brought to the newest schema by a real `mood-poller init`.

    Tests that need an initialised store start from a copy of it: `init` runs
    every migration, and doing that once per test would be most of the suite.
    (`init` itself, and the migrations, have tests of their own.)
    """
    path = tmp_path_factory.mktemp("template") / "moods.db"
    Cli(f"sqlite:///{path}")("init")
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0
    return path


@pytest.fixture(scope="session")
def migrated_pg(pg_server):
    """A PostgreSQL database at the newest schema (by `init`), to copy as a template."""
    url = pg_server.new_database()
    Cli(url)("init")
    return url.rsplit("/", 1)[1]


def _initialised(url: str, request) -> "Cli":
    if url.startswith("sqlite:///"):
        target = Path(url.removeprefix("sqlite:///"))
        shutil.copyfile(request.getfixturevalue("migrated_sqlite"), target)
        target.chmod(0o600)
    return Cli(url)


@pytest.fixture
def cli(sqlite_url, request):
    """A CLI bound to a fresh, initialised SQLite database."""
    return _initialised(sqlite_url, request)


@pytest.fixture(params=["sqlite", "postgresql"])
def any_cli(request, tmp_path):
    """A CLI bound to a fresh, initialised database of each kind."""
    if request.param == "sqlite":
        return _initialised(f"sqlite:///{tmp_path / 'moods.db'}", request)
    server = request.getfixturevalue("pg_server")
    return Cli(server.new_database(template=request.getfixturevalue("migrated_pg")))
