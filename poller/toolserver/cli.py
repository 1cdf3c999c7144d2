"""``mcp``, ``approve``, ``deny`` and ``approvals``: the tool server's commands."""

from __future__ import annotations

import os
import sys

import click

from poller.cli import App, common, pass_app


@click.command()
@pass_app
def mcp(app: App) -> None:
    """Serve the Moods as MCP tools over stdin and stdout.

    With MOOD_TURN_TOKEN (a running turn's, which the poller hands each turn) it acts
    as that turn's agent in its Mood and tools tier; with MOOD_POLLER_TOKEN (a person's
    API token, `mood-poller person token HANDLE`) it reads every Mood that person may
    read and posts as them.  Under `serve` the same server answers at /mcp.
    """
    from poller import errors
    from poller.toolserver import server

    try:
        caller = server.caller_from_env(dict(os.environ), lambda: app.store, app.clock)
    except errors.UserError as exc:
        click.echo(f"mood-poller mcp: {exc}", err=True)
        sys.exit(78 if "no token" in str(exc) else 1)
    server.serve_stdio(caller)


def _decide(app: App, approval_id: int, approve: bool, reason: str, by: str | None,
            as_json: bool) -> None:
    from poller.store import capabilities

    person = None
    if by:
        person = capabilities.person_id(app.store, by)
        if person is None:
            raise click.UsageError(f"no person {by!r}")
    a = capabilities.decide(app.store, approval_id, approve, app.now(), person_id=person,
                            via="cli", reason=reason)
    if as_json:
        common.echo_json(a.to_json())
        return
    click.echo(f"approval {a.id} ({a.agent} in {a.mood}: {a.tool}) {a.status}")


_by = click.option("--by", metavar="HANDLE",
                   help="Who answers (a person with trust full); default: an operator.")
_json = click.option("--json", "as_json", is_flag=True, help="Print the request as JSON.")


@click.command()
@click.argument("approval_id", type=common.WHOLE, metavar="ID")
@_by
@_json
@common.now_option
@pass_app
def approve(app: App, approval_id: int, by: str | None, as_json: bool) -> None:
    """Approve the tool a turn asked to use (ID: the number in its notice)."""
    _decide(app, approval_id, True, "", by, as_json)


@click.command()
@click.argument("approval_id", type=common.WHOLE, metavar="ID")
@click.option("--reason", default="", help="Why, for the agent to read.")
@_by
@_json
@common.now_option
@pass_app
def deny(app: App, approval_id: int, reason: str, by: str | None, as_json: bool) -> None:
    """Deny the tool a turn asked to use (ID: the number in its notice)."""
    _decide(app, approval_id, False, reason, by, as_json)


@click.command()
@click.option("--mood", "slug", metavar="SLUG", help="Only this Mood.")
@click.option("--wake", "wake_id", type=common.WHOLE, help="Every request of this wake.")
@_json
@pass_app
def approvals(app: App, slug: str | None, wake_id: int | None, as_json: bool) -> None:
    """Requests to use a tool waiting for an answer (or every one of a wake)."""
    from poller import text
    from poller.store import capabilities

    found = (capabilities.approvals_of(app.store, wake_id) if wake_id is not None
             else capabilities.pending_in(app.store, slug))
    if as_json:
        common.echo_json([a.to_json() for a in found])
        return
    for a in found:
        by = f" by {a.decided_by or 'an operator'} ({a.via})" if a.decided_at and a.via in (
            "post", "page", "cli", "matrix") else ""
        click.echo(f"#{a.id} {a.agent} in {a.mood} asks for {a.tool}: {a.shown} "
                   f"[{a.status}{by}, asked {text.when(a.asked_at)}]")
    if not found:
        click.echo("mood-poller: note: no request is waiting", err=True)


COMMANDS = [mcp, approve, deny, approvals]
