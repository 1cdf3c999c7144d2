"""``init``: create or upgrade the schema."""

from __future__ import annotations

import click

from poller.cli import App, common, pass_app


@click.command()
@click.option("--answer-from-now", is_flag=True,
              help="Also mark this store's starting point now, as the poller's first cycle "
                   "would: every post from here on is heard, even before `tick` or `run`.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@common.now_option
@pass_app
def init(app: App, answer_from_now: bool, as_json: bool) -> None:
    """Create the database schema, or upgrade it to the newest version.

    Safe to start on several machines at once: each takes the migration lock
    (a PostgreSQL advisory lock, or a lock file beside a SQLite database), so
    one migrates and the others find the schema at the newest.  A database
    that cannot be reached, or a lock held for more than five minutes, exits
    75 (try again); a broken configuration exits 78.
    """
    from poller.store import db

    engine = app.engine(check=False, create=True)
    before, after = db.upgrade(engine)
    where = db.safe_url(app.config.db_url)
    started = None
    if answer_from_now:
        from poller.cycle import loop

        started = loop.Poller(app.store, app.config).start_listening(app.now())
    if as_json:
        common.echo_json({"before": before, "after": after, "database": where,
                          "listening_from_post": started})
        return
    if before == after:
        click.echo(f"schema already at {after} in {where}")
    else:
        click.echo(f"schema {before or 'empty'} -> {after} in {where}")
    if started is not None:
        click.echo(f"listening from now: posts after #{started} are heard")


COMMANDS = [init]
