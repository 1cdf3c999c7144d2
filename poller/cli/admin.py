"""``init``: create or upgrade the schema."""

from __future__ import annotations

import click

from poller.cli import App, pass_app


@click.command()
@pass_app
def init(app: App) -> None:
    """Create the database schema, or upgrade it to the newest version.

    Safe to start on several machines at once: each takes the migration lock
    (a PostgreSQL advisory lock, or a lock file beside a SQLite database), so
    one migrates and the others find the schema at the newest.  A database
    that cannot be reached, or a lock held for more than five minutes, exits
    75 (try again); a broken configuration exits 78.
    """
    from poller.store import db

    engine = app.engine(check=False)
    before, after = db.upgrade(engine)
    where = db.safe_url(app.config.db_url)
    if before == after:
        click.echo(f"schema already at {after} in {where}")
    else:
        click.echo(f"schema {before or 'empty'} -> {after} in {where}")


COMMANDS = [init]
