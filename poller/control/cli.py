"""``stop``: stop one agent in one Mood, and lift the stop (control's command)."""

from __future__ import annotations

import click

from poller.cli import App, common, pass_app


@click.command()
@click.option("--agent", "handle", required=True, metavar="HANDLE", help="The agent to stop.")
@click.option("--mood", "slug", required=True, metavar="SLUG", help="The Mood to stop it in.")
@click.option("--lift", is_flag=True, help="Lift the stop: it may take turns there again.")
@click.option("--by", metavar="HANDLE", help="Who is stopping it (shown in the Mood).")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON: whether it is stopped, was already, and turns ended.")
@common.now_option
@pass_app
def stop(app: App, handle: str, slug: str, lift: bool, by: str | None, as_json: bool) -> None:
    """Stop one agent in one Mood: end its turn there and hold its wakes there until --lift."""
    from poller import observe

    if lift:
        lifted = observe.lift_stop(app.store, handle, slug, app.now())
        if as_json:
            common.echo_json({"agent": handle, "mood": slug, "stopped": False, "lifted": lifted})
            return
        click.echo(f"{handle} may take turns in {slug} again; what was owed is answered now"
                   if lifted else f"{handle} was not stopped in {slug}")
        return
    done = observe.stop_agent(app.store, handle, slug, by, app.now())
    if as_json:
        common.echo_json({**done, "lifted": False})
        return
    already = " (it already was)" if done["already"] else ""
    click.echo(f"{done['agent']} stopped in {slug}{already}; {done['turns_ended']} running "
               f"turn(s) ended; `mood-poller stop --agent {done['agent']} --mood {slug} --lift` "
               f"resumes")


COMMANDS = [stop]
