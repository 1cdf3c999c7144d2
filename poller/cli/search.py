"""``search``: find posts by their words, in every Mood or one."""

from __future__ import annotations

import click

from poller.cli import App, common, pass_app


@click.command()
@click.argument("query")
@click.option("--mood", "mood", metavar="SLUG", help="Only this Mood.")
@click.option("--from", "sender", metavar="HANDLE", help="Only posts by this person or agent.")
@click.option("--since", "since", metavar="ISO8601", help="Only posts made at or after this time.")
@click.option("--until", "until", metavar="ISO8601", help="Only posts made before this time.")
@click.option("--limit", type=common.WHOLE, default=20, show_default=True,
              help="How many, best first (at most 100).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def search(app: App, query: str, mood: str | None, sender: str | None, since: str | None,
           until: str | None, limit: int, as_json: bool) -> None:
    """Find posts holding every word of QUERY, best first, the words marked «like this»."""
    from poller.store import search as finder
    from poller.text import parse_time, when

    hits = finder.search(app.store, query, mood=mood, sender=sender,
                         since=parse_time(since, "--since") if since else None,
                         until=parse_time(until, "--until") if until else None, limit=limit)
    if as_json:
        common.echo_json([h.to_json() for h in hits])
        return
    for h in hits:
        stamp = when(h.created_at)
        tag = "" if h.kind == "post" else f"({h.kind}) "
        common.echo(f"#{h.id} {h.mood} [{h.sender}, {stamp}] {tag}{h.snippet}")
    if not hits:
        click.echo("mood-poller: note: no post matches", err=True)


COMMANDS = [search]
