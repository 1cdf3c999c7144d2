"""``person add | list`` and ``agent add | list``."""

from __future__ import annotations

import click

from poller.cli import App, common, pass_app
from poller.text import utcnow


@click.group()
def person() -> None:
    """Add people and set how far they are trusted."""


@person.command("add")
@click.argument("handle")
@click.option("--trust", type=click.Choice(["full", "look", "none"]), default="look",
              show_default=True, help="full: may wake full-tool turns; look: look-only; "
              "none: a mention is just text.")
@pass_app
def person_add(app: App, handle: str, trust: str) -> None:
    """Add the person HANDLE."""
    p = app.store.add_person(handle, trust, utcnow())
    click.echo(f"added person {p.handle} (trust {p.trust})")


@person.command("trust")
@click.argument("handle")
@click.argument("level", type=click.Choice(["full", "look", "none"]))
@pass_app
def person_trust(app: App, handle: str, level: str) -> None:
    """Change how far HANDLE is trusted."""
    p = app.store.set_trust(handle, level)
    click.echo(f"{p.handle} now has trust {p.trust}")


@person.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def person_list(app: App, as_json: bool) -> None:
    """List people."""
    people = app.store.people()
    if as_json:
        common.echo_json([p.to_json() for p in people])
        return
    common.table([[p.handle, p.trust] for p in people], ["HANDLE", "TRUST"])


@click.group()
def agent() -> None:
    """Add agents and say how each is woken."""


@agent.command("add")
@click.argument("handle")
@click.option("--command", "command", metavar="CMD",
              help="Run CMD (through the shell) with the wake on stdin; stdout is the reply.")
@click.option("--timeout", type=float, metavar="SECONDS",
              help="Kill a turn after this long (default: 900 s look-only, no limit with full tools).")
@click.option("--workdir", type=click.Path(file_okay=False), help="Working directory of the turn.")
@pass_app
def agent_add(app: App, handle: str, command: str | None, timeout: float | None,
              workdir: str | None) -> None:
    """Add the agent HANDLE and how it is woken."""
    a = app.store.add_agent(handle, utcnow(), waker="command", command=command,
                            timeout=timeout, workdir=workdir)
    click.echo(f"added agent {a.handle} ({a.waker})")


@agent.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def agent_list(app: App, as_json: bool) -> None:
    """List agents and their wakers."""
    agents = app.store.agents()
    if as_json:
        common.echo_json([a.to_json() for a in agents])
        return
    common.table([[a.handle, a.waker, a.command or a.url or "",
                   f"{a.timeout:g}s" if a.timeout else "default"] for a in agents],
                 ["HANDLE", "WAKER", "TARGET", "TIMEOUT"])


COMMANDS = [person, agent]
