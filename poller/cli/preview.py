"""``preview``: the wake a kind would send now, or every frame with placeholders."""

from __future__ import annotations

import click

from poller.cli import App, common, pass_app

# What `--kind` offers: the kinds a Mood's real posts make on their own.  Not a
# cut-off's follow-up, a person's slash command (not composed) or a return (it
# carries an absence's pings), nor a scheduled wake (it comes from its alarm or
# agreement): `preview --frames` shows those.  Read without loading the poller.
KINDS = ["mention", "arrival", "consider", "quiet", "nudge"]


@click.command()
@click.option("--mood", "slug", metavar="SLUG", help="The Mood to preview.")
@click.option("--agent", "handle", metavar="HANDLE", help="The agent it would wake.")
@click.option("--kind", type=click.Choice(KINDS), help="Which kind of wake.")
@click.option("--full", is_flag=True, help="As a full-tool turn (shows the settings how-to).")
@click.option("--frames", is_flag=True,
              help="Print every frame with placeholders instead (what agents are told).")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON: the wake's text, kind, tools and the posts it answers "
                   "(with --frames: the frames' text).")
@common.now_option
@pass_app
def preview(app: App, slug: str | None, handle: str | None, kind: str | None, full: bool,
            frames: bool, as_json: bool) -> None:
    """Print the wake KIND would send now, from the Mood's real posts."""
    from poller.cycle import organs
    from poller.wake import compose

    organs.load()
    if frames:
        text = compose.render_frames(app.config.wake)
        if as_json:
            common.echo_json({"frames": text})
        else:
            click.echo(text, nl=False)
        return
    missing = [o for o, v in (("--mood", slug), ("--agent", handle), ("--kind", kind)) if not v]
    if missing:
        raise click.UsageError(f"preview needs {', '.join(missing)} (or --frames)")
    from poller.cycle import loop
    from poller.preview import preview as preview_now
    from wiki_rules.source import DialSource

    at = app.now()
    dials = DialSource.from_config(app.config, app.engine())
    poller = loop.Poller(app.store, app.config, dials=dials.current)
    planned = preview_now(poller, slug, handle, kind, at, full)
    if as_json:
        common.echo_json({"mood": planned.mood, "agent": planned.agent, "kind": planned.kind,
                          "tools": planned.tools, "answers": list(planned.answers),
                          "text": planned.text})
        return
    common.echo(planned.text)


COMMANDS = [preview]
