"""Opening the database and bringing its schema to the newest migration.

SQLite (the embedded default) runs in WAL mode with a busy timeout so the
CLI and a running poller can share one file.  PostgreSQL URLs use psycopg 3
(``postgresql+psycopg://``).  Driver errors become ``StoreError`` here.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import re
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url

from poller import errors
from poller.secure import mask_text, mask_url

SQLITE_BUSY_TIMEOUT_MS = 30_000  # longer than any one write the loop makes, LLM summary included
# No statement waits longer than this for a lock (PostgreSQL): a wait the deadlock
# detector cannot see (the holder idle in its transaction) becomes an error the
# loop retries, instead of a poller that no longer cycles or stops.
PG_LOCK_TIMEOUT_MS = 60_000
# A pooled PostgreSQL connection unused for this long is pinged before it is handed out
# (servers and firewalls drop idle connections); one used more recently is not.
PING_AFTER_IDLE_S = 5.0
MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"
VERSION_TABLE = "alembic_version"  # Alembic's default, where it records the schema's revision


def transient_errors() -> tuple[type[Exception], ...]:
    """Database errors that say nothing about the data (a lost race, a busy file, a
    server that is down): what failed on one may succeed when tried again."""
    return (sa.exc.OperationalError, sa.exc.InterfaceError)


# Spellings of PostgreSQL that SQLAlchemy has no dialect for (Heroku's and libpq's own).
POSTGRES_MISSPELLINGS = ("postgres", "pgsql", "pg")


def safe_url(url: str) -> str:
    """The URL with its password and credential-like parameters masked, for messages."""
    return mask_url(url)


def make_engine(url: str, *, create: bool = True) -> Engine:
    """An engine for *url*, its first connection made; a SQLite file that is not there is
    made only with *create* (else StoreError, exit 78, saying to run `mood-poller init`).

    Raises :class:`errors.StoreUnavailable` (exit 75: try again) when a database
    server cannot be reached, and :class:`errors.StoreError` (exit 78) for what
    only the operator can fix: a malformed URL, a missing driver, a database or
    role that does not exist, refused credentials, a SQLite file that cannot be
    opened.
    """
    try:
        parsed = make_url(url)
    except (sa.exc.ArgumentError, ValueError, TypeError):
        raise errors.StoreError(f"invalid database URL {safe_url(url)!r}") from None
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    where = safe_url(url)
    if parsed.drivername.split("+")[0] in POSTGRES_MISSPELLINGS:
        raise errors.StoreError(f"cannot open database {where}: write a PostgreSQL URL as "
                                "postgresql+psycopg://USER@HOST/DB (SQLAlchemy does not know "
                                f"{parsed.drivername}://)")
    if parsed.get_backend_name() == "sqlite":
        engine = _sqlite_engine(parsed, create)
    else:
        try:
            engine = sa.create_engine(parsed,
                                      connect_args={"connect_timeout": 10,
                                                    "options": f"-c lock_timeout={PG_LOCK_TIMEOUT_MS}"})
        except Exception as exc:  # missing driver, bad options
            reason = _missing_driver(parsed, exc) or _first_line(exc)
            raise errors.StoreError(f"cannot open database {where}: {mask_text(reason)}") from None
        ping_when_idle(engine)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except Exception as exc:
        engine.dispose()
        reason = _first_line(getattr(exc, "orig", None) or exc)
        message = f"cannot open database {where}: {mask_text(reason)}"
        if (parsed.get_backend_name() != "sqlite" and isinstance(exc, sa.exc.OperationalError)
                and connection_is_temporary(reason)):
            raise errors.StoreUnavailable(message) from None
        raise errors.StoreError(message) from None
    return engine


def ping_when_idle(engine: Engine) -> None:
    """Make *engine*'s pool ping a server connection before handing it out only if it
    has lain unused for :data:`PING_AFTER_IDLE_S` or more, and replace it if the ping
    fails.

    A connection that was in use a moment ago is handed out as it is: a busy door
    asks nothing of the server but its own statements (a ping at every checkout was
    a round trip per request).  A connection the server dropped while it was in use
    fails that use, and SQLAlchemy then replaces every connection of the pool made
    before the failure, so the next use reconnects.
    """

    @event.listens_for(engine, "checkin")
    def _idle_from(_dbapi_conn, record) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _ping_if_idle(dbapi_conn, record, _proxy) -> None:
        since = record.info.get("idle_since")
        if since is None or time.monotonic() - since < PING_AFTER_IDLE_S:
            return
        try:
            engine.dialect.do_ping(dbapi_conn)
        except Exception as exc:
            raise sa.exc.DisconnectionError(_first_line(exc)) from exc  # the pool reconnects


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


# A server-side refusal at connect time ("FATAL:  database ... does not exist",
# a failed password) needs the operator; these pass by themselves.
_TEMPORARY_REFUSALS = ("the database system is starting up", "the database system is shutting down",
                       "the database system is in recovery mode", "the database system is not yet "
                       "accepting connections", "the database system is not accepting connections",
                       "too many clients", "connection slots are reserved",
                       "terminating connection due to administrator command")
# The connection itself failed: nothing listens, the network or DNS is down, it timed out.
_TEMPORARY_FAILURES = ("connection refused", "timeout expired", "timed out",
                       "could not translate host name", "failed to resolve host",
                       "name or service not known", "temporary failure in name resolution",
                       "no address associated with hostname", "no route to host",
                       "network is unreachable", "host is unreachable", "connection reset",
                       "server closed the connection unexpectedly", "could not connect to server",
                       "no such file or directory")  # a Unix socket that is not there: no server
_SERVER_SAID = re.compile(r"\b(FATAL|PANIC|ERROR):")


def connection_is_temporary(reason: str) -> bool:
    """Whether a failure to connect to a database server (its driver's message) may pass by
    itself, so that trying again later can help."""
    lowered = reason.lower()
    if _SERVER_SAID.search(reason):
        return any(phrase in lowered for phrase in _TEMPORARY_REFUSALS)
    return any(phrase in lowered for phrase in _TEMPORARY_FAILURES + _TEMPORARY_REFUSALS)


def _missing_driver(parsed, exc: BaseException) -> str | None:
    """What to install when the URL's driver is missing; None for any other failure."""
    if not isinstance(exc, ImportError):
        return None
    if parsed.get_backend_name() == "postgresql" and parsed.get_driver_name() == "psycopg":
        return ("the PostgreSQL driver psycopg is not installed: "
                "pip install 'mood-poller[postgres]'")
    return None


# An execution option for a connection that runs one SELECT and nothing else (SQLite:
# no explicit BEGIN; PostgreSQL: ``isolation_level="AUTOCOMMIT"`` does the same).
SINGLE_READ = "single_read"


def _sqlite_engine(parsed, create: bool = True) -> Engine:
    database = parsed.database or ""
    watched = None
    if database and database != ":memory:" and not database.startswith("file:"):
        path = Path(database).expanduser()
        if not create and not path.exists():
            raise errors.StoreError(f"there is no database at {path}: `mood-poller init` "
                                    "creates it")
        try:
            _private_file(path)
            watched = FileIdentity.of(path)
        except OSError as exc:
            raise errors.StoreError(f"cannot create {path}: {exc.strerror}") from exc
    engine = sa.create_engine(parsed, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
    if watched is not None:
        # Before a connection is made (SQLite would make an empty file in place
        # of a deleted one) and at every transaction (a connection still open
        # on a deleted file writes into it, and all of that is lost).
        event.listen(engine, "do_connect", lambda *_: watched.check())
        event.listen(engine, "begin", lambda _conn: watched.check())

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn, _record):
        # The driver's own transaction handling is replaced by explicit BEGINs
        # below so that SQLite takes its write lock at the start of a write
        # transaction (BEGIN IMMEDIATE) instead of failing halfway through.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        _enter_wal(cur)
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn):
        options = conn.get_execution_options()
        if options.get(SINGLE_READ):
            return  # one SELECT is its own transaction: no BEGIN sent, nothing to roll back
        conn.exec_driver_sql("BEGIN IMMEDIATE" if options.get("sqlite_write") else "BEGIN")

    return engine


@dataclass(frozen=True)
class FileIdentity:
    """The SQLite file an engine opened: its path, device and inode."""

    path: Path
    device: int
    inode: int

    @classmethod
    def of(cls, path: Path) -> "FileIdentity":
        path = Path(os.path.abspath(path))
        st = os.stat(path)
        return cls(path, st.st_dev, st.st_ino)

    def check(self) -> None:
        """Raise :class:`errors.StoreGone` unless the path still names the file opened."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise errors.StoreGone(f"the database file {self.path} was deleted while in use: "
                                   "nothing more is written; put it back and restart") from None
        except OSError:
            return  # unreadable for a moment (permissions, I/O): SQLite says what is wrong
        if (st.st_dev, st.st_ino) != (self.device, self.inode):
            raise errors.StoreGone(f"the database file {self.path} was replaced by another "
                                   "file while in use: nothing more is written; restart to "
                                   "open the new one")


def _enter_wal(cur, deadline_s: float = SQLITE_BUSY_TIMEOUT_MS / 1000) -> None:
    """Put the file in WAL mode, waiting out other connections doing the same.

    Two connections that both hold a shared lock and both want the exclusive
    lock the switch needs are a deadlock SQLite breaks by failing one of them
    at once ("database is locked"), without its busy handler.  That happens
    when processes open a fresh file together; retry it in short steps.
    """
    give_up = time.monotonic() + deadline_s
    step = 0.005
    while True:
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= give_up:
                raise
        time.sleep(step)
        step = min(step * 2, 0.1)


def _private_file(path: Path) -> None:
    """Create the database file (mode 0600) and its directory (0700) when they are new.

    SQLite gives the ``-wal`` and ``-shm`` files the main file's mode, so
    none of the three is readable by other users.  An existing file or
    directory keeps the mode its owner gave it.
    """
    missing = []
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        missing.append(parent)
        parent = parent.parent
    path.parent.mkdir(parents=True, exist_ok=True)
    if missing:
        os.chmod(missing[0], 0o700)  # the database's own directory; parents above it as umask says
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.fchmod(fd, 0o600)  # whatever the umask
    os.close(fd)


def alembic_config(engine: Engine):
    from alembic.config import Config as AlembicConfig

    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["engine"] = engine
    return cfg


# ``init`` migrates under a lock, so inits started together (several machines
# booting against one PostgreSQL database, two shells on one SQLite file) run one
# after the other: the first migrates, the rest find the schema at the newest.
MIGRATION_LOCK_KEY = 7_351_002  # PostgreSQL advisory lock key (7_351_001 guards the cursors)
MIGRATION_LOCK_WAIT_S = 300.0  # then give up with StoreBusy (exit 75), to be tried again


def upgrade(engine: Engine) -> tuple[str | None, str]:
    """Bring the schema to the newest migration; returns (before, after) revisions.

    Holds the migration lock throughout: a PostgreSQL advisory lock, or on
    SQLite an exclusive ``flock`` of ``<database>.init.lock`` beside the file.
    A lock still held by another ``init`` after :data:`MIGRATION_LOCK_WAIT_S`
    is :class:`errors.StoreBusy`.
    """
    from alembic import command

    with _migration_lock(engine):
        before = current_revision(engine)
        try:
            command.upgrade(alembic_config(engine), "head")
        except errors.PollerError:
            raise
        except Exception as exc:
            reason = _first_line(getattr(exc, "orig", None) or exc)
            raise errors.StoreError(f"migration failed: {mask_text(reason)}") from exc
        return before, current_revision(engine) or ""


_LOCK_BUSY = "another `mood-poller init` is migrating this database; try again"


@contextlib.contextmanager
def _migration_lock(engine: Engine) -> Iterator[None]:
    backend = engine.url.get_backend_name()
    if backend == "postgresql":
        with _advisory_lock(engine):
            yield
        return
    path = _sqlite_path(engine.url) if backend == "sqlite" else None
    if path is None:  # an in-memory database, or one only this process can see
        yield
        return
    with _file_lock(Path(f"{path}.init.lock")):
        yield


@contextlib.contextmanager
def _advisory_lock(engine: Engine) -> Iterator[None]:
    """A session-level advisory lock, on a connection of its own for the whole upgrade."""
    conn = engine.connect()
    try:
        try:
            # SET LOCAL: the wait bound ends with this transaction; the lock outlives it.
            wait_ms = max(1, int(MIGRATION_LOCK_WAIT_S * 1000))
            conn.execute(sa.text(f"SET LOCAL lock_timeout = {wait_ms}"))
            conn.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": MIGRATION_LOCK_KEY})
            conn.commit()
        except sa.exc.OperationalError as exc:
            if getattr(exc.orig, "sqlstate", None) == "55P03":  # lock_not_available
                raise errors.StoreBusy(_LOCK_BUSY) from None
            raise
        try:
            yield
        finally:
            try:
                conn.rollback()
                conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": MIGRATION_LOCK_KEY})
                conn.commit()
            except sa.exc.DBAPIError:
                conn.invalidate()  # closing the session releases its locks
    finally:
        conn.close()


def _sqlite_path(url) -> str | None:
    database = url.database or ""
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return str(Path(database).expanduser())


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` of *path* (created mode 0600), waited for in short steps."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise errors.StoreError(f"cannot create the migration lock {path}: "
                                f"{exc.strerror}") from None
    try:
        deadline = time.monotonic() + MIGRATION_LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise errors.StoreBusy(_LOCK_BUSY) from None
                time.sleep(0.05)
        yield  # the lock goes with the descriptor
    finally:
        os.close(fd)


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


_REVISION_RE = re.compile(r"^(down_revision|revision)\s*(?::[^=]*)?=\s*(.+?)\s*$", re.MULTILINE)
_ID_RE = re.compile(r"""['"]([^'"]+)['"]""")


@functools.lru_cache(maxsize=1)  # the scripts do not change under a running process
def head_revision() -> str:
    """The newest migration's revision id.

    Read from the ``revision`` / ``down_revision`` lines of the migration
    scripts, so checking a database's schema needs no Alembic import; if the
    scripts cannot be read that way (no single head), Alembic decides.
    """
    revisions: set[str] = set()
    parents: set[str] = set()
    for script in (MIGRATIONS / "versions").glob("*.py"):
        if script.name.startswith("_"):
            continue
        found = dict(_REVISION_RE.findall(script.read_text("utf-8")))
        ids = _ID_RE.findall(found.get("revision", ""))
        if len(ids) != 1 or "down_revision" not in found:
            return _alembic_head()
        revisions.add(ids[0])
        parents.update(_ID_RE.findall(found["down_revision"]))
    heads = revisions - parents
    if len(heads) != 1:
        return _alembic_head()
    return heads.pop()


def _alembic_head() -> str:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config(None)).get_current_head()


def stamped_revisions(engine: Engine) -> list[str]:
    """The revisions recorded in Alembic's version table; none when there is no schema."""
    with engine.connect() as conn:
        if not sa.inspect(conn).has_table(VERSION_TABLE):
            return []
        return list(conn.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars())


def check_schema(engine: Engine) -> None:
    """Raise a clear error unless the schema is at the newest migration."""
    stamped = stamped_revisions(engine)
    if stamped != [head_revision()]:
        path = _sqlite_path(engine.url)
        which = f"the database {path}" if path else "the database"
        if not stamped:
            raise errors.StoreError(f"{which} has no schema yet: run `mood-poller init`")
        raise errors.StoreError(
            f"the schema of {which} is at {', '.join(stamped)}, not the newest: run `mood-poller init`"
        )
