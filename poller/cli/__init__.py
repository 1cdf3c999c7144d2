"""The ``mood-poller`` command line.

Commands are thin: they parse options, call library functions and print.
Errors from the library (``poller.errors``) become one line on stderr and the
error's exit code; nothing here prints a traceback for a user's mistake.
"""

from __future__ import annotations

import sys

import click

from poller import __version__, config, db, errors
from poller.store import Store


class App:
    """What every command needs, built lazily from the global options."""

    def __init__(self, db_url: str | None, config_path: str | None, now: str | None = None):
        self._db_url = db_url
        self._config_path = config_path
        self._now = now
        self._config: config.Config | None = None
        self._engine = None
        self._store: Store | None = None

    @property
    def clock(self):
        """The clock every command reads: fixed by ``--now`` (or MOOD_POLLER_NOW), else the wall."""
        from poller.clock import Clock
        from poller.text import parse_time

        if self._now:
            return Clock.at(parse_time(self._now, "--now"))
        return Clock()

    def set_now(self, raw: str | None) -> None:
        if raw:
            self._now = raw

    def now(self):
        return self.clock()

    @property
    def config(self) -> config.Config:
        if self._config is None:
            self._config = config.load(self._config_path, db_url=self._db_url)
        return self._config

    def engine(self, check: bool = True):
        """The database engine; with *check*, the schema must be initialised."""
        if self._engine is None:
            self._engine = db.make_engine(self.config.db_url)
            if check:
                db.check_schema(self._engine)
        return self._engine

    @property
    def store(self) -> Store:
        if self._store is None:
            from poller import tokens

            self._store = Store(self.engine(), tokens.counter(self.config.encoding))
        return self._store

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()


pass_app = click.make_pass_decorator(App)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--db", "db_url", metavar="URL", help="Database URL (env MOOD_POLLER_DB; default: "
              "SQLite under $XDG_DATA_HOME/memory-lane/moods.db).")
@click.option("--config", "config_path", metavar="PATH", type=click.Path(dir_okay=False),
              help="TOML config file (env MOOD_POLLER_CONFIG).")
@click.option("--now", "now", metavar="ISO8601", envvar="MOOD_POLLER_NOW",
              help="The clock every command reads (env MOOD_POLLER_NOW; default: the wall clock).")
@click.version_option(__version__, prog_name="mood-poller")
@click.pass_context
def cli(ctx: click.Context, db_url: str | None, config_path: str | None, now: str | None) -> None:
    """Decides when an AI agent gets a turn in a Mood, and what it is told."""
    app = App(db_url, config_path, now)
    ctx.obj = app
    ctx.call_on_close(app.close)


def _register() -> None:
    from poller.cli import admin, moods, people, posts, settings_cmd

    for module in (admin, moods, people, posts, settings_cmd):
        for command in module.COMMANDS:
            cli.add_command(command)
    # Commands that arrive with later parts of the service.
    import importlib

    for name in ("loop", "preview", "dials", "demo", "ops"):
        try:
            module = importlib.import_module(f"poller.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"poller.cli.{name}":
                raise
            continue
        for command in getattr(module, "COMMANDS", [getattr(module, name, None)]):
            if command is not None:
                cli.add_command(command)


_register()


def main(argv: list[str] | None = None) -> None:
    try:
        rv = cli.main(args=argv, prog_name="mood-poller", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("mood-poller: aborted", err=True)
        sys.exit(130)
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx else "mood-poller"
        click.echo(f"mood-poller: {exc.format_message()} (see `{where} --help`)", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(f"mood-poller: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except errors.PollerError as exc:
        click.echo(f"mood-poller: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(rv if isinstance(rv, int) else 0)
