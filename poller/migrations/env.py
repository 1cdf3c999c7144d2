"""Alembic environment: runs migrations on the engine the caller passes in."""

from __future__ import annotations

from alembic import context

from poller import models

config = context.config
target_metadata = models.Base.metadata


def run_migrations_online() -> None:
    engine = config.attributes.get("engine")
    if engine is None:
        from poller.store import db

        engine = db.make_engine(config.get_main_option("sqlalchemy.url"))
    with engine.execution_options(sqlite_write=True).connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=connection.dialect.name == "sqlite",
            compare_type=True,
            include_name=models.modelled,  # the search index is the migrations' alone
        )
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


run_migrations_online()
