"""Away and back's tool for a model agent's turn: ``go_away`` writes an ``away`` block
(:mod:`poller.away.replies`), read by the block registry's parser and applied at
settling like a block written by hand (see :mod:`poller.tools.acting`); offered only
to an agent with an activities catalog.  Declared to :mod:`poller.tools` by
:mod:`poller.away.organ`.
"""

from __future__ import annotations

from poller.away import catalog
from poller.store import absences, turns
from poller.tools import acting
from poller.tools.registry import Tool, ToolError, ToolSpec, Toolbox, register, schema


# -- go_away -------------------------------------------------------------------------------


def _catalog(box: Toolbox):
    def make():
        with box.store.reading() as s:
            return catalog.of(turns.agent_of(s, box.agent_id))
    return box.cached("catalog", make)


def _no_catalog(box: Toolbox) -> str:
    return "" if _catalog(box) is not None else "you have no activities catalog"


def go_away(box: Toolbox, args: dict) -> str:
    text = acting.block("away", [("activity", args["activity"]),
                                 ("note", args.get("note") or "")])
    a = acting.accept(box, "away", text)
    cat = _catalog(box)
    entry = cat.entry(a.activity)
    if entry is None:  # what apply_away refuses, in its words
        raise ToolError(f"there is no activity {a.activity!r} in your catalog "
                        f"(yours: {', '.join(cat.ids)})")
    with box.store.reading() as s:
        if absences.active_for(s, box.agent_id) is not None:
            raise ToolError("you are away from the screen already")
    return acting.keep(box, "away", text,
                       f"you go {entry.label} after your reply, which is your goodbye")


register(Tool(ToolSpec(
    "go_away",
    "Step away from the screen for one of your activities: your reply is your goodbye, and "
    "you are out for a while after it is posted.",
    schema({"activity": {"type": "string",
                         "description": "one of your activities' ids (your wake lists them)"},
            "note": {"type": "string", "description": "why you go (one line, optional)"}},
           ("activity",)),
    acting=True), go_away, offered=_no_catalog,
    tailor=lambda box, spec: acting.told(spec, "Yours: " + "; ".join(
        f"{e.id} ({e.label}, {e.duration[0]}-{e.duration[1]} minutes)"
        for e in _catalog(box).entries) + ".")))
