"""Small helpers shared by the command modules."""

from __future__ import annotations

import json

import click

from poller import text


def echo_json(value) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def when(raw: str | None, what: str = "--at"):
    """An ISO 8601 option value, or the wall clock when it is absent."""
    return text.parse_time(raw, what) if raw else text.utcnow()


def table(rows: list[list[str]], headers: list[str]) -> None:
    if not rows:
        return
    widths = [max(len(str(r[i])) for r in rows + [headers]) for i in range(len(headers))]
    click.echo("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    for r in rows:
        click.echo("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
