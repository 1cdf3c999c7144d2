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
@click.option("--matrix-room", "matrix_room", metavar="ROOM",
              help="The Matrix room this Mood is: '!id:server' or '#alias:server'.")
@click.option("--legacy-mentions", is_flag=True,
              help="With --matrix-room: a bare handle in a message without m.mentions "
                   "counts as a mention (for rooms with older clients).")
@common.json_option
@common.now_option
@pass_app
def mood_add(app: App, slug: str, title: str, matrix_room: str | None, legacy_mentions: bool,
             as_json: bool) -> None:
    """Create the Mood SLUG."""
    if matrix_room is not None:
        from poller.bridges import matrix

        matrix.check_room(matrix_room)
    elif legacy_mentions:
        raise click.UsageError("--legacy-mentions applies only with --matrix-room")
    if matrix_room is not None:
        from poller.store import bridges

        m = bridges.add_mood_with_room(app.store, "matrix", slug, title, matrix_room, app.now(),
                                       legacy_mentions)
    else:
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


def _link(app: App, slug: str, room: str, legacy: bool) -> None:
    from poller.store import bridges

    bridges.add_linked_mood(app.store, "matrix", slug, room, app.now(), legacy)


@mood.command("link")
@click.argument("slug")
@click.option("--matrix-room", "matrix_room", metavar="ROOM", required=True,
              help="The Matrix room: '!id:server' or '#alias:server'.")
@click.option("--legacy-mentions", is_flag=True,
              help="A bare handle in a message without m.mentions counts as a mention.")
@common.json_option
@common.now_option
@pass_app
def mood_link(app: App, slug: str, matrix_room: str, legacy_mentions: bool,
              as_json: bool) -> None:
    """Link the Mood SLUG to a Matrix room (or change its room)."""
    from poller.bridges import matrix

    matrix.check_room(matrix_room)
    _link(app, slug, matrix_room, legacy_mentions)
    if as_json:
        common.echo_json({"mood": slug, "matrix_room": matrix_room, "legacy": legacy_mentions})
        return
    click.echo(f"Mood {slug} is the Matrix room {matrix_room}")


@mood.group("webhook")
def webhook() -> None:
    """Signed webhooks: a Mood's events POSTed to subscriber URLs."""


@webhook.command("add")
@click.argument("slug")
@click.argument("url")
@common.json_option
@common.now_option
@pass_app
def webhook_add(app: App, slug: str, url: str, as_json: bool) -> None:
    """POST the Mood SLUG's events to URL, signed; prints the signing secret once."""
    from poller.bridges import webhooks
    from poller.store import bridges

    webhooks.check_url(url)
    secret = webhooks.new_secret()
    hook = bridges.add_webhook(app.store, slug, url, secret, app.now())
    if as_json:
        common.echo_json(hook.to_json() | {"secret": secret})
        return
    click.echo(f"added webhook {hook.id} for Mood {slug}; its signing secret (shown once):")
    click.echo(secret)


@webhook.command("list")
@click.argument("slug", required=False)
@click.option("--all", "all_", is_flag=True, help="Include removed webhooks.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def webhook_list(app: App, slug: str | None, all_: bool, as_json: bool) -> None:
    """List webhooks (of the Mood SLUG); never their secrets."""
    from poller.store import bridges

    hooks = bridges.webhooks(app.store, slug, all_)
    if as_json:
        common.echo_json([h.to_json() for h in hooks])
        return
    from poller.secure import shown_url

    common.table([[str(h.id), h.mood, shown_url(h.url), "removed" if h.removed_at else ""] for h in hooks],
                 ["ID", "MOOD", "URL", "STATE"])


@webhook.command("remove")
@click.argument("hook_id", metavar="ID", type=common.WHOLE)
@common.json_option
@common.now_option
@pass_app
def webhook_remove(app: App, hook_id: int, as_json: bool) -> None:
    """Stop POSTing to webhook ID (what it had not been sent is marked failed)."""
    from poller.store import bridges

    bridges.remove_webhook(app.store, hook_id, app.now())
    if as_json:
        common.echo_json({"removed": hook_id})
        return
    click.echo(f"removed webhook {hook_id}")


COMMANDS = [mood]
