"""The schedules' tools for a model agent's turn: ``set_alarm`` writes an ``alarm``
block, ``checkin`` a ``checkin`` block (:mod:`poller.schedules.replies`), each read by
the block registry's parser and applied at settling like a block written by hand
(see :mod:`poller.tools.acting`).  Declared to :mod:`poller.tools` by
:mod:`poller.schedules.organ`.
"""

from __future__ import annotations

from poller import errors
from poller.schedules import alarms, timing
from poller.store import reads
from poller.tools import acting
from poller.tools.registry import Tool, ToolError, ToolSpec, Toolbox, register, schema
from poller.turns import blocks


# -- set_alarm -----------------------------------------------------------------------------


def set_alarm(box: Toolbox, args: dict) -> str:
    head = [(k, args.get(k) or "") for k in ("at", "daily", "cron", "tz", "note")]
    text = acting.block("alarm", head)
    a = acting.accept(box, "alarm", text)
    try:  # what the applier refuses before it adds the alarm (agreements.alarm)
        alarms.check_note(a.note)
        first = timing.first_firing(timing.Spec(a.kind, a.when, a.tz), box.clock(),
                                    "an alarm must be in the future")
    except errors.UserError as exc:
        raise ToolError(str(exc).replace("--", "")) from None
    return acting.keep(box, "alarm", text, f"an alarm {a.kind} {a.when} {a.tz}, first due "
                       f"{timing.shown(first, a.tz)}")


register(Tool(ToolSpec(
    "set_alarm",
    "Ask for a wake of your own in this Mood at a time: once (at), every day (daily) or by "
    "a cron expression, in an IANA time zone; give exactly one of at, daily, cron.",
    schema({"at": {"type": "string", "description": "a local date and time 'YYYY-MM-DD HH:MM'"},
            "daily": {"type": "string", "description": "a local time of day 'HH:MM'"},
            "cron": {"type": "string",
                     "description": "five fields: minute hour day-of-month month day-of-week"},
            "tz": {"type": "string", "description": "an IANA zone such as Europe/Berlin, or UTC"},
            "note": {"type": "string",
                     "description": f"what the wake is for (at most {blocks.MAX_NOTE_CHARS} "
                                    "characters)"}},
           ("tz",)),
    acting=True), set_alarm))


# -- checkin -------------------------------------------------------------------------------


def _people(box: Toolbox) -> list[str]:
    def make():
        with box.store.reading() as s:
            return reads.checkin_people(s, box.agent_id, box.mood_id)
    return box.cached("checkins", make)


def _no_agreement(box: Toolbox) -> str:
    return "" if _people(box) else "no one has an active check-in agreement with you here"


def checkin(box: Toolbox, args: dict) -> str:
    person = (args.get("for_person") or "").strip().lstrip("@")
    text = acting.block("checkin", [("quote", args["quote"]), ("for", person)])
    c = acting.accept(box, "checkin", text)
    people = _people(box)
    if c.person:  # whose agreement, as agreements.checkin picks it
        people = [p for p in people if p.lower() == c.person.lower()]
    if len(people) != 1:
        raise ToolError(f"there is no active check-in agreement for {c.person} with you in this "
                        "Mood" if not people else
                        "several people have agreements here: say whose with for_person")
    return acting.keep(box, "checkin", text, f"a check-in for {people[0]} (it counts if the "
                       "quote is their own words from a post this turn answers)")


register(Tool(ToolSpec(
    "checkin",
    "Count a person's own words, from a post this turn answers, as their check-in under "
    "their check-in agreement with you.",
    schema({"quote": {"type": "string", "description": "the person's own words, from their post"},
            "for_person": {"type": ["string", "null"],
                           "description": "whose agreement (needed when several people have "
                                          "one here)"}},
           ("quote",)),
    acting=True), checkin, offered=_no_agreement,
    tailor=lambda box, spec: acting.told(spec, "Agreements here: "
                                         + ", ".join(_people(box)) + ".")))
