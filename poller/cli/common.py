"""Small helpers shared by the command modules."""

from __future__ import annotations

import json

import click

from poller import text


def echo_json(value) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


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


def when(app, raw: str | None, what: str = "--at"):
    """An ISO 8601 option value, or the app's clock when it is absent."""
    return text.parse_time(raw, what) if raw else app.now()


def table(rows: list[list[str]], headers: list[str]) -> None:
    if not rows:
        return
    widths = [max(len(str(r[i])) for r in rows + [headers]) for i in range(len(headers))]
    click.echo("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    for r in rows:
        click.echo("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
