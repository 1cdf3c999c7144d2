"""``mood add | list | archive``."""

from __future__ import annotations

import click

from poller.cli import App, common, pass_app


@click.group()
def mood() -> None:
    """Create, list and archive Moods."""


@mood.command("add")
@click.argument("slug")
@click.option("--title", default="", help="A human title (default: the slug).")
@common.json_option
@common.now_option
@pass_app
def mood_add(app: App, slug: str, title: str, as_json: bool) -> None:
    """Create the Mood SLUG."""
    m = app.store.add_mood(slug, title, app.now())
    if as_json:
        common.echo_json(m.to_json())
        return
    click.echo(f"added Mood {m.slug}")


@mood.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def mood_list(app: App, as_json: bool) -> None:
    """List every Mood."""
    moods = app.store.moods()
    if as_json:
        common.echo_json([m.to_json() for m in moods])
        return
    common.table([[m.slug, m.title, "archived" if m.archived else ""] for m in moods],
                 ["SLUG", "TITLE", "STATE"])


@mood.command("archive")
@click.argument("slug")
@click.option("--undo", is_flag=True, help="Bring an archived Mood back.")
@common.json_option
@pass_app
def mood_archive(app: App, slug: str, undo: bool, as_json: bool) -> None:
    """Archive the Mood SLUG: no unprompted looks there any more."""
    m = app.store.archive_mood(slug, archived=not undo)
    if as_json:
        common.echo_json(m.to_json())
        return
    click.echo(f"{'unarchived' if undo else 'archived'} Mood {slug}")


COMMANDS = [mood]
