"""What people tell an agent that the service carries out, not the agent.

``@agent stop`` from a person with trust ``full`` stops the agent in that Mood
(its running turn there ends, its wakes there wait) as ``mood-poller stop``
does, and ``@agent resume`` lifts it.  The post is a command, not a question:
nobody owes it an answer.  From anyone else it is refused in one line.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Optional

from poller.cycle import recover
from poller.kinds import ParticipantKind, Trust
from poller.store import cycle, turns

COMMAND = re.compile(r"^\s*@([\w.-]+)[\s,:]+(stop|resume)\s*[.!]?\s*$", re.IGNORECASE)


def parse(body: str) -> Optional[tuple[str, str]]:
    """``(handle, verb)`` when the whole post is a command, else None."""
    m = COMMAND.match(body)
    return (m.group(1).lower(), m.group(2).lower()) if m else None


def carry_out(ctx, s, r, addressed: set[int], listeners: dict, now: dt.datetime) -> set[int]:
    """Carry out a command in post *r*; the agents it named (their mention is not owed)."""
    if r.sender_kind != ParticipantKind.PERSON or not addressed:
        return set()
    said = parse(cycle.post_text(s, r.id))
    if said is None:
        return set()
    handle, verb = said
    target = next((a for a in addressed if ctx.agents[a].handle.lower() == handle), None)
    if target is None:
        return set()
    agent, who = ctx.agents[target].handle, turns.handle_of(s, r.sender_id)
    l = listeners[(target, r.mood_id)]
    if r.sender_trust != Trust.FULL:
        note = (f"@{who}: only a person with trust full can {verb} @{agent} here "
                f"(yours is {r.sender_trust}).")
    elif verb == "stop":
        note = _stop(ctx, s, l, agent, who, now)
    else:
        note = _resume(l, agent, now)
    if note:
        cycle.add_system_post(s, r.mood_id, target, note, now, ctx.counter.count(note))
    return {target}


def _stop(ctx, s, l, agent: str, who: str, now: dt.datetime) -> Optional[str]:
    from poller import observe

    for w in cycle.turns_here(s, l.agent_id, l.mood_id):
        recover.stop_turn(ctx.counter, s, w, f"stopped by {who}", now)
    if l.stopped_at is not None:
        return None
    l.stopped_at, l.stopped_by, l.due_at = now, who[:64], now
    return observe.stopped_note(agent, who)


def _resume(l, agent: str, now: dt.datetime) -> Optional[str]:
    from poller import observe

    if l.stopped_at is None:
        return None
    l.stopped_at, l.stopped_by, l.due_at = None, None, now
    return observe.resumed_note(agent)
