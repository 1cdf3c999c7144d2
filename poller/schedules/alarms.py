"""Alarms: an agent, a person or an operator asks for a wake at a time.

An alarm is ``at`` one local date and time, ``daily`` at a local time, or a
five-field ``cron`` expression, always in an IANA zone (:mod:`poller.schedules.timing`).
When it is due the poller gives the agent one ``alarm`` wake carrying the
note and when it was due (:mod:`poller.schedules.scheduled`).  A poller that was down
across several firings sends **one** late wake saying how late it is and how
many firings it covers; past the alarm's lateness cutoff that wake only says
it was noticed late.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Optional

from poller.schedules import checkins, timing
from poller import errors, text
from poller.store import schedules

MAX_NOTE_CHARS = 500
DEFAULT_CUTOFF_MINUTES = 60


@dataclass(frozen=True)
class Firing:
    """What one alarm wake covers: the oldest firing it answers, how many, and what next."""

    due: dt.datetime
    newest: dt.datetime
    count: int
    late: bool  # past the lateness cutoff: it only says it was noticed late
    next_at: Optional[dt.datetime]


def check_note(note: str) -> str:
    note = text.check_utf8(note or "", "--note").strip()
    if len(note) > MAX_NOTE_CHARS:
        raise errors.UserError(f"the note is {len(note)} characters; the limit is {MAX_NOTE_CHARS}")
    if any(ord(c) < 0x20 and c not in "\n\t" for c in note):
        raise errors.UserError("the note holds a control character")
    return note


def spec_of(row) -> timing.Spec:
    return timing.Spec(row.kind, row.spec, row.tz)


def firing(row, now: dt.datetime) -> Firing:
    """The firings from ``next_at`` up to *now*, as one wake, and the next one after."""
    spec = spec_of(row)
    covered = [row.next_at] + spec.between(row.next_at, now)
    return Firing(covered[0], covered[-1], len(covered),
                  checkins.late(covered[0], now, row.lateness_cutoff_minutes), spec.next(now))


def add(s, *, agent_id: int, mood_id: int, kind: str, when: str, tz: str, note: str,
        set_by: str, now: dt.datetime,
        cutoff: int = DEFAULT_CUTOFF_MINUTES) -> tuple[object, list[str]]:
    """Add an alarm in session *s*; the row and the DST warnings for the coming year."""
    spec = timing.Spec.make(kind, when, tz)
    checkins.check_minutes(cutoff, "--lateness-cutoff-minutes", checkins.CUTOFF_RANGE)
    first = timing.first_firing(spec, now, "an alarm must be in the future")
    row = schedules.add_alarm(s, agent_id=agent_id, mood_id=mood_id, kind=spec.kind, spec=spec.text,
                         tz=spec.tz, note=check_note(note), set_by=set_by,
                         lateness_cutoff_minutes=cutoff, created_at=now, next_at=first)
    return row, timing.warnings(spec, now)


def view(row, agent: str, mood: str) -> dict:
    return {"id": row.id, "agent": agent, "mood": mood, "kind": row.kind, "spec": row.spec,
            "tz": row.tz, "note": row.note, "set_by": row.set_by,
            "lateness_cutoff_minutes": row.lateness_cutoff_minutes,
            "next": timing.shown(row.next_at, row.tz) or None,
            "next_at": text.iso(row.next_at), "fired": row.fired,
            "removed_at": text.iso(row.removed_at)}


def add_named(store, *, agent: str, mood: str, now: dt.datetime, **kw) -> tuple[dict, list[str]]:
    with store.writing() as s:
        a, m = schedules.participant_id(s, agent, "agent"), schedules.mood_id(s, mood)
        row, warns = add(s, agent_id=a, mood_id=m, now=now, **kw)
        return view(row, schedules.handles(s, {a})[a], schedules.slugs(s, {m})[m]), warns


def listing(store, agent: Optional[str] = None, mood: Optional[str] = None,
            include_removed: bool = False) -> list[dict]:
    with store.reading() as s:
        a = schedules.participant_id(s, agent, "agent") if agent else None
        m = schedules.mood_id(s, mood) if mood else None
        found = schedules.alarms(s, a, m, include_removed)
        names = schedules.handles(s, {r.agent_id for r in found})
        places = schedules.slugs(s, {r.mood_id for r in found})
        return [view(r, names[r.agent_id], places[r.mood_id]) for r in found]


def remove(store, alarm_id: int, now: dt.datetime) -> dict:
    with store.writing() as s:
        row = schedules.remove_alarm(s, alarm_id, now)
        return view(row, schedules.handles(s, {row.agent_id})[row.agent_id],
                    schedules.slugs(s, {row.mood_id})[row.mood_id])
