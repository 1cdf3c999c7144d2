"""The acting tools: each writes one reply block, exactly as the agent could by hand.

The core's own, ``handoff`` and ``change_settings``, are here; each organ
declares its own next to its blocks (``set_alarm`` and ``checkin`` in
:mod:`poller.schedules.tools`, ``go_away`` in :mod:`poller.away.tools`), with the
helpers here.  Each builds the text of its block (```` ```handoff ````,
```` ```settings ````, ```` ```alarm ````...) from its
arguments and runs it through the block registry's parser
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

from poller import settings
from poller.store import turns
from poller.tools.registry import Tool, ToolError, ToolSpec, Toolbox, register, schema
from poller.turns import blocks
from poller.wake import lines

FENCE = "```"


def one_line_value(key: str, value: str) -> str:
    """*value* as one ``key: value`` line may hold it; ToolError if it cannot."""
    if len(value.splitlines()) > 1 or any(unicodedata.category(c) in ("Cc", "Zl", "Zp")
                                          for c in value if c != "\t"):
        raise ToolError(f"{key} must be one line of text (no line breaks or control characters)")
    return value.strip()


def block(kind: str, head: list[tuple[str, str]], body: str | None = None) -> str:
    out = [FENCE + kind] + [f"{k}: {one_line_value(k, v)}" for k, v in head if v != ""]
    if body is not None:
        out += ["---", body.strip()]
    return "\n".join(out + [FENCE])


def accept(box: Toolbox, kind: str, text: str) -> Any:
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


def keep(box: Toolbox, kind: str, text: str, done: str) -> str:
    box.blocks.append(text)
    box.block_kinds.append(kind)
    return f"ok: {done}; it is applied when your reply is posted (a refusal then is said there)."


def told(spec: ToolSpec, more: str) -> ToolSpec:
    """*spec* with this turn's choices added to its description (as one safe line)."""
    return dataclasses.replace(spec, description=f"{spec.description} {lines.one_line(more, 600)}")


# -- handoff -------------------------------------------------------------------------------


def handoff(box: Toolbox, args: dict) -> str:
    text = block("handoff", [("to", args["to"]), ("about", args["about"]),
                              ("for", args.get("for_agent") or "")], args["context"])
    h = accept(box, "handoff", text)
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
    return keep(box, "handoff", text, f"context handed to the Mood {h.mood!r}{whom}")


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
    text = block("settings", head + [("note", note)])
    value = accept(box, "settings", text)
    shown = ", ".join(f"{k} = {v}" for k, v in value.changes.items())
    return keep(box, "settings", text, f"{shown} here for you")


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
