"""``stop``: stop one agent in one Mood, and lift the stop (control's command)."""

from __future__ import annotations

import click

from poller.cli import App, common, pass_app


@click.command()
@click.argument("handle_arg", metavar="[HANDLE SLUG]", required=False)
@click.argument("slug_arg", metavar="", required=False)
@click.option("--agent", "handle", metavar="HANDLE", help="The agent to stop (or give HANDLE).")
@click.option("--mood", "slug", metavar="SLUG", help="The Mood to stop it in (or give SLUG).")
@click.option("--lift", is_flag=True, help="Lift the stop: it may take turns there again.")
@click.option("--by", metavar="HANDLE", help="Who is stopping it (shown in the Mood).")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON: whether it is stopped, was already, and turns ended.")
@common.now_option
@pass_app
def stop(app: App, handle_arg: str | None, slug_arg: str | None, handle: str | None,
         slug: str | None, lift: bool, by: str | None, as_json: bool) -> None:
    """Stop one agent in one Mood: end its turn there and hold its wakes there until --lift.

    Name them as HANDLE SLUG (as `why` does) or as --agent HANDLE --mood SLUG.
    """
    from poller import observe

    handle = common.one_of(handle_arg, handle, "HANDLE", "--agent")
    slug = common.one_of(slug_arg, slug, "SLUG", "--mood")

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
