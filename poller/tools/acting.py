"""The acting tools: each writes one reply block, exactly as the agent could by hand.

``handoff``, ``change_settings``, ``set_alarm``, ``go_away`` and ``checkin``
build the text of a ```` ```handoff ````, ```` ```settings ````,
```` ```alarm ````, ```` ```away ```` or ```` ```checkin ```` block from their
arguments and run it through the block registry's parser
(:func:`poller.turns.blocks.parse`) with the turn's tools: a block it refuses
is the model's error, with the parser's reason; one it accepts is kept in
:attr:`poller.tools.Toolbox.blocks`, applied when the reply is posted, by the
kind's own applier at settling.  What an applier would refuse that can be
told before the reply (an alarm that never fires, a Mood that does not exist, an
activity not in the catalog) is told now, with the applier's words; settling
checks it all again.  No acting tool writes the store.

A reply carries one block of each kind, so each tool is accepted once a turn.
"""

from __future__ import annotations

import dataclasses
import unicodedata
from typing import Any

from poller import errors, settings
from poller.away import catalog
from poller.schedules import alarms, timing
from poller.store import absences, reads, turns
from poller.tools.registry import Tool, ToolError, ToolSpec, Toolbox, register, schema
from poller.turns import blocks
from poller.wake import lines

FENCE = "```"


def _one_line(key: str, value: str) -> str:
    """*value* as one ``key: value`` line may hold it; ToolError if it cannot."""
    if len(value.splitlines()) > 1 or any(unicodedata.category(c) in ("Cc", "Zl", "Zp")
                                          for c in value if c != "\t"):
        raise ToolError(f"{key} must be one line of text (no line breaks or control characters)")
    return value.strip()


def _block(kind: str, head: list[tuple[str, str]], body: str | None = None) -> str:
    out = [FENCE + kind] + [f"{k}: {_one_line(k, v)}" for k, v in head if v != ""]
    if body is not None:
        out += ["---", body.strip()]
    return "\n".join(out + [FENCE])


def _accept(box: Toolbox, kind: str, text: str) -> Any:
    """The block's value as the parser reads it, or ToolError with its refusal."""
    if kind in box.block_kinds:
        a = "an" if kind[0] in "aeiou" else "a"
        raise ToolError(f"{a} {kind} block was already accepted this turn, and a reply carries "
                        f"one {kind} block")
    parsed = blocks.parse(text, tools=box.tools)
    for r in parsed.refused:
        raise ToolError(r.reason)
    value = parsed.get(kind)
    if value is None or parsed.text:
        raise ToolError(f"the {kind} block could not be written whole (a line of ``` in the "
                        "text ends it early)")
    return value


def _keep(box: Toolbox, kind: str, text: str, done: str) -> str:
    box.blocks.append(text)
    box.block_kinds.append(kind)
    return f"ok: {done}; it is applied when your reply is posted (a refusal then is said there)."


def _told(spec: ToolSpec, more: str) -> ToolSpec:
    """*spec* with this turn's choices added to its description (as one safe line)."""
    return dataclasses.replace(spec, description=f"{spec.description} {lines.one_line(more, 600)}")


# -- handoff -------------------------------------------------------------------------------


def handoff(box: Toolbox, args: dict) -> str:
    text = _block("handoff", [("to", args["to"]), ("about", args["about"]),
                              ("for", args.get("for_agent") or "")], args["context"])
    h = _accept(box, "handoff", text)
    if h.context != args["context"].strip():
        raise ToolError("the handoff block could not be written whole (a line of ``` in the "
                        "context ends it early; give code fences a language, ```text)")
    with box.store.reading() as s:  # what apply_handoff refuses, in its words
        other = turns.mood_named(s, h.mood)
        if other is None:
            raise ToolError(f"there is no Mood {h.mood!r}")
        if other.id == box.mood_id:
            raise ToolError("a handoff must name another Mood, not this one")
        if other.archived:
            raise ToolError(f"the Mood {h.mood!r} is archived")
        if h.for_agent:
            agent = turns.participant_named(s, h.for_agent)
            if agent is None or agent.kind != "agent":
                raise ToolError(f"there is no agent {h.for_agent!r}")
    whom = f" for @{h.for_agent}" if h.for_agent else ""
    return _keep(box, "handoff", text, f"context handed to the Mood {h.mood!r}{whom}")


register(Tool(ToolSpec(
    "handoff",
    "Hand context from this Mood to another Mood (optionally for one agent there): it is "
    "posted there when your reply is posted, and that agent is woken to look at it.",
    schema({"to": {"type": "string", "description": "the other Mood's slug"},
            "about": {"type": "string",
                      "description": f"a few words on what it is about (at most "
                                     f"{blocks.MAX_ABOUT_CHARS} characters)"},
            "context": {"type": "string",
                        "description": f"the context itself (at most "
                                       f"{blocks.MAX_CONTEXT_CHARS:,} characters)"},
            "for_agent": {"type": ["string", "null"],
                          "description": "the handle of the agent there it is for (none: anyone)"}},
           ("to", "about", "context")),
    acting=True), handoff))


# -- change_settings -----------------------------------------------------------------------


def _setting_value(key: str, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ToolError(f"the value of {str(key)[:40]} must be a string or a number")
    return str(value)


def change_settings(box: Toolbox, args: dict) -> str:
    changes = args["settings"]
    head = [(str(k).lower(), _setting_value(k, v)) for k, v in changes.items()]
    if not head:
        raise ToolError("the settings block sets nothing")
    for key, _ in head:
        if key == "note" or not blocks.LINE_RE.match(f"{key}: x"):
            raise ToolError(f"unknown setting {key[:40]!r} (a reply may set: "
                            f"{', '.join(settings.AGENT_SETTABLE)})")
    note = args.get("note") or ""
    text = _block("settings", head + [("note", note)])
    block = _accept(box, "settings", text)
    shown = ", ".join(f"{k} = {v}" for k, v in block.changes.items())
    return _keep(box, "settings", text, f"{shown} here for you")


register(Tool(ToolSpec(
    "change_settings",
    "Change your own settings in this Mood (" + ", ".join(settings.AGENT_SETTABLE) + ").",
    schema({"settings": {"type": "object",
                         "description": "setting name -> new value",
                         "properties": {k: {"type": ["string", "integer"],
                                            "description": settings.KEYS[k].help}
                                        for k in settings.AGENT_SETTABLE},
                         "additionalProperties": False},
            "note": {"type": "string", "description": "why (one line, optional)"}},
           ("settings",)),
    acting=True), change_settings))


# -- set_alarm -----------------------------------------------------------------------------


def set_alarm(box: Toolbox, args: dict) -> str:
    head = [(k, args.get(k) or "") for k in ("at", "daily", "cron", "tz", "note")]
    text = _block("alarm", head)
    a = _accept(box, "alarm", text)
    try:  # what the applier refuses before it adds the alarm (agreements.alarm)
        alarms.check_note(a.note)
        first = timing.first_firing(timing.Spec(a.kind, a.when, a.tz), box.clock(),
                                    "an alarm must be in the future")
    except errors.UserError as exc:
        raise ToolError(str(exc).replace("--", "")) from None
    return _keep(box, "alarm", text, f"an alarm {a.kind} {a.when} {a.tz}, first due "
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


# -- go_away -------------------------------------------------------------------------------


def _catalog(box: Toolbox):
    def make():
        with box.store.reading() as s:
            return catalog.of(turns.agent_of(s, box.agent_id))
    return box.cached("catalog", make)


def _no_catalog(box: Toolbox) -> str:
    return "" if _catalog(box) is not None else "you have no activities catalog"


def go_away(box: Toolbox, args: dict) -> str:
    text = _block("away", [("activity", args["activity"]), ("note", args.get("note") or "")])
    a = _accept(box, "away", text)
    cat = _catalog(box)
    entry = cat.entry(a.activity)
    if entry is None:  # what apply_away refuses, in its words
        raise ToolError(f"there is no activity {a.activity!r} in your catalog "
                        f"(yours: {', '.join(cat.ids)})")
    with box.store.reading() as s:
        if absences.active_for(s, box.agent_id) is not None:
            raise ToolError("you are away from the screen already")
    return _keep(box, "away", text, f"you go {entry.label} after your reply, which is your "
                                    "goodbye")


register(Tool(ToolSpec(
    "go_away",
    "Step away from the screen for one of your activities: your reply is your goodbye, and "
    "you are out for a while after it is posted.",
    schema({"activity": {"type": "string",
                         "description": "one of your activities' ids (your wake lists them)"},
            "note": {"type": "string", "description": "why you go (one line, optional)"}},
           ("activity",)),
    acting=True), go_away, offered=_no_catalog,
    tailor=lambda box, spec: _told(spec, "Yours: " + "; ".join(
        f"{e.id} ({e.label}, {e.duration[0]}-{e.duration[1]} minutes)"
        for e in _catalog(box).entries) + ".")))


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
    text = _block("checkin", [("quote", args["quote"]), ("for", person)])
    c = _accept(box, "checkin", text)
    people = _people(box)
    if c.person:  # whose agreement, as agreements.checkin picks it
        people = [p for p in people if p.lower() == c.person.lower()]
    if len(people) != 1:
        raise ToolError(f"there is no active check-in agreement for {c.person} with you in this "
                        "Mood" if not people else
                        "several people have agreements here: say whose with for_person")
    return _keep(box, "checkin", text, f"a check-in for {people[0]} (it counts if the quote "
                                       "is their own words from a post this turn answers)")


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
    tailor=lambda box, spec: _told(spec, "Agreements here: " + ", ".join(_people(box)) + ".")))
