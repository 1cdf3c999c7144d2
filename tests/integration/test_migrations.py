"""Migrations produce exactly the models' schema, idempotently."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from poller import models
from poller.store import db


def test_migrations_match_the_models(db_url):
    engine = db.make_engine(db_url)
    before, after = db.upgrade(engine)
    assert before is None and after == db.head_revision()
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True,
                                                     "include_name": models.modelled})
        diff = compare_metadata(ctx, models.Base.metadata)
    assert diff == []
    # A second upgrade is a no-op.
    assert db.upgrade(engine) == (after, after)
    engine.dispose()


def test_commands_refuse_an_uninitialised_database(sqlite_url):
    from support.cli import Cli

    r = Cli(sqlite_url).fails("mood", "list")
    assert "mood-poller init" in r.err
