"""A tiny organ the suite defines to show a kind of wake added from outside the core.

It declares one kind, ``tea`` (the kettle has boiled: a look-only wake that
offers the agent a break), with a template of its own in this folder, and
keeps its due time in the listener's marks.  Nothing outside this package
knows of it: :func:`declare` declares the kind (as an organ's module does when
it is loaded), :func:`order` makes it due.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from poller import kinds
from poller.cycle import drafts, due
from poller.kinds import KindSpec
from poller.store import cycle
from poller.wake import lines

HERE = Path(__file__).parent
BREWS = {1: "green tea", 2: "a pot of rooibos"}


def order(store, agent_id: int, mood_id: int, at: dt.datetime, brew: int = 1) -> None:
    """Put the kettle on: a tea wake is due for the agent in the Mood at *at*."""
    with store.writing() as s:
        cycle.mark(s, agent_id, mood_id, "tea", at, brew)


def brewed(g: drafts.Gathering) -> drafts.Material:
    m = drafts.lately(g)
    ref = cycle.marks_of(g.l)["tea"][1]
    m.parts = {"parts": {"brew": lines.one_line(BREWS.get(ref, "tea"), 80)}}
    return m


TEA = KindSpec(
    "tea", 85, unprompted=False, due_at=due.marked("tea"), schedule="free",
    gather=brewed, after_wake=due.unmark("tea"), after_skip=due.unmark("tea"),
    templates=str(HERE), frames=(("look", ""),),
    placeholders=lambda: {"parts": {"brew": "«what is brewing»"}})


def declare() -> KindSpec:
    return kinds.register(TEA)
