"""Absences in the store: going out, pings while out, coming back, fresh eyes.

Every verb takes the caller's open transaction.  An absence is one
``activities`` row (append-only; the one in progress has ``returned_at``
NULL), the mentions that reached the agent while it was out are
``activity_pings`` rows, and fresh eyes after a long absence are
``catch_up_marks``.  Coming back is claimed (:func:`claim_return`) and then
finished in one transaction (:func:`finish_return`) that re-checks the claim,
so with several pollers, and across a crash between the two, an absence
comes back exactly once.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Iterable, Optional

import sqlalchemy as sa
from sqlalchemy.orm import Session

from poller.kinds import AbsenceStatus, ParticipantKind, PingKind, PostKind, Trust, WakeKind
from poller.models import (Activity, ActivityPing, CatchUpMark, Mention, Mood, Owed,
                           Participant, Post, Wake, WakeAnswer)
from poller.store import cycle, ops, prefetch
from poller.store.core import insert_post

A = Activity.__table__
PINGS = ActivityPing.__table__


@dataclass(frozen=True)
class Absence:
    """One absence, as the logic sees it."""

    id: int
    agent_id: int
    mood_id: int  # the Mood it left from
    activity: str
    label: str
    seed: str
    note: str
    reachable: bool
    archive_after_minutes: int
    catch_up_limit: int
    departed_at: dt.datetime
    due_at: dt.datetime
    departure_post_id: int
    status: str
    cut_short_by: Optional[int] = None
    returned_at: Optional[dt.datetime] = None
    return_holder: Optional[str] = None
    return_claimed_at: Optional[dt.datetime] = None
    missed: int = 0
    fresh_eyes: bool = False

    @classmethod
    def from_row(cls, r) -> "Absence":
        return cls(r.id, r.agent_id, r.mood_id, r.activity, r.label, r.seed, r.note, r.reachable,
                   r.archive_after_minutes, r.catch_up_limit, r.departed_at, r.due_at,
                   r.departure_post_id, r.status, r.cut_short_by, r.returned_at, r.return_holder,
                   r.return_claimed_at, r.missed, r.fresh_eyes)


_COLUMNS = [A.c[name] for name in (
    "id", "agent_id", "mood_id", "activity", "label", "seed", "note", "reachable",
    "archive_after_minutes", "catch_up_limit", "departed_at", "due_at", "departure_post_id",
    "status", "cut_short_by", "returned_at", "return_holder", "return_claimed_at", "missed",
    "fresh_eyes")]
_ACTIVE = sa.select(*_COLUMNS).where(A.c.returned_at.is_(None))


def active(s: Session, agent_ids: Iterable[int]) -> dict[int, Absence]:
    """The absence in progress of each of *agent_ids* that is out."""
    ids = sorted(set(agent_ids))
    if not ids:
        return {}
    rows = s.connection().execute(_ACTIVE_OF, {"ids": ids})
    return {r.agent_id: Absence.from_row(r) for r in rows}


def everyone_out(s: Session) -> list[Absence]:
    """Every absence in progress."""
    return [Absence.from_row(r) for r in s.connection().execute(_ACTIVE.order_by(A.c.id))]


def active_for(s: Session, agent_id: int) -> Optional[Absence]:
    return active(s, [agent_id]).get(agent_id)


def get(s: Session, activity_id: int) -> Optional[Absence]:
    row = s.connection().execute(sa.select(*_COLUMNS).where(A.c.id == activity_id)).first()
    return Absence.from_row(row) if row is not None else None


# -- going out ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Going:
    """Where an agent goes out to, as its catalog describes it (plain values, checked)."""

    activity: str
    label: str
    seed: str
    reachable: bool
    archive_after_minutes: int
    catch_up_limit: int


def start(s: Session, *, agent_id: int, mood_id: int, going: Going, note: str, minutes: int,
          post_id: int, wake_id: Optional[int], now: dt.datetime) -> Absence:
    """Record that the agent went out now, for *minutes*, after its goodbye *post_id*."""
    new = s.connection().execute(sa.insert(A).values(
        agent_id=agent_id, mood_id=mood_id, activity=going.activity, label=going.label,
        seed=going.seed, note=note, reachable=going.reachable,
        archive_after_minutes=going.archive_after_minutes,
        catch_up_limit=going.catch_up_limit, departed_at=now,
        due_at=now + dt.timedelta(minutes=minutes), departure_post_id=post_id,
        departure_wake_id=wake_id, status=AbsenceStatus.AWAY, missed=0,
        fresh_eyes=False)).inserted_primary_key[0]
    return get(s, new)


# -- while out ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ping:
    """A mention owed while the agent is out: who sent it, and whether they count."""

    post_id: int
    sender_id: int
    handle: str
    full_person: bool


def pings(s: Session, post_ids: list[int]) -> list[Ping]:
    """The senders of *post_ids*, oldest post first."""
    if not post_ids:
        return []
    p, who = Post.__table__, Participant.__table__
    q = (sa.select(p.c.id, who.c.id, who.c.handle, who.c.kind, who.c.trust)
         .join(who, who.c.id == p.c.sender_id).where(p.c.id.in_(post_ids)).order_by(p.c.id))
    return [Ping(post_id, sender, handle,
                 kind == ParticipantKind.PERSON and trust == Trust.FULL)
            for post_id, sender, handle, kind, trust in s.connection().execute(q)]


def judged(s: Session, activity_id: int) -> set[int]:
    """Who has had their judgment in this absence (one per person per absence)."""
    q = sa.select(PINGS.c.sender_id).where(PINGS.c.activity_id == activity_id,
                                           PINGS.c.kind == PingKind.JUDGMENT)
    return set(s.connection().execute(q).scalars())


def note(s: Session, absence: Absence, agent_id: int, mood_id: int, post_ids: list[int],
         now: dt.datetime) -> bool:
    """Keep owed mentions for the return instead of waking the agent now; True when they
    are the first noted in this Mood this absence (the Mood is then told once)."""
    if not post_ids:
        return False
    conn = s.connection()
    first = conn.execute(sa.select(PINGS.c.id).where(
        PINGS.c.activity_id == absence.id, PINGS.c.mood_id == mood_id,
        PINGS.c.kind == PingKind.NOTED).limit(1)).first() is None
    _add_pings(s, absence.id, post_ids, PingKind.NOTED, None, now)
    o = Owed.__table__
    conn.execute(sa.delete(o).where(o.c.agent_id == agent_id, o.c.post_id.in_(post_ids)))
    return first


def _add_pings(s: Session, activity_id: int, post_ids: list[int], kind: str,
               wake_id: Optional[int], now: dt.datetime) -> None:
    conn = s.connection()
    have = set(conn.execute(sa.select(PINGS.c.post_id).where(
        PINGS.c.activity_id == activity_id, PINGS.c.post_id.in_(post_ids))).scalars())
    p = Post.__table__
    rows = conn.execute(sa.select(p.c.id, p.c.mood_id, p.c.sender_id)
                        .where(p.c.id.in_([i for i in post_ids if i not in have]))).all()
    if rows:
        conn.execute(sa.insert(PINGS), [
            dict(activity_id=activity_id, post_id=i, mood_id=m, sender_id=sender,
                 kind=kind, wake_id=wake_id, at=now) for i, m, sender in rows])


def mark_judgment(s: Session, activity_id: int, wake_id: int, post_ids: list[int],
                  now: dt.datetime) -> None:
    """The wake *wake_id* is a judgment for these pings: their senders have had theirs."""
    _add_pings(s, activity_id, post_ids, PingKind.JUDGMENT, wake_id, now)


def judgment_of(s: Session, wake_id: int) -> Optional[tuple[int, int]]:
    """(activity id, who pinged) when *wake_id* was a judgment of an absence still in progress."""
    q = (sa.select(PINGS.c.activity_id, PINGS.c.sender_id)
         .join(A, A.c.id == PINGS.c.activity_id)
         .where(PINGS.c.wake_id == wake_id, PINGS.c.kind == PingKind.JUDGMENT,
                A.c.returned_at.is_(None))
         .order_by(PINGS.c.post_id).limit(1))
    row = s.connection().execute(q).first()
    return (row.activity_id, row.sender_id) if row is not None else None


def call_back(s: Session, activity_id: int, by: int, now: dt.datetime) -> None:
    """A real reply to a judgment: the agent comes back now, cut short by *by*."""
    s.connection().execute(sa.update(A).where(A.c.id == activity_id, A.c.returned_at.is_(None))
                           .values(due_at=now, cut_short_by=by))


# -- coming back -------------------------------------------------------------------------------


def due(s: Session, now: dt.datetime, limit: int = 100) -> list[Absence]:
    """Absences whose time is up (or that were called back), soonest first."""
    return [Absence.from_row(r) for r in s.connection().execute(_DUE, {"now": now, "limit": limit})]


_ACTIVE_OF = (_ACTIVE.where(A.c.agent_id.in_(sa.bindparam("ids", expanding=True)))
              .order_by(A.c.id))
_DUE = (_ACTIVE.where(A.c.due_at <= sa.bindparam("now", type_=A.c.due_at.type))
        .order_by(A.c.due_at, A.c.id).limit(sa.bindparam("limit")))


def claim_return(s: Session, absence: Absence, holder: str, now: dt.datetime,
                 stale: dt.datetime) -> bool:
    """Take the return of *absence* for *holder*: free, or held by a claim older than
    *stale*, or by a poller of this machine that died.  True if it is ours now."""
    free = sa.or_(A.c.return_holder.is_(None), A.c.return_claimed_at < stale,
                  A.c.return_holder == holder)
    if absence.return_holder and cycle.holder_dead(absence.return_holder):
        free = sa.or_(free, A.c.return_holder == absence.return_holder)
    done = s.connection().execute(sa.update(A).where(
        A.c.id == absence.id, A.c.returned_at.is_(None), free)
        .values(return_holder=holder, return_claimed_at=now))
    return done.rowcount == 1


@dataclass(frozen=True)
class Returned:
    """An absence that came back: its post, whether it left fresh eyes, the pings it missed."""

    absence: Absence
    post_id: int
    fresh_eyes: bool
    missed: int


def finish_return(s: Session, counter, absence: Absence, holder: str, text: str,
                  now: dt.datetime) -> Optional[Returned]:
    """Come back: the return post (*text*), the record, fresh eyes, the missed pings, in one
    transaction; None when the claim is no longer *holder*'s (another poller came back)."""
    # Locks in the order settling takes them (a judgment's reply calls the absence back):
    # the listener, then the absence, then the post (the cursor tables' advisory lock).
    pair = (absence.agent_id, absence.mood_id)
    l = cycle.listeners_for(s, {pair})[pair]
    q = sa.select(Activity).where(Activity.id == absence.id)
    if s.get_bind().dialect.name == "postgresql":  # NO KEY UPDATE: pings may still reference it
        q = q.with_for_update(key_share=True)
    row = s.scalar(q)
    if row is None or row.returned_at is not None or row.return_holder != holder:
        return None
    post = insert_post(s, counter, row.mood_id, row.agent_id, text, now, kind=PostKind.RETURN)
    fresh = now - row.departed_at >= dt.timedelta(minutes=row.archive_after_minutes)
    if fresh:
        _mark_fresh_eyes(s, row, now)
    missed = _missed_pings(s, row, now)
    if missed:
        l.return_of = row.id
        l.due_at = now if l.due_at is None else min(l.due_at, now)
    row.returned_at, row.return_post_id, row.missed = now, post.id, missed
    row.status = AbsenceStatus.CUT_SHORT if row.cut_short_by else AbsenceStatus.COMPLETED
    row.fresh_eyes = fresh
    s.flush()
    return Returned(Absence.from_row(row), post.id, fresh, missed)


def _missed_pings(s: Session, row: Activity, now: dt.datetime) -> int:
    """The pings noted while out, with those a scan of the posts since it left finds
    (deduplicated): mentions of it by anyone who may wake it, not answered, not owed."""
    conn, m, p, who = s.connection(), Mention.__table__, Post.__table__, Participant.__table__
    answered = sa.select(WakeAnswer.post_id).where(WakeAnswer.agent_id == row.agent_id,
                                                 WakeAnswer.post_id == p.c.id)
    owed = sa.select(Owed.post_id).where(Owed.agent_id == row.agent_id, Owed.post_id == p.c.id)
    kept = sa.select(PINGS.c.post_id).where(PINGS.c.activity_id == row.id,
                                            PINGS.c.post_id == p.c.id)
    found = conn.execute(
        sa.select(p.c.id).join(m, m.c.post_id == p.c.id).join(who, who.c.id == p.c.sender_id)
        .where(m.c.participant_id == row.agent_id, p.c.id > row.departure_post_id,
               p.c.kind == PostKind.POST, p.c.sender_id != row.agent_id,
               sa.not_(sa.and_(who.c.kind == ParticipantKind.PERSON, who.c.trust == Trust.NONE)),
               ~answered.exists(), ~owed.exists(), ~kept.exists())).scalars().all()
    if found:
        _add_pings(s, row.id, list(found), PingKind.FOUND, None, now)
    return conn.execute(sa.select(sa.func.count()).select_from(PINGS).where(
        PINGS.c.activity_id == row.id, PINGS.c.kind.in_((PingKind.NOTED, PingKind.FOUND)),
        PINGS.c.wake_id.is_(None))).scalar() or 0


def _mark_fresh_eyes(s: Session, row: Activity, now: dt.datetime) -> None:
    """Per Mood with more than ``catch_up_limit`` posts since it left (what people and
    agents said: the service's notes do not count), everything older than the last
    of them is missed, but for the posts that mention it."""
    conn, p, m = s.connection(), Post.__table__, Mention.__table__
    ranked = (sa.select(p.c.mood_id, p.c.id, sa.func.row_number().over(
        partition_by=p.c.mood_id, order_by=p.c.id.desc()).label("n"))
        .where(p.c.id > row.departure_post_id, p.c.kind == PostKind.POST).subquery())
    oldest_kept = conn.execute(sa.select(ranked.c.mood_id, ranked.c.id)
                               .where(ranked.c.n == row.catch_up_limit)).all()
    marks = CatchUpMark.__table__
    for mood_id, cutoff in oldest_kept:
        mentions_it = sa.select(m.c.post_id).where(m.c.post_id == p.c.id,
                                                   m.c.participant_id == row.agent_id)
        missed = conn.execute(sa.select(sa.func.count()).select_from(p).where(
            p.c.mood_id == mood_id, p.c.id > row.departure_post_id, p.c.id < cutoff,
            p.c.kind == PostKind.POST, ~mentions_it.exists())).scalar() or 0
        conn.execute(sa.delete(marks).where(marks.c.agent_id == row.agent_id,
                                            marks.c.mood_id == mood_id))
        conn.execute(sa.insert(marks).values(agent_id=row.agent_id, mood_id=mood_id,
                                             activity_id=row.id, from_id=row.departure_post_id,
                                             missed_before=cutoff, missed=missed, at=now))


# -- after: the return wake, fresh eyes ----------------------------------------------------------


@dataclass(frozen=True)
class Missed:
    post_id: int
    mood: str  # its slug


def missed(s: Session, activity_id: int) -> list[Missed]:
    """The pings a return wake carries, oldest first (those no wake has carried yet)."""
    q = (sa.select(PINGS.c.post_id, Mood.slug).join(Mood, Mood.id == PINGS.c.mood_id)
         .where(PINGS.c.activity_id == activity_id,
                PINGS.c.kind.in_((PingKind.NOTED, PingKind.FOUND)), PINGS.c.wake_id.is_(None))
         .order_by(PINGS.c.post_id))
    return [Missed(i, slug) for i, slug in s.connection().execute(q)]


def carried(s: Session, activity_id: int, wake_id: int, post_ids: list[int]) -> None:
    """The return wake *wake_id* carries these pings."""
    if post_ids:
        s.connection().execute(sa.update(PINGS).where(
            PINGS.c.activity_id == activity_id, PINGS.c.post_id.in_(post_ids))
            .values(wake_id=wake_id))


@dataclass(frozen=True)
class Window:
    """Fresh eyes in a Mood: its catch-up starts after *from_id*; posts between it and
    *missed_before* that do not mention *agent_id* are missed (0: none are)."""

    agent_id: int
    from_id: int
    missed_before: int = 0


_FRESH = (sa.select(A.c.id, A.c.departure_post_id)
          .where(A.c.agent_id == sa.bindparam("a"), A.c.fresh_eyes.is_(True))
          .order_by(A.c.id.desc()).limit(1))
_MARK = CatchUpMark.__table__
_MARK_Q = sa.select(_MARK.c.activity_id, _MARK.c.missed_before).where(
    _MARK.c.agent_id == sa.bindparam("a"), _MARK.c.mood_id == sa.bindparam("m"))


def window(s: Session, agent_id: int, mood_id: int) -> Optional[Window]:
    """The agent's fresh eyes in the Mood since its last long absence, if it had one."""
    got = prefetch.pair(s, "window", agent_id, mood_id, windows)
    if got is not prefetch.MISS:
        return got
    conn = s.connection()
    last = conn.execute(_FRESH, {"a": agent_id}).first()
    if last is None:
        return None
    mark = conn.execute(_MARK_Q, {"a": agent_id, "m": mood_id}).first()
    missed_before = mark.missed_before if mark is not None and mark.activity_id == last.id else 0
    return Window(agent_id, last.departure_post_id, missed_before)


def windows(s: Session, pairs: list[tuple[int, int]]) -> dict:
    """:func:`window` for each (agent, Mood) pair, in two set queries (one if no agent
    of theirs has had fresh eyes)."""
    conn = s.connection()
    last = {r.agent_id: r for r in conn.execute(
        _FRESH_OF, {"agents": sorted({a for a, _ in pairs})})}
    out = dict.fromkeys(pairs)
    fresh = [p for p in pairs if p[0] in last]
    if not fresh:
        return out
    marks = {(r.agent_id, r.mood_id): r for r in conn.execute(_MARKS_OF, {"pairs": fresh})}
    for a, m in fresh:
        mark, act = marks.get((a, m)), last[a]
        missed_before = mark.missed_before if mark is not None and mark.activity_id == act.id else 0
        out[(a, m)] = Window(a, act.departure_post_id, missed_before)
    return out


_FRESH_LAST = (sa.select(sa.func.max(A.c.id))
               .where(A.c.agent_id.in_(sa.bindparam("agents", expanding=True)),
                      A.c.fresh_eyes.is_(True))
               .group_by(A.c.agent_id))
_FRESH_OF = sa.select(A.c.agent_id, A.c.id, A.c.departure_post_id).where(A.c.id.in_(_FRESH_LAST))
_MARKS_OF = sa.select(_MARK.c.agent_id, _MARK.c.mood_id, _MARK.c.activity_id,
                      _MARK.c.missed_before).where(
    sa.tuple_(_MARK.c.agent_id, _MARK.c.mood_id).in_(sa.bindparam("pairs", expanding=True)))


def not_missed(w: Window):
    """A filter on posts: not among those *w* says were missed."""
    p, m = Post.__table__, Mention.__table__
    if not w.missed_before:
        return sa.true()
    mentions_it = sa.select(m.c.post_id).where(m.c.post_id == p.c.id,
                                               m.c.participant_id == w.agent_id)
    return sa.or_(p.c.id >= w.missed_before, mentions_it.exists())


# -- the idle nudge ----------------------------------------------------------------------------


def idle_facts(s: Session, agent_id: int) -> tuple[Optional[int], Optional[dt.datetime],
                                                    Optional[dt.datetime], Optional[dt.datetime]]:
    """(the Mood it last spoke in, the newest post there, its last return, its last nudge)."""
    conn, p, w = s.connection(), Post.__table__, Wake.__table__
    spoke = conn.execute(sa.select(p.c.mood_id).where(p.c.sender_id == agent_id,
                                                      p.c.kind == PostKind.POST)
                         .order_by(p.c.id.desc()).limit(1)).scalar()
    newest = None
    if spoke is not None:
        newest = conn.execute(sa.select(p.c.created_at).where(
            p.c.mood_id == spoke, p.c.kind.in_((PostKind.POST, PostKind.RETURN)))
            .order_by(p.c.id.desc()).limit(1)).scalar()
    back = conn.execute(sa.select(sa.func.max(A.c.returned_at)).where(
        A.c.agent_id == agent_id)).scalar()
    nudged = conn.execute(sa.select(sa.func.max(w.c.created_at)).where(
        w.c.agent_id == agent_id, w.c.kind == WakeKind.NUDGE)).scalar()
    return spoke, ops.aware(newest), ops.aware(back), ops.aware(nudged)


# -- for operators -----------------------------------------------------------------------------


def history(s: Session, agent_id: Optional[int] = None, limit: int = 50) -> list[Absence]:
    """Absences, newest first (of one agent)."""
    q = sa.select(*_COLUMNS).order_by(A.c.id.desc()).limit(limit)
    if agent_id is not None:
        q = q.where(A.c.agent_id == agent_id)
    return [Absence.from_row(r) for r in s.connection().execute(q)]
