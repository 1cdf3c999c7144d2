"""Operators' reads and the emergency stop: wakes, decisions, holds, what is due.

Rows come back as named records; :mod:`poller.observe` shapes them for the
command line and JSON.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Optional

import sqlalchemy as sa
from sqlalchemy.orm import Session

from poller.kinds import IN_FLIGHT, ParticipantKind, PostKind, Trust
from poller.models import (Agent, DecisionRow, Listener, Mention, Mood, Owed, Participant, Post,
                           Turn, Wake)
from poller.store import cycle


@dataclass(frozen=True)
class WakeRecord:
    id: int
    agent: str
    mood: str
    kind: str
    tools: str
    status: str
    created_at: dt.datetime
    started_at: Optional[dt.datetime]
    finished_at: Optional[dt.datetime]
    answers: tuple[int, ...]
    dial_source: str
    prompt_tokens: int
    reply_post_id: Optional[int]
    error: str
    text: str
    host: str
    runner_pid: Optional[int]
    progress: Optional[str] = None  # what a running turn is doing (names only)


def names(s: Session) -> tuple[dict, dict]:
    """Every participant's handle and every Mood's slug, by id."""
    return _names(s)


def _names(s: Session) -> tuple[dict, dict]:
    handles = {r.id: r.handle for r in s.execute(sa.select(Participant.id, Participant.handle))}
    slugs = {r.id: r.slug for r in s.execute(sa.select(Mood.id, Mood.slug))}
    return handles, slugs


def _record(s: Session, w: Wake, handles: dict, slugs: dict) -> WakeRecord:
    return WakeRecord(w.id, handles[w.agent_id], slugs[w.mood_id], w.kind, w.tools, w.status,
                      w.created_at, w.started_at, w.finished_at, tuple(cycle.answers(s, w.id)),
                      w.dial_source, w.prompt_tokens, w.reply_post_id, w.error, w.text, w.host,
                      w.runner_pid, w.progress)


def wakes(s: Session, mood_id: Optional[int], agent_id: Optional[int], kind: Optional[str],
          limit: int, *, status: Optional[str] = None,
          since: Optional[dt.datetime] = None) -> list[WakeRecord]:
    """The newest *limit* wakes, newest first, optionally of one Mood, agent, kind or
    status, and only those recorded at or after *since*."""
    q = sa.select(Wake).order_by(Wake.id.desc()).limit(limit)
    if mood_id is not None:
        q = q.where(Wake.mood_id == mood_id)
    if agent_id is not None:
        q = q.where(Wake.agent_id == agent_id)
    if kind is not None:
        q = q.where(Wake.kind == kind)
    if status is not None:
        q = q.where(Wake.status == status)
    if since is not None:
        q = q.where(Wake.created_at >= since)
    handles, slugs = _names(s)
    return [_record(s, w, handles, slugs) for w in s.scalars(q)]


def wake(s: Session, wake_id: int) -> Optional[WakeRecord]:
    w = s.get(Wake, wake_id)
    if w is None:
        return None
    handles, slugs = _names(s)
    return _record(s, w, handles, slugs)


@dataclass(frozen=True)
class Usage:
    """What a turn cost: tokens in and out (as its provider counted them), dollars."""

    tokens_in: Optional[int]
    tokens_out: Optional[int]
    cost_usd: Optional[float]


def usage(s: Session, wake_id: int) -> Optional[Usage]:
    t = s.get(Turn, wake_id)
    return None if t is None else Usage(t.tokens_in, t.tokens_out, t.cost_usd)


def spent_since(s: Session, since: dt.datetime) -> dict[int, Usage]:
    """Each agent's tokens in and out and dollars, of its turns that ended since *since*."""
    q = (sa.select(Wake.agent_id, sa.func.sum(Turn.tokens_in), sa.func.sum(Turn.tokens_out),
                   sa.func.sum(Turn.cost_usd))
         .join(Turn, Turn.wake_id == Wake.id).where(Wake.finished_at >= since)
         .group_by(Wake.agent_id))
    return {a: Usage(int(i or 0), int(o or 0), float(c or 0)) for a, i, o, c in s.execute(q)}


@dataclass(frozen=True)
class ScramRecord:
    by: Optional[str]
    at: dt.datetime


def scram(s: Session) -> Optional[ScramRecord]:
    f = cycle.flag(s, "scram")
    return None if f is None else ScramRecord(f.set_by, f.at)


@dataclass(frozen=True)
class DecisionRecord:
    kind: str
    outcome: str
    reason: str
    next_due: Optional[dt.datetime]
    wake_id: Optional[int]
    at: dt.datetime
    last_at: dt.datetime
    count: int
    detail: Optional[str] = None


def latest_decisions(s: Session, agent_id: int, mood_id: int) -> dict[str, DecisionRecord]:
    return {kind: DecisionRecord(kind, d.outcome, d.reason, d.next_due, d.wake_id, d.at,
                                 d.last_at, d.count, d.detail)
            for kind, d in cycle.latest_decisions(s, agent_id, mood_id).items()}


@dataclass(frozen=True)
class ListenerRecord:
    due_at: Optional[dt.datetime]
    consider_due_at: Optional[dt.datetime]  # only while a consider is pending
    quiet_due_at: Optional[dt.datetime]
    cooldown_until: Optional[dt.datetime]
    quiet_backoff: int
    hold_reason: Optional[str]
    hold_since: Optional[dt.datetime]
    followup_of: int = 0  # the cut-off wake a follow-up is owed for


def listener(s: Session, agent_id: int, mood_id: int) -> Optional[ListenerRecord]:
    l = s.get(Listener, (agent_id, mood_id))
    if l is None:
        return None
    return ListenerRecord(l.due_at, l.consider_due_at if l.consider_from_id else None,
                          l.quiet_due_at, l.cooldown_until, l.quiet_backoff or 0,
                          l.hold_reason, l.hold_since, l.followup_of or 0)


@dataclass(frozen=True)
class Hold:
    agent_id: int
    mood: str
    reason: str


@dataclass(frozen=True)
class Due:
    agent: str
    mood: str
    due_at: dt.datetime


@dataclass(frozen=True)
class Overview:
    """The whole service at a glance: turns in flight, holds with mentions owed, what is due."""

    in_flight: list[WakeRecord]
    holds: list[Hold]
    due: list[Due]
    agents: dict[int, str]
    owed: dict[int, int]  # mentions owed an answer, by agent
    unanswered: dict[int, int]  # posts cut-off turns left unanswered, by agent


@dataclass(frozen=True)
class AgentState:
    """One agent's side of ``status``: when each of its Moods is next looked at, how its
    last turn ended, and the last thing the law said of it."""

    next_ready: list[Due]  # its listeners with a time set, soonest first
    last_turn: Optional[WakeRecord]
    last_decision: Optional[dict]


def agent_states(s: Session, per_agent: int = 10) -> dict[int, AgentState]:
    handles, slugs = _names(s)
    out: dict[int, AgentState] = {}
    for a in cycle.agents(s).values():
        due = [Due(a.handle, slugs[r.mood_id], r.due_at) for r in s.execute(
            sa.select(Listener.mood_id, Listener.due_at)
            .where(Listener.agent_id == a.id, Listener.due_at.is_not(None))
            .order_by(Listener.due_at).limit(per_agent))]
        w = s.scalar(sa.select(Wake).where(Wake.agent_id == a.id, Wake.finished_at.is_not(None))
                     .order_by(Wake.finished_at.desc(), Wake.id.desc()).limit(1))
        d = s.execute(sa.select(DecisionRow.mood_id, DecisionRow.kind, DecisionRow.outcome, DecisionRow.reason,
                                DecisionRow.last_at)
                      .where(DecisionRow.agent_id == a.id)
                      .order_by(DecisionRow.last_at.desc(), DecisionRow.id.desc()).limit(1)).first()
        out[a.id] = AgentState(
            due, _record(s, w, handles, slugs) if w is not None else None,
            None if d is None else {"mood": slugs.get(d.mood_id), "kind": d.kind,
                                    "outcome": d.outcome, "reason": d.reason, "at": d.last_at})
    return out


def overview(s: Session, due_limit: int = 10) -> Overview:
    handles, slugs = _names(s)
    flight = [_record(s, w, handles, slugs) for w in s.scalars(
        sa.select(Wake).where(Wake.status.in_(IN_FLIGHT)).order_by(Wake.id))]
    owed_pairs = {(r.agent_id, r.mood_id) for r in
                  s.execute(sa.select(Owed.agent_id, Owed.mood_id).distinct())}
    holds = [Hold(r.agent_id, slugs[r.mood_id], r.hold_reason) for r in s.execute(
        sa.select(Listener.agent_id, Listener.mood_id, Listener.hold_reason)
        .where(Listener.hold_reason.is_not(None))) if (r.agent_id, r.mood_id) in owed_pairs]
    due = [Due(handles[r.agent_id], slugs[r.mood_id], r.due_at) for r in s.execute(
        sa.select(Listener.agent_id, Listener.mood_id, Listener.due_at)
        .where(Listener.due_at.is_not(None)).order_by(Listener.due_at).limit(due_limit))]
    agents = {a.id: a.handle for a in cycle.agents(s).values()}
    owed = {r.agent_id: r.n for r in s.execute(
        sa.select(Owed.agent_id, sa.func.count().label("n")).group_by(Owed.agent_id))}
    return Overview(flight, holds, due, agents, owed, left_unanswered(s))


def left_unanswered(s: Session) -> dict[int, int]:
    """How many posts cut-off turns left unanswered, by agent: those a follow-up is owed
    for and those held for an operator (:func:`poller.store.cycle.left_unanswered`)."""
    out: dict[int, int] = {}
    for l in s.execute(sa.select(Listener.agent_id, Listener.mood_id, Listener.followup_of)
                       .where(Listener.followup_of != 0)):
        left = cycle.left_unanswered(s, l.agent_id, l.mood_id, l.followup_of)
        out[l.agent_id] = out.get(l.agent_id, 0) + sum(map(len, left.values()))
    from poller.models import Quarantine

    for q in s.execute(sa.select(Quarantine.agent_id, Quarantine.mood_id, Quarantine.ref)
                       .where(Quarantine.kind == cycle.CUT_OFF_HELD)):
        if q.agent_id is None or not q.ref.isdigit():
            continue
        left = cycle.left_unanswered(s, q.agent_id, q.mood_id, 0)
        out[q.agent_id] = out.get(q.agent_id, 0) + len(left.get(int(q.ref), []))
    return {a: n for a, n in out.items() if n}


def in_flight(s: Session) -> list[Wake]:
    """Every turn pending or running, anywhere, locked for an emergency stop."""
    return list(s.scalars(cycle.for_update(s, sa.select(Wake).where(Wake.status.in_(IN_FLIGHT)))))


def stop_pair(s: Session, agent_id: int, mood_id: int, by: str,
              now: dt.datetime) -> tuple[bool, list[Wake]]:
    """Stop the agent in the Mood: (whether it was not stopped before, its turns in flight
    there, locked).  Its listener is weighed again at once: mentions hold, considers wait."""
    l = s.scalar(cycle.for_update(s, sa.select(Listener).where(
        Listener.agent_id == agent_id, Listener.mood_id == mood_id)))
    if l is None:
        l = Listener(agent_id=agent_id, mood_id=mood_id, last_person_id=0, looked_id=0,
                     consider_from_id=0, quiet_backoff=0, arrival_signin_id=0, followup_of=0)
        s.add(l)
    new = l.stopped_at is None
    if new:
        l.stopped_at, l.stopped_by = now, by[:64] or None
    l.due_at = now
    return new, cycle.turns_here(s, agent_id, mood_id)


@dataclass(frozen=True)
class Stop:
    agent: str
    mood: str
    by: Optional[str]
    at: dt.datetime


def stops(s: Session) -> list[Stop]:
    """Every agent stopped in a Mood (`stop`), until the stop is lifted."""
    handles, slugs = _names(s)
    return [Stop(handles[r.agent_id], slugs[r.mood_id], r.stopped_by, r.stopped_at)
            for r in s.execute(sa.select(Listener.agent_id, Listener.mood_id, Listener.stopped_by,
                                         Listener.stopped_at)
                               .where(Listener.stopped_at.is_not(None))
                               .order_by(Listener.stopped_at))
            if r.agent_id in handles and r.mood_id in slugs]


def lift_pair(s: Session, agent_id: int, mood_id: int, now: dt.datetime) -> bool:
    """Lift a stop; False if the agent was not stopped there."""
    l = s.scalar(cycle.for_update(s, sa.select(Listener).where(
        Listener.agent_id == agent_id, Listener.mood_id == mood_id)))
    if l is None or l.stopped_at is None:
        return False
    l.stopped_at, l.stopped_by, l.due_at = None, None, now
    return True


def wake_everything_owed(s: Session, now: dt.datetime) -> None:
    """Everything owed or deferred gets looked at again at once (the stop was lifted)."""
    s.execute(sa.update(Listener).where(Listener.due_at.is_not(None)).values(due_at=now))
    owed = s.execute(sa.select(Owed.agent_id, Owed.mood_id).distinct()).all()
    for r in owed:
        s.execute(sa.update(Listener).where(Listener.agent_id == r.agent_id,
                                            Listener.mood_id == r.mood_id).values(due_at=now))




@dataclass(frozen=True)
class QuarantineRecord:
    kind: str
    ref: str
    mood: Optional[str]
    error: str
    at: dt.datetime
    last_at: dt.datetime
    count: int


def quarantined(s: Session, agent_id: Optional[int] = None, mood_id: Optional[int] = None,
                limit: int = 20) -> list[QuarantineRecord]:
    """Items set aside, newest first: for one (agent, Mood) its listener and the Mood's rows."""
    from poller.models import Quarantine

    q = sa.select(Quarantine).order_by(Quarantine.last_at.desc(), Quarantine.id.desc()).limit(limit)
    if mood_id is not None:
        q = q.where(Quarantine.mood_id == mood_id)
    if agent_id is not None:
        q = q.where(sa.or_(Quarantine.agent_id.is_(None), Quarantine.agent_id == agent_id))
    _, slugs = _names(s)
    return [QuarantineRecord(r.kind, r.ref, slugs.get(r.mood_id), r.error, r.at, r.last_at,
                             r.count) for r in s.scalars(q)]


@dataclass(frozen=True)
class FloorContender:
    """An agent listening in a Mood, as the initiative order weighs it (see ``law.initiative``)."""

    agent_id: int
    handle: str
    last_spoke: Optional[dt.datetime]  # its newest post in the Mood
    load: int  # its turns in flight anywhere


def floor_contenders(s: Session, mood_id: int) -> list[FloorContender]:
    """The active agents with a listener in the Mood, with what their initiative rests on."""
    rows = s.execute(
        sa.select(Participant.id, Participant.handle)
        .join(Listener, Listener.agent_id == Participant.id)
        .join(Agent, Agent.participant_id == Participant.id)
        .where(Listener.mood_id == mood_id, Agent.retired_at.is_(None))).all()
    ids = [r.id for r in rows]
    if not ids:
        return []
    spoke = dict(s.execute(
        sa.select(Post.sender_id, sa.func.max(Post.created_at))
        .where(Post.mood_id == mood_id, Post.sender_id.in_(ids), Post.kind == PostKind.POST)
        .group_by(Post.sender_id)).all())
    load = dict(s.execute(
        sa.select(Wake.agent_id, sa.func.count())
        .where(Wake.agent_id.in_(ids), Wake.status.in_(IN_FLIGHT))
        .group_by(Wake.agent_id)).all())
    return [FloorContender(r.id, r.handle, aware(spoke.get(r.id)), load.get(r.id, 0))
            for r in rows]


def aware(at) -> Optional[dt.datetime]:
    """An aggregate's time as the driver returns it (SQLite: naive text), made aware UTC."""
    if at is None:
        return None
    if isinstance(at, str):
        at = dt.datetime.fromisoformat(at)
    return at if at.tzinfo is not None else at.replace(tzinfo=dt.timezone.utc)


def untrusted_mentions(s: Session, agent_id: int, mood_id: int) -> Optional[dict]:
    """Mentions of the agent here by people with trust ``none`` (just text: never heard):
    how many, and the newest with its sender; None if there are none."""
    q = (sa.select(sa.func.count(), sa.func.max(Post.id))
         .select_from(Mention).join(Post, Post.id == Mention.post_id)
         .join(Participant, Participant.id == Post.sender_id)
         .where(Mention.participant_id == agent_id, Post.mood_id == mood_id,
                Participant.kind == ParticipantKind.PERSON, Participant.trust == Trust.NONE))
    count, newest = s.execute(q).one()
    if not count:
        return None
    sender = s.scalar(sa.select(Participant.handle).join(Post, Post.sender_id == Participant.id)
                      .where(Post.id == newest))
    return {"count": count, "post_id": newest, "sender": sender}
