"""Opening the database and bringing its schema to the newest migration.

SQLite (the embedded default) runs in WAL mode with a busy timeout so the
CLI and a running poller can share one file.  PostgreSQL URLs use psycopg 3
(``postgresql+psycopg://``).  Driver errors become ``StoreError`` here.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url

from poller import errors
from poller.secure import mask_text, mask_url

SQLITE_BUSY_TIMEOUT_MS = 30_000  # longer than any one write the loop makes, LLM summary included
MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"
VERSION_TABLE = "alembic_version"  # Alembic's default, where it records the schema's revision


def safe_url(url: str) -> str:
    """The URL with its password and credential-like parameters masked, for messages."""
    return mask_url(url)


def make_engine(url: str) -> Engine:
    """An engine for *url*; raises StoreError when it cannot be opened."""
    try:
        parsed = make_url(url)
    except sa.exc.ArgumentError as exc:
        raise errors.StoreError(f"invalid database URL {safe_url(url)!r}") from None
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() == "sqlite":
        engine = _sqlite_engine(parsed)
    else:
        try:
            engine = sa.create_engine(parsed, pool_pre_ping=True, connect_args={"connect_timeout": 10})
        except Exception as exc:  # missing driver, bad options
            raise errors.StoreError(f"cannot open database {safe_url(url)}: "
                                    f"{mask_text(str(exc))}") from None
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except Exception as exc:
        engine.dispose()
        reason = str(getattr(exc, "orig", exc)).strip().splitlines()[0] if str(exc) else type(exc).__name__
        raise errors.StoreError(f"cannot open database {safe_url(url)}: {mask_text(reason)}") from None
    return engine


def _sqlite_engine(parsed) -> Engine:
    database = parsed.database or ""
    if database and database != ":memory:" and not database.startswith("file:"):
        path = Path(database).expanduser()
        try:
            _private_file(path)
        except OSError as exc:
            raise errors.StoreError(f"cannot create {path}: {exc.strerror}") from exc
    engine = sa.create_engine(parsed, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn, _record):
        # The driver's own transaction handling is replaced by explicit BEGINs
        # below so that SQLite takes its write lock at the start of a write
        # transaction (BEGIN IMMEDIATE) instead of failing halfway through.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("sqlite_write") else "BEGIN")

    return engine


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


def upgrade(engine: Engine) -> tuple[str | None, str]:
    """Bring the schema to the newest migration; returns (before, after) revisions."""
    from alembic import command

    before = current_revision(engine)
    try:
        command.upgrade(alembic_config(engine), "head")
    except errors.PollerError:
        raise
    except Exception as exc:
        raise errors.StoreError(f"migration failed: {mask_text(str(exc))}") from exc
    return before, current_revision(engine) or ""


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


_REVISION_RE = re.compile(r"^(down_revision|revision)\s*(?::[^=]*)?=\s*(.+?)\s*$", re.MULTILINE)
_ID_RE = re.compile(r"""['"]([^'"]+)['"]""")


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
        if not stamped:
            raise errors.StoreError("the database has no schema yet: run `mood-poller init`")
        raise errors.StoreError(
            f"the database schema is at {', '.join(stamped)}, not the newest: run `mood-poller init`"
        )
