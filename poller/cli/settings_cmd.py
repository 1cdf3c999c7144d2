"""``set`` and ``get``: the append-only settings and how they resolve."""

from __future__ import annotations

import click

from poller import errors, settings
from poller.cli import App, common, pass_app
from poller.text import iso, parse_time, when


class SetCommand(click.Command):
    """``set``, whose help lists every setting key with its range and default."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(k.name, f"{getattr(k.parse, 'range', 'any value')} (default {k.default}): "
                         f"{k.help}.") for k in settings.KEYS.values()]
        with formatter.section("Keys"):
            formatter.write_dl(rows)
        super().format_epilog(ctx, formatter)


# A value that starts with "-" (set considers_per_hour -5) is a value, to be refused by
# its range, not an unknown option.
@click.command("set", cls=SetCommand, context_settings={"ignore_unknown_options": True})
@click.argument("key")
@click.argument("value")
@click.option("--mood", metavar="SLUG", help="Only in this Mood (default: every Mood).")
@click.option("--agent", metavar="HANDLE", help="Only for this agent (default: every agent).")
@click.option("--by", metavar="HANDLE", help="Who is making the change.")
@click.option("--note", default="", help="Why, for the record.")
@click.option("--until", metavar="ISO8601", help="listening only: the value lapses at this time.")
@click.option("--json", "as_json", is_flag=True, help="Print the change as JSON.")
@common.now_option
@pass_app
def set_(app: App, key: str, value: str, mood: str | None, agent: str | None,
         by: str | None, note: str, until: str | None, as_json: bool) -> None:
    """Set KEY to VALUE for a Mood, an agent, both, or everywhere."""
    until_at = parse_time(until, "--until") if until else None
    change = app.store.set_setting(key, value, app.now(), mood=mood, agent=agent, by=by,
                                   note=note, until=until_at)
    slot = settings.SLOT_NAMES[(mood is not None, agent is not None)]
    if as_json:
        common.echo_json({"key": key, "old": change.old, "new": change.new, "slot": slot,
                          "mood": mood, "agent": agent, "until": iso(until_at)})
        return
    tail = f" until {when(until_at)}" if until_at else ""
    click.echo(f"{key}: {change.old} -> {change.new} ({slot}){tail}")


@click.command("get")
@click.argument("key", required=False)
@click.option("--mood", metavar="SLUG", help="As it applies in this Mood.")
@click.option("--agent", metavar="HANDLE", help="As it applies to this agent.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@common.now_option
@pass_app
def get(app: App, key: str | None, mood: str | None, agent: str | None, as_json: bool) -> None:
    """Show resolved settings (or just KEY) and the slot each came from."""
    if key is not None and key not in settings.KEYS:
        raise errors.InvalidSetting(f"unknown setting {key!r} (known: {', '.join(settings.KEYS)})")
    resolved = app.store.resolved(app.now(), mood=mood, agent=agent)
    items = [resolved[key]] if key else list(resolved.values())
    if as_json:
        common.echo_json({r.key: {"value": r.value, "slot": r.slot, "until": iso(r.until)}
                          for r in items})
        return
    common.table([[r.key, r.value, r.slot + (f" until {when(r.until)}" if r.until else "")]
                  for r in items], ["KEY", "VALUE", "FROM"])


COMMANDS = [set_, get]
