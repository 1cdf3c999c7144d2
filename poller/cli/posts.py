"""``post``, ``posts`` and ``signin``: ingest and read a Mood."""

from __future__ import annotations

import sys

import click

from poller import errors
from poller.cli import App, common, pass_app


@click.command()
@click.argument("slug", required=False)
@click.argument("text", required=False)
@click.option("--as", "sender", metavar="HANDLE", help="Who is posting.")
@click.option("--at", "at", metavar="ISO8601", help="When it was posted (default: now).")
@click.option("--reply-to", type=common.WHOLE, metavar="POST_ID", help="The post this answers.")
@click.option("--stdin-jsonl", "jsonl", is_flag=True,
              help='Import many posts from stdin, one JSON object a line: {"text": ..., '
                   '"mood": SLUG, "as": HANDLE, "at": ISO8601}; SLUG and --as are the defaults. '
                   'All are checked first, then written in one transaction, or none.')
@click.option("--json", "as_json", is_flag=True, help="Print the new post as JSON (its id and more).")
@common.now_option
@pass_app
def post(app: App, slug: str | None, text: str | None, sender: str | None, at: str | None,
         reply_to: int | None, jsonl: bool, as_json: bool) -> None:
    """Post TEXT to the Mood SLUG (TEXT '-' reads stdin). Prints the new post's id."""
    if jsonl:
        if text is not None or reply_to is not None or at is not None:
            raise click.UsageError("--stdin-jsonl takes no TEXT, --at or --reply-to "
                                   "(each line has its own)")
        return _import(app, slug, sender, as_json)
    if slug is None or text is None or sender is None:
        raise click.UsageError("post needs SLUG, TEXT and --as HANDLE (or --stdin-jsonl)")
    if text == "-":
        try:
            text = sys.stdin.buffer.read().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise errors.UserError(f"stdin is not valid UTF-8 (byte {exc.start})") from None
    p = app.store.add_post(slug, sender, text, common.when(app, at), reply_to=reply_to)
    if as_json:
        common.echo_json(p.to_json())
    else:
        click.echo(p.id)
    if not app.store.poller_has_run():
        click.echo("mood-poller: note: the poller has not run its first cycle on this store; "
                   "posts from before it are history and never answered: run `mood-poller tick` "
                   "(or `mood-poller run`) before posting", err=True)


def _import(app: App, slug: str | None, sender: str | None, as_json: bool) -> None:
    """Read JSON lines from stdin, let each in (its text judged by the store's door), then
    write them all in one transaction."""
    import poller.text
    from poller.store import core

    ready = []
    try:
        raw = sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise errors.UserError(f"stdin is not valid UTF-8 (byte {exc.start})") from None
    for n, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        item = poller.text.parse_json(line, f"line {n}")
        if not isinstance(item, dict) or set(item) - {"text", "mood", "as", "at"}:
            raise errors.UserError(f'line {n}: give an object with "text" and, if no default, '
                                   f'"mood" and "as" (and "at"), nothing else')
        body, mood, who = item.get("text"), item.get("mood", slug), item.get("as", sender)
        if not all(isinstance(v, str) for v in (body, mood, who)):
            raise errors.UserError(f'line {n}: "text", "mood" and "as" must be strings '
                                   f"(SLUG and --as give defaults)")
        stamp = item.get("at")
        if stamp is not None and not isinstance(stamp, str):
            raise errors.UserError(f'line {n}: "at" must be an ISO 8601 string')
        try:
            when = poller.text.parse_time(stamp, '"at"') if stamp else app.now()
            ready += app.store.admit([core.NewPost(mood, who, body, when)])
        except errors.UserError as exc:
            raise errors.UserError(f"line {n}: {exc}") from None
    if not ready:
        raise errors.UserError("no posts on stdin")
    ids = [p.id for p in app.store.ingest(ready)]
    if as_json:
        common.echo_json(ids)
    else:
        click.echo("\n".join(map(str, ids)))


@click.command()
@click.argument("slug")
@click.option("--limit", type=common.WHOLE, default=20, show_default=True, help="How many, newest last.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def posts(app: App, slug: str, limit: int, as_json: bool) -> None:
    """Show the Mood SLUG's latest posts, newest last."""
    from poller.text import when

    rows = app.store.posts(slug, limit=limit)
    if as_json:
        common.echo_json([p.to_json() for p in rows])
        return
    for p in rows:
        stamp = when(p.created_at)
        if p.kind == "silent":
            common.echo(f"#{p.id} [{p.sender}, {stamp}] ·")
        else:
            tag = "" if p.kind == "post" else f"({p.kind}) "
            common.echo(f"#{p.id} [{p.sender}, {stamp}] {tag}{p.text}")


@click.command()
@click.argument("handle")
@click.option("--mood", "slug", required=True, metavar="SLUG", help="The Mood signed in to.")
@click.option("--tier", type=click.Choice(["key", "wiki"]), default="key", show_default=True,
              help="How they signed in.")
@click.option("--label", default="", help="A label for the session (e.g. a device).")
@click.option("--at", "at", metavar="ISO8601", help="When (default: now).")
@click.option("--json", "as_json", is_flag=True, help="Print the new sign-in as JSON.")
@common.now_option
@pass_app
def signin(app: App, handle: str, slug: str, tier: str, label: str, at: str | None,
           as_json: bool) -> None:
    """Record that HANDLE signed in to a Mood."""
    s = app.store.add_signin(handle, slug, common.when(app, at), tier=tier, label=label)
    if as_json:
        from poller.text import iso

        common.echo_json({"id": s.id, "handle": s.who, "mood": s.mood, "tier": s.tier,
                          "label": s.label, "at": iso(s.at)})
        return
    click.echo(s.id)


@click.command()
@click.argument("slug")
@click.option("--as", "sender", required=True, metavar="HANDLE", help="Who is typing.")
@click.option("--json", "as_json", is_flag=True, help="Print the signal as JSON.")
@common.now_option
@pass_app
def typing(app: App, slug: str, sender: str, as_json: bool) -> None:
    """Signal that HANDLE is typing in SLUG: considers there wait 15 s after the newest signal."""
    now = app.now()
    app.store.signal_typing(sender, slug, now)
    if as_json:
        from poller.text import iso

        common.echo_json({"mood": slug, "handle": sender, "at": iso(now)})


COMMANDS = [post, posts, signin, typing]
