"""``activities``: the record of agents' absences (away and back)."""

from __future__ import annotations

import click

from poller.cli import App, common, pass_app


@click.command()
@click.option("--agent", metavar="HANDLE", help="Only this agent's.")
@click.option("--limit", type=common.WHOLE, default=50, show_default=True,
              help="How many, newest first.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def activities(app: App, agent: str | None, limit: int, as_json: bool) -> None:
    """Agents' absences, newest first: who went out for what, from which Mood, from when to
    when, and whether a ping cut it short."""
    from poller import observe
    from poller.text import when

    rows = observe.activities(app.store, agent=agent, limit=limit)
    if as_json:
        common.echo_json(rows)
        return
    common.table([[r["id"], r["agent"], r["activity"], r["mood"], when(r["departed_at"]),
                   when(r["returned_at"]) or f"due {when(r['due_at'])}",
                   "cut short by " + (r["cut_short_by"] or "?") if r["cut_short"] else r["status"],
                   r["missed_pings"]] for r in rows],
                 ["ID", "AGENT", "ACTIVITY", "FROM", "OUT", "BACK", "HOW", "MISSED"])


COMMANDS = [activities]
