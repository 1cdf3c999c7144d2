"""The reply block the away organ accepts, and what settling does for it.

An agent with an activities catalog may end a reply with an ``away`` block
(its ``activity:``, and a ``note:`` on why it goes): the reply just posted is
its goodbye, and the absence starts, for a duration rolled from the catalog
entry.  A real reply to a judgment (a trusted ping while it was out) calls the
absence back instead.  Both run inside the turn's settling; they are declared
to the registry of :mod:`poller.turns.blocks` by :mod:`poller.away.organ`.
"""

from __future__ import annotations

import datetime as dt
import logging
import random
from dataclasses import dataclass

from poller.away import catalog
from poller.store import absences, cycle, turns
from poller.turns import blocks

log = logging.getLogger("poller.runner")

AWAY_KEYS = ("activity", "note")


@dataclass(frozen=True)
class AwayBlock:
    activity: str  # an id of the agent's catalog (checked when applied)
    note: str = ""  # why it goes: seeds its account when it is back


def away_block(body: list[str]) -> AwayBlock:
    """An away block's ``activity:`` (required) and ``note:`` (optional) lines."""
    head: dict[str, str] = {}
    for key, value in blocks.pairs(body, "away"):
        if key not in AWAY_KEYS:
            raise blocks.Refuse(f"unknown line {key + ':'!r} in the away block "
                                "(expected activity:, note:)")
        if key in head:
            raise blocks.Refuse(f"{key}: is given twice in the away block")
        head[key] = value
    activity = head.get("activity", "").strip()
    if not activity:
        raise blocks.Refuse("an away block needs activity: (one of your activities' ids)")
    if not catalog.ID_RE.fullmatch(activity):
        raise blocks.Refuse(f"activity: {activity[:60]!r} is not an activity id")
    note = head.get("note", "").strip()
    if len(note) > blocks.MAX_NOTE_CHARS:
        raise blocks.Refuse(f"note is {len(note)} characters; the limit is {blocks.MAX_NOTE_CHARS}")
    return AwayBlock(activity, note)


def _entry(agent, activity: str):
    """The catalog entry and its catalog, or the reason the block is refused."""
    try:
        cat = catalog.of(agent, strict=True)
    except catalog.CatalogError as exc:  # the why is for operators, not for the Mood
        log.error("%s's away block: %s", agent.handle, exc,
                  extra={"action": "catalog_invalid", "agent": agent.handle})
        return None, "your activities catalog is invalid just now (the poller's log says why)"
    if cat is None:
        return None, ("you have no activities catalog, so there is nowhere to go (an operator "
                      "gives one with `mood-poller agent set --activities FILE`)")
    entry = cat.entry(activity)
    if entry is None:
        return None, (f"there is no activity {activity!r} in your catalog "
                      f"(yours: {', '.join(cat.ids)})")
    return (entry, cat), ""


def apply_away(s, counter, turn: turns.Ending, block: AwayBlock, now: dt.datetime) -> str:
    """Start the absence the block asks for, after the reply just posted (its goodbye);
    or the reason it is refused.  The duration is rolled from the catalog entry."""
    cycle.lock_agent(s, turn.agent_id)  # one absence at a time, whichever turn asks first
    if absences.active_for(s, turn.agent_id) is not None:
        return "you are away from the screen already"
    agent = turns.agent_of(s, turn.agent_id)
    found, why = _entry(agent, block.activity)
    if found is None:
        return why
    entry, cat = found
    minutes = random.randint(*entry.duration)
    going = absences.Going(entry.id, entry.label, entry.seed, entry.reachable,
                       cat.archive_after_minutes, cat.catch_up_limit)
    absence = absences.start(s, agent_id=turn.agent_id, mood_id=turn.mood_id, going=going,
                         note=block.note, minutes=minutes, post_id=turn.reply_post_id,
                         wake_id=turn.id, now=now)
    log.info("%s went out: %s for %d minutes", agent.handle, entry.label, minutes,
             extra={"action": "absence_started", "wake_id": turn.id, "activity_id": absence.id,
                    "activity": entry.id, "minutes": minutes})
    return ""


def come_back_if_called(s, counter, turn: turns.Ending, posted: bool, now: dt.datetime) -> None:
    """A real reply to a judgment (a trusted ping while the agent was out) cuts the
    absence short: it comes back now.  A silent one keeps it out."""
    if not posted:
        return
    judged = absences.judgment_of(s, turn.id)
    if judged is not None:
        absences.call_back(s, *judged, now)
        log.info("wake %s: a reply to a judgment, so the absence is cut short", turn.id,
                 extra={"action": "absence_cut_short", "wake_id": turn.id,
                        "activity_id": judged[0]})
