"""The ``mood-poller`` command line.

Commands are thin: they parse options, call library functions and print.
Errors from the library (``poller.errors``) become one line on stderr and the
error's exit code; nothing here prints a traceback for a user's mistake.

Starting is cheap: this module and the command modules import only click and
light parts of the package.  A command module is imported when its command is
run (or its own ``--help`` is shown), and SQLAlchemy, Alembic, the tokenizer,
the wiki client and the templates are imported inside the commands (or the
:class:`App` properties) that use them.  ``mood-poller --help`` lists every
command from :data:`COMMANDS` without importing any command module.

Logging is configured once per process from the global ``--log-json``, ``-v``
and ``-q`` (``run`` and ``tick`` take them as their own options too), just
before a command runs: see :func:`with_logging` and :meth:`App.setup_logging`.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import sys
from collections.abc import Iterator, MutableMapping
from typing import TYPE_CHECKING

import click

from poller import __version__, clock, errors

if TYPE_CHECKING:
    from poller.config import Config
    from poller.store import Store

# Every command: name -> (its module: one in poller.cli, or an organ's own cli
# module by its dotted name; its short help as the top-level --help lists it).  tests/test_cli_start.py checks this table
# against the commands themselves.
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("admin", "Create the database schema, or upgrade it to the newest version."),
    "mood": ("moods", "Create, list and archive Moods."),
    "person": ("people", "Add people and set how far they are trusted."),
    "agent": ("people", "Add agents and say how each is woken."),
    "activities": ("poller.away.cli", "Agents' absences, newest first: who went out for what, from "
                                 "which Mood, from when to when, and whether a ping cut it short."),
    "post": ("posts", "Post TEXT to the Mood SLUG (TEXT '-' reads stdin)."),
    "posts": ("posts", "Show the Mood SLUG's latest posts, newest last."),
    "signin": ("posts", "Record that HANDLE signed in to a Mood."),
    "typing": ("posts", "Signal that HANDLE is typing in SLUG: considers there wait 15 s after "
                        "the newest signal."),
    "search": ("search", "Find posts holding every word of QUERY, best first, the words marked "
                         "«like this»."),
    "set": ("settings_cmd", "Set KEY to VALUE for a Mood, an agent, both, or everywhere."),
    "get": ("settings_cmd", "Show resolved settings (or just KEY) and the slot each came from."),
    "tick": ("loop", "Run one cycle of the poller (for cron)."),
    "run": ("loop", "Run the poller until SIGTERM or SIGINT (for systemd)."),
    "wakes": ("loop", "List recent wakes ('wakes show ID' prints one in full)."),
    "why": ("loop", "Why did (or didn't) HANDLE wake in SLUG? The latest decision per kind."),
    "status": ("loop", "Agents (idle / at work / held), turns in flight, holds and next due times."),
    "scram": ("loop", "Emergency stop: wake nothing anywhere and end running turns."),
    "stop": ("poller.control.cli", "Stop one agent in one Mood: end its turn there and hold its wakes there "
                     "until --lift."),
    "preview": ("preview", "Print the wake KIND would send now, from the Mood's real posts."),
    "dials": ("dials", "Show what each discretion and verbosity level tells agents, and its source."),
    "demo": ("demo", "Play a short scripted conversation through the poller and print each wake "
                     "and reply."),
    "config": ("ops", "Check and show the configuration."),
    "alarm": ("poller.schedules.cli", "Wake an agent in a Mood at a time, in an IANA zone."),
    "checkin": ("poller.schedules.cli", "Check-in agreements (not an emergency service)."),
    "serve": ("serve", "Serve the JSON API, the event stream and the web pages on HOST:PORT."),
    "bridge": ("poller.bridges.cli", "Run a bridge: Matrix rooms as Moods, or signed webhooks."),
    "outbox": ("poller.bridges.cli", "What the bridges are to deliver, have delivered, or gave up on."),
    "mcp": ("poller.toolserver.cli", "Serve the Moods as MCP tools over stdin and stdout."),
    "approve": ("poller.toolserver.cli", "Approve the tool a turn asked to use (ID: the number "
                                         "in its notice)."),
    "deny": ("poller.toolserver.cli", "Deny the tool a turn asked to use (ID: the number in its "
                                      "notice)."),
    "approvals": ("poller.toolserver.cli", "Requests to use a tool waiting for an answer (or "
                                           "every one of a wake)."),
    "health": ("serve", "Is the database answering and a poller cycling? Exit 0 if so, 1 if "
                        "not (for cron)."),
}


# The commands whose log is their output (a line per decision and per turn);
# every other command logs warnings and errors only unless -v is given.
LOOP_COMMANDS = frozenset({"run", "tick"})


def load_command(name: str, module: str) -> click.Command:
    """The command *name* from *module*'s ``COMMANDS`` list (``poller.cli.<module>``,
    or an organ's module by its dotted name)."""
    module = module if "." in module else f"poller.cli.{module}"
    mod = importlib.import_module(module)
    for command in mod.COMMANDS:
        if command.name == name:
            return with_logging(guard_text(command), loop=name in LOOP_COMMANDS)
    raise LookupError(f"{module} has no command {name!r}")


def with_logging(command: click.Command, loop: bool = False) -> click.Command:
    """Make *command* (and each of its subcommands) configure the process's logging
    from the global flags (``--log-json``, ``-v``, ``-q``) and its own aliases of
    them, just before it runs: after its options are parsed, so ``--help`` and a
    usage error configure nothing."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            with_logging(sub)
        if not command.invoke_without_command:
            return command  # its callback runs before a subcommand's --help
    callback = command.callback
    if callback is None or getattr(callback, "_logs_configured", False):
        return command

    def configured(*args, **kwargs):
        ctx = click.get_current_context()
        app = ctx.find_object(App)
        if app is not None:
            app.setup_logging(json_lines=bool(ctx.params.get("log_json")),
                              verbose=bool(ctx.params.get("verbose")),
                              quiet=bool(ctx.meta.get(QUIET_META)), loop=loop)
        return callback(*args, **kwargs)

    configured._logs_configured = True
    configured.__doc__ = callback.__doc__
    command.callback = configured
    return command


QUIET_META = "poller.quiet"  # a command's own -q/--quiet, kept where with_logging finds it


def guard_text(command: click.Command, recursive: bool = True) -> click.Command:
    """Make every parameter of *command* (and of its subcommands) refuse text that
    cannot be stored: bytes of the command line that were not UTF-8 (Python hands
    them over as lone surrogates) and NUL characters.

    The check runs while the command line is parsed, before the command does
    anything, and fails with one line naming the parameter.
    """
    for param in command.params:
        if not getattr(param, "_text_guarded", False):
            param.callback = _checked(param.callback)
            param._text_guarded = True
    if recursive:
        for sub in getattr(command, "commands", {}).values():
            guard_text(sub)
    return command


def _checked(callback):
    def check(ctx: click.Context, param: click.Parameter, value):
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(item, str):
                what = param.opts[-1] if isinstance(param, click.Option) else param.human_readable_name
                from poller import text

                text.check_utf8(item, what)
                if "\x00" in item:
                    raise errors.UserError(f"NUL character in {what}")
        return callback(ctx, param, value) if callback is not None else value

    return check


class LazyCommands(MutableMapping):
    """A group's commands by name, each imported from its module on first access.

    Commands added with ``add_command`` are kept as given.
    """

    def __init__(self, table: dict[str, tuple[str, str]]):
        self.table = table
        self.loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self.loaded:
            if name not in self.table:
                raise KeyError(name)
            self.loaded[name] = load_command(name, self.table[name][0])
        return self.loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self.loaded[name] = command

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self.table = {k: v for k, v in self.table.items() if k != name}
        self.loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        yield from self.table
        yield from (name for name in self.loaded if name not in self.table)

    def __len__(self) -> int:
        return len(self.table.keys() | self.loaded.keys())

    def __contains__(self, name: object) -> bool:
        return name in self.table or name in self.loaded


class LazyGroup(click.Group):
    """A group that imports a command's module only when that command is used.

    ``table`` names each command's module and short help, so listing the
    commands (``--help``) imports none of them.
    """

    def __init__(self, *args, table: dict[str, tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.commands = LazyCommands(table)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self.commands)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return self.commands.get(cmd_name)

    def command_short_help(self, name: str, limit: int) -> str:
        commands = self.commands
        if name in commands.loaded:
            return commands.loaded[name].get_short_help_str(limit)
        return click.Command(name, help=commands.table[name][1]).get_short_help_str(limit)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [(name, self.command_short_help(name, limit)) for name in names
                if not (name in self.commands.loaded and self.commands.loaded[name].hidden)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@contextlib.contextmanager
def importing():
    """Import big packages (SQLAlchemy, the models) with the cyclic GC paused, then
    freeze what the process holds.

    An import makes tens of thousands of objects and no garbage; collections
    triggered along the way only walk them (about a tenth of SQLAlchemy's
    import time).  They live as long as the process, so they are moved out of the
    collector's sight (``gc.freeze``) before it runs again: else its next young
    collection walks every one of them, and each later full one again.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def check_db_url(url: str) -> None:
    """StoreError, one line with any password masked, if *url* is not a database URL."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        make_url(url)
    except (ArgumentError, ValueError, TypeError):
        raise errors.StoreError(f"invalid database URL {mask_url(url)!r}") from None


def mask_url(url: str) -> str:
    """*url* with every credential masked (userinfo, pass/key/token-like query values)."""
    from poller.secure import mask_url as mask

    return mask(url)


class App:
    """What every command needs, built lazily from the global options."""

    last: App | None = None  # the newest, for naming its database in error messages

    def __init__(self, db_url: str | None, config_path: str | None, now: str | None = None,
                 *, log_json: bool = False, verbose: bool = False, quiet: bool = False):
        App.last = self
        self._db_url = db_url
        self._config_path = config_path
        self._now = now
        self._config: Config | None = None
        self._engine = None
        self._store: Store | None = None
        self.log_flags = (log_json, verbose, quiet)  # the global --log-json, -v, -q
        self._logging: tuple[bool, bool, bool] | None = None  # as logging was configured

    def setup_logging(self, *, json_lines: bool = False, verbose: bool = False,
                      quiet: bool = False, loop: bool = False) -> None:
        """Configure the process's logging (:func:`poller.logs.setup`) from the global
        flags and a command's own aliases of them; again only if the choice changed.

        *loop* commands (``run``, ``tick``) log a line per decision and per turn by
        default; every other command logs warnings and errors only, unless -v.
        """
        json_lines = json_lines or self.log_flags[0]
        verbose = verbose or self.log_flags[1]
        quiet = quiet or self.log_flags[2]
        if verbose and quiet:
            raise click.UsageError("-v/--verbose and -q/--quiet exclude each other")
        choice = (json_lines, verbose, quiet or not (loop or verbose))
        if choice != self._logging:
            from poller import logs

            logs.setup(*choice)
            self._logging = choice

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
    def config(self) -> Config:
        if self._config is None:
            from poller import config

            self._config = config.load(self._config_path, db_url=self._db_url)
        return self._config

    def engine(self, check: bool = True, create: bool = False):
        """The database engine; with *check*, the schema must be initialised.  A SQLite
        file that is not there is made only with *create* (``init``): any other command
        says to run ``init`` and leaves nothing behind."""
        if self._engine is None:
            with importing():
                from poller.store import db

            check_db_url(self.config.db_url)
            self._engine = db.make_engine(self.config.db_url, create=create)
            if check:
                db.check_schema(self._engine)
        return self._engine

    @property
    def store(self) -> Store:
        if self._store is None:
            from poller import tokens

            with importing():
                from poller.store import Store

            self._store = Store(self.engine(), tokens.counter(self.config.encoding))
        return self._store

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()


pass_app = click.make_pass_decorator(App)


@click.group(cls=LazyGroup, table=COMMANDS,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--db", "db_url", metavar="URL", help="Database URL (env MOOD_POLLER_DB; default: "
              "SQLite under $XDG_DATA_HOME/memory-lane/moods.db).")
@click.option("--config", "config_path", metavar="PATH", type=click.Path(dir_okay=False),
              help="TOML config file (env MOOD_POLLER_CONFIG).")
@click.option("--now", "now", metavar="ISO8601", envvar=clock.NOW_ENV,
              help="The clock every command reads (env MOOD_POLLER_NOW; default: the wall clock).")
@click.option("--log-json", "log_json", is_flag=True,
              help="Log lines as JSON (every command; run and tick log each decision and turn).")
@click.option("-v", "--verbose", is_flag=True,
              help="Log everything, repeated decisions too.")
@click.option("-q", "--quiet", is_flag=True,
              help="Log warnings and errors only (what every command but run and tick does "
                   "by default).")
@click.version_option(__version__, prog_name="mood-poller")
@click.pass_context
def cli(ctx: click.Context, db_url: str | None, config_path: str | None, now: str | None,
        log_json: bool, verbose: bool, quiet: bool) -> None:
    """Decides when an AI agent gets a turn in a Mood, and what it is told."""
    if verbose and quiet:
        raise click.UsageError("-v/--verbose and -q/--quiet exclude each other")
    app = App(db_url, config_path, now, log_json=log_json, verbose=verbose, quiet=quiet)
    ctx.obj = app
    ctx.call_on_close(app.close)


guard_text(cli, recursive=False)  # its commands are guarded as they load


def main(argv: list[str] | None = None) -> None:
    """Run the command line; *argv* defaults to the process's own, and then the process ends."""
    try:
        _main(argv)
    finally:
        if argv is None:
            # Everything the command made lives until exit, so the collections the
            # interpreter runs while shutting down find nothing to free, yet walk every
            # object (~0.07 s after SQLAlchemy and the tokenizer).  Freezing skips them.
            gc.freeze()


def _main(argv: list[str] | None) -> None:
    try:
        rv = cli.main(args=argv, prog_name="mood-poller", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("mood-poller: aborted", err=True)
        sys.exit(130)
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx else "mood-poller"
        _fail(f"{exc.format_message()} (see `{where} --help`)", exc.exit_code)
    except click.ClickException as exc:
        _fail(exc.format_message(), exc.exit_code)
    except errors.PollerError as exc:
        _fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        mapped = database_error(exc)
        if mapped is None:
            raise
        _fail(str(mapped), mapped.exit_code)
    sys.exit(rv if isinstance(rv, int) else 0)


def _fail(message: str, code: int) -> None:
    """The one line a failed command prints (a newline in what was given shown as ``\x0a``)."""
    from poller.cli.common import for_terminal

    click.echo(f"mood-poller: {for_terminal(message, cell=True)}", err=True)
    sys.exit(code)


def database_error(exc: BaseException) -> errors.StoreError | None:
    """A driver's error (SQLAlchemy's DBAPIError: OperationalError and its
    siblings) as a one-line StoreError; None for anything else.

    A database another writer held past the busy timeout is :class:`errors.StoreBusy`
    (exit 75: try again); a read-only one names its file.  Each command is one
    transaction, rolled back by the error, so nothing of it was written.
    """
    sa_exc = sys.modules.get("sqlalchemy.exc")
    if sa_exc is None or not isinstance(exc, sa_exc.DBAPIError):
        return None
    orig = getattr(exc, "orig", None) or exc
    first = (str(orig).strip().splitlines() or [type(orig).__name__])[0]
    lowered = first.lower()
    sqlstate = getattr(orig, "sqlstate", None)
    if ("database is locked" in lowered or "database is busy" in lowered
            or "database table is locked" in lowered or sqlstate in BUSY_SQLSTATES):
        return errors.StoreBusy("database busy, try again")
    if "readonly database" in lowered or sqlstate == READ_ONLY_SQLSTATE:
        return errors.StoreError(f"database is read-only: {_where()}")
    return errors.StoreError(f"database error: {first}")


# PostgreSQL: lock_not_available, deadlock_detected, serialization_failure.
BUSY_SQLSTATES = {"55P03", "40P01", "40001"}
READ_ONLY_SQLSTATE = "25006"  # PostgreSQL: read_only_sql_transaction


def _where() -> str:
    """The database the current command uses: a SQLite file's path, else its masked URL."""
    app = App.last
    url = (app._db_url if app else None) or ""
    if app is not None:
        try:
            url = app.config.db_url
        except errors.PollerError:
            pass
    try:
        from sqlalchemy.engine import make_url

        parsed = make_url(url)
        if parsed.get_backend_name() == "sqlite" and parsed.database:
            path = parsed.database
            return path[len("file:"):].partition("?")[0] if path.startswith("file:") else path
        return mask_url(parsed.render_as_string(hide_password=True))
    except Exception:
        return mask_url(url) or "the database"
