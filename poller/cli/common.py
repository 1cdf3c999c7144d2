"""Small helpers shared by the command modules."""

from __future__ import annotations

import json
import math
import re

import click

from poller import errors, text

MAX_ID = text.MAX_ID
MAX_SECONDS = 1e9  # about 31 years: more than any wait the product makes


class Whole(click.ParamType):
    """A whole number from 1 to 2^63 - 1: an id, or how many rows to show."""

    name = "integer"

    def convert(self, value, param, ctx):
        raw = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
        try:
            return text.parse_whole(raw, "", lowest=1)
        except errors.UserError as exc:
            self.fail(str(exc).strip(), param, ctx)


class Seconds(click.ParamType):
    """A finite, positive number of seconds, at most :data:`MAX_SECONDS`."""

    name = "seconds"

    def convert(self, value, param, ctx):
        if isinstance(value, float):
            number = value
        else:
            try:
                number = float(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(number) or not 0 < number <= MAX_SECONDS:
            self.fail(f"{value!r} is out of range: give a number of seconds above 0 and at "
                      f"most {MAX_SECONDS:,.0f}", param, ctx)
        return number


WHOLE = Whole()
SECONDS = Seconds()


# Characters never printed raw to an operator's terminal: C0 controls but
# newline and tab, DEL, C1 controls (ESC and CSI among them, which drive the
# terminal), and the bidirectional controls that reorder what is shown.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
                     "\u2028\u2029\ud800-\udfff]")
_UNSAFE_CELL = re.compile(_UNSAFE.pattern[:1] + "\t\n" + _UNSAFE.pattern[1:])


def _escape(match: re.Match) -> str:
    c = match.group()
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def for_terminal(value, *, cell: bool = False) -> str:
    """*value* as text safe to print: control characters shown as ``\\x1b``-style escapes.

    Newlines and tabs are kept, except in a table *cell*, which stays on one line.
    """
    s = str(value)
    return (_UNSAFE_CELL if cell else _UNSAFE).sub(_escape, s)


def echo(value="", **kwargs) -> None:
    """``click.echo`` for text that may hold what people wrote."""
    click.echo(for_terminal(value), **kwargs)


def echo_json(value) -> None:
    # json escapes C0 controls itself; C1, bidi controls and lone surrogates are
    # written as \\u escapes too (the same JSON value), so none reaches a terminal raw.
    out = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    click.echo(_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", out))


def now_option(f):
    """``--now ISO8601``: the clock this command reads (overrides the global ``--now``)."""
    def remember(ctx: click.Context, _param, value: str | None):
        if value:
            text.parse_time(value, "--now")  # a bad value fails here, before anything runs
            ctx.obj.set_now(value)
        return value

    return click.option("--now", "now", metavar="ISO8601", expose_value=False, callback=remember,
                        help="The clock for this command (default: the global --now, "
                             "then the wall clock).")(f)


QUIET_META = "poller.quiet"  # as poller.cli.QUIET_META (not imported: that module imports this one)
JSON_META = "poller.json"


def _to_meta(key: str):
    def keep(ctx: click.Context, _param, value):
        ctx.meta[key] = bool(value)
        return value

    return keep


def quiet_option(f):
    """``-q/--quiet`` on a command: the global ``-q`` (warnings and errors only), given here."""
    return click.option("-q", "--quiet", is_flag=True, expose_value=False,
                        callback=_to_meta(QUIET_META),
                        help="Log warnings and errors only (as the global -q).")(f)


def quiet_given() -> bool:
    return bool(click.get_current_context().meta.get(QUIET_META))


def json_option(f):
    """``--json``: print JSON (the command's parameter ``as_json``)."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(f)


def json_meta_option(help: str = "Print JSON."):
    """``--json`` for a command whose signature is fixed: read it with :func:`json_given`."""
    return click.option("--json", "as_json", is_flag=True, expose_value=False,
                        callback=_to_meta(JSON_META), help=help)


def json_given() -> bool:
    return bool(click.get_current_context().meta.get(JSON_META))


def when(app, raw: str | None, what: str = "--at"):
    """An ISO 8601 option value, or the app's clock when it is absent."""
    return text.parse_time(raw, what) if raw else app.now()


def table(rows: list[list[str]], headers: list[str]) -> None:
    if not rows:
        return
    rows = [[for_terminal(c, cell=True) for c in r] for r in rows]
    widths = [max(len(str(r[i])) for r in rows + [headers]) for i in range(len(headers))]
    click.echo("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    for r in rows:
        click.echo("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())


def one_of(positional: str | None, option: str | None, name: str, flag: str) -> str:
    """The value given as *name* or as *flag*; a usage error (exit 2) for neither or both."""
    if positional is not None and option is not None and positional != option:
        raise click.UsageError(f"{name} and {flag} name different values: give one of them")
    value = positional if positional is not None else option
    if value is None:
        raise click.UsageError(f"missing {name} (or {flag} {name})")
    return value
