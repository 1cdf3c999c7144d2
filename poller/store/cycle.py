"""The cycle's reads and writes: cursors, listeners, owed mentions, wakes, decisions.

Every verb takes the open transaction (a Session, opened by the cycle through
``Store.writing``) so a claim and the rows it writes commit together.  On
PostgreSQL, rows several pollers may reach are claimed with ``FOR UPDATE
SKIP LOCKED``: a row another poller holds is simply not ours this cycle.
Rows come back as named records or as the listener row itself, whose
attributes the cycle updates in place.
"""

from __future__ import annotations

import contextlib
import json
import datetime as dt
from dataclasses import dataclass
from typing import Iterable, Iterator, Optional, Sequence

import sqlalchemy as sa
from sqlalchemy.orm import Session

from poller import settings
from poller.kinds import IN_FLIGHT, ParticipantKind, PostKind, WakeKind, WakeStatus
from poller.models import (Agent, Cursor, DecisionRow, Flag, Handoff, Lease, Listener, Mention,
                           Mood, Owed, Participant, Post, Quarantine, Setting, SignIn, Turn, Wake,
                           WakeAnswer)
from poller import procs
from poller.store import core
from poller.procs import pid_alive
from poller.values import AgentInfo, PostInfo



# What the database (or the driver) raises: a transaction that met one may be unusable.
DATABASE_ERRORS = (sa.exc.SQLAlchemyError,)


def skip_locked(s: Session, q):
    if s.get_bind().dialect.name == "postgresql":
        return q.with_for_update(skip_locked=True)
    return q


def for_update(s: Session, q):
    if s.get_bind().dialect.name == "postgresql":
        return q.with_for_update()
    return q


# -- Flags, leases, cursors ------------------------------------------------------


def flag(s: Session, name: str) -> Optional[Flag]:
    return s.get(Flag, name)


def set_flag(s: Session, name: str, value: str, by: Optional[str], now: dt.datetime) -> None:
    row = s.get(Flag, name)
    if row is None:
        s.add(Flag(name=name, value=value, set_by=by, at=now))
    else:
        row.value, row.set_by, row.at = value, by, now


def clear_flag(s: Session, name: str) -> bool:
    return s.execute(sa.delete(Flag).where(Flag.name == name)).rowcount > 0


def take_lease(s: Session, name: str, holder: str, now: dt.datetime,
               length: dt.timedelta) -> Optional[Lease]:
    """Take or renew the lease; returns the current holder's row if it is not us."""
    row = s.get(Lease, name)
    if row is None:
        s.add(Lease(name=name, holder=holder, expires_at=now + length))
        return None
    if row.holder == holder or row.expires_at <= now or holder_dead(row.holder):
        row.holder, row.expires_at = holder, now + length
        return None
    return Lease(name=row.name, holder=row.holder, expires_at=row.expires_at)


def holder_dead(holder: str) -> bool:
    """A holder on this host whose process is gone (a crash) need not be waited out."""
    host, _, rest = holder.partition(":")
    pid = rest.partition(":")[0]
    return host == procs.HOST and pid.isdigit() and not pid_alive(int(pid))


def drop_lease(s: Session, name: str, holder: str) -> None:
    s.execute(sa.delete(Lease).where(Lease.name == name, Lease.holder == holder))


def claim_cursor(s: Session, name: str) -> Optional[Cursor]:
    """The cursor row, locked for this transaction; None if another poller has it."""
    pg = s.get_bind().dialect.name == "postgresql"
    return s.scalar(_CLAIM_CURSOR_PG if pg else _CLAIM_CURSOR, {"name": name})


_CLAIM_CURSOR = sa.select(Cursor).where(Cursor.name == sa.bindparam("name"))
_CLAIM_CURSOR_PG = _CLAIM_CURSOR.with_for_update(skip_locked=True)


def advance_cursor(s: Session, cursor: Cursor, value: int, now: dt.datetime) -> None:
    """The claimed cursor read up to *value*."""
    cursor.value, cursor.at = value, now


def cursor_exists(s: Session, name: str) -> bool:
    return s.get(Cursor, name) is not None


CURSOR_TABLES = {"posts": Post, "signins": SignIn}


def unread(s: Session, name: str) -> bool:
    """Anything past the cursor *name* (or no cursor yet)?  A read: no lock taken."""
    cur = s.get(Cursor, name)
    if cur is None:
        return True
    return s.scalar(_UNREAD[name], {"after": cur.value}) is not None


_UNREAD = {name: sa.select(table.id).where(table.id > sa.bindparam("after")).limit(1)
           for name, table in CURSOR_TABLES.items()}


@dataclass(frozen=True)
class RecentMood:
    """A Mood where a person spoke lately: when, and the post."""

    mood_id: int
    at: dt.datetime
    post_id: int


FIRST_CYCLE_FLAG = "history_before"  # value: the newest post id when the poller first looked


def start_cursors(s: Session, now: dt.datetime) -> int:
    """A new deployment's cursors, at the newest post and sign-in; returns the newest post id."""
    newest = max_id(s, Post.id)
    s.add(Cursor(name="posts", value=newest, at=now))
    s.add(Cursor(name="signins", value=max_id(s, SignIn.id), at=now))
    set_flag(s, FIRST_CYCLE_FLAG, str(newest), None, now)
    return newest


def history_before(s: Session) -> Optional[int]:
    """The newest post id when the poller first looked (posts up to it are history); None
    if the poller has never run its first cycle here."""
    if not cursor_exists(s, "posts"):
        return None
    f = flag(s, FIRST_CYCLE_FLAG)
    return int(f.value) if f is not None and f.value.isdigit() else 0


def mentions_before(s: Session, agent_id: int, mood_id: int, upto_id: int) -> int:
    """Mentions of the agent in the Mood up to post *upto_id* (history when the poller began)."""
    return s.scalar(sa.select(sa.func.count()).select_from(Mention)
                    .join(Post, Post.id == Mention.post_id)
                    .where(Mention.participant_id == agent_id, Post.mood_id == mood_id,
                           Post.id <= upto_id)) or 0


def post_text(s: Session, post_id: int) -> str:
    known = s.info.get(_TEXTS)
    if known is not None and post_id in known:
        return known[post_id]
    return s.scalar(_POST_TEXT, {"p": post_id}) or ""


_POST_TEXT = sa.select(Post.text).where(Post.id == sa.bindparam("p"))


def turns_here(s: Session, agent_id: int, mood_id: int) -> list[Wake]:
    """The agent's turns pending or running in the Mood, locked."""
    pg = s.get_bind().dialect.name == "postgresql"
    return list(s.scalars(_TURNS_HERE_PG if pg else _TURNS_HERE, {"a": agent_id, "m": mood_id}))


_TURNS_HERE = sa.select(Wake).where(Wake.agent_id == sa.bindparam("a"),
                                    Wake.mood_id == sa.bindparam("m"), Wake.status.in_(IN_FLIGHT))
_TURNS_HERE_PG = _TURNS_HERE.with_for_update()


def mood_slugs(s: Session) -> dict[int, str]:
    """Every Mood's slug by id (a scoped poller's cycle reads which it serves)."""
    return dict(s.execute(sa.select(Mood.id, Mood.slug)).all())


def moods_people_spoke_in(s: Session, since: dt.datetime) -> list[RecentMood]:
    return [RecentMood(r.mood_id, r.at, r.post_id)
            for r in s.execute(_PEOPLE_SPOKE, {"since": since})]


_PEOPLE_SPOKE = (sa.select(Post.mood_id, sa.func.max(Post.created_at).label("at"),
                           sa.func.max(Post.id).label("post_id"))
                 .join(Participant, Participant.id == Post.sender_id)
                 .where(Participant.kind == ParticipantKind.PERSON, Post.kind == PostKind.POST,
                        Post.created_at > sa.bindparam("since", type_=Post.created_at.type))
                 .group_by(Post.mood_id))


def max_id(s: Session, column) -> int:
    """The highest value of *column* (an id), 0 for an empty table."""
    stmt = _MAX.get((column.key, column.class_))
    if stmt is None:
        stmt = _MAX[column.key, column.class_] = sa.select(
            sa.func.coalesce(sa.func.max(column.expression), 0))
    s.flush()  # as the session's own query would (autoflush): rows it added count
    return s.connection().execute(stmt).scalar() or 0


_MAX: dict = {}  # one statement per column, built once


def lift_holds(s: Session, now: dt.datetime) -> None:
    """Make every held listener due now (new settings may lift a hold), and every one
    keeping posts to consider, or a follow-up, that listening set aside (listening may
    be back on)."""
    s.execute(sa.update(Listener).where(sa.or_(
        Listener.hold_reason.is_not(None),
        sa.and_(Listener.consider_from_id != 0, Listener.consider_due_at.is_(None)),
        sa.and_(Listener.followup_of != 0, Listener.followup_due_at.is_(None))))
        .values(due_at=now))


# -- Settings, cached per cycle ------------------------------------------------------


class SettingsCache:
    """All settings rows, reloaded only when a new row has been appended.

    Resolved settings are kept for every (Mood, agent) pair asked about until
    the rows change (or a ``listening ... --until`` lapses); pairs that the
    same rows apply to share one result, so 20,000 pairs with no settings of
    their own cost one resolution and a dictionary entry each.
    """

    def __init__(self) -> None:
        self._max = -1
        self._rows: list[settings.Row] = []
        self._slots: dict[tuple, list[settings.Row]] = {}
        self._pairs: dict = {}  # (mood_id, agent_id) -> (lapse, resolved, values)
        self._shared: dict = {}  # the ids of the rows that apply -> (lapse, resolved, values)

    def refresh(self, s: Session) -> bool:
        """Reload the rows if a setting was appended since the last call."""
        newest = max_id(s, Setting.id)
        if newest == self._max:
            return False
        q = sa.select(Setting.id, Setting.mood_id, Setting.agent_id, Setting.key,
                      Setting.value, Setting.until, Setting.at)
        self._rows = [settings.Row(*r) for r in s.execute(q)]
        self._slots = {}
        for row in self._rows:
            self._slots.setdefault((row.mood_id, row.agent_id), []).append(row)
        self._max = newest
        self._pairs, self._shared = {}, {}
        return True

    def _entry(self, mood_id: int, agent_id: int, now: dt.datetime) -> tuple:
        key = (mood_id, agent_id)
        hit = self._pairs.get(key)
        if hit is not None and hit[0] > now:
            return hit
        rows = [r for slot in ((None, None), (mood_id, None), (None, agent_id), key)
                for r in self._slots.get(slot, ())]
        ids = tuple(r.id for r in rows)
        hit = self._shared.get(ids)
        if hit is None or hit[0] <= now:
            resolved = settings.resolve(rows, mood_id, agent_id, now)
            lapse = min((r.until for r in resolved.values() if r.until), default=None)
            hit = (lapse or dt.datetime.max.replace(tzinfo=dt.timezone.utc), resolved,
                   settings.values(resolved))
            self._shared[ids] = hit
        self._pairs[key] = hit
        return hit

    def resolve(self, mood_id: int, agent_id: int, now: dt.datetime) -> dict[str, settings.Resolved]:
        return self._entry(mood_id, agent_id, now)[1]

    def values(self, mood_id: int, agent_id: int, now: dt.datetime) -> dict:
        """The values in force (one shared dictionary: read it, never change it)."""
        return self._entry(mood_id, agent_id, now)[2]


# -- Agents and listeners ------------------------------------------------------------


def agents(s: Session) -> dict[int, AgentInfo]:
    """Every agent, by participant id."""
    return {p.id: AgentInfo.from_rows(p, a) for p, a in s.execute(_EVERY_AGENT)}


_EVERY_AGENT = (sa.select(Participant, Agent).join(Agent, Agent.participant_id == Participant.id)
                .where(Agent.retired_at.is_(None)))


def listeners_for(s: Session, pairs: Iterable[tuple[int, int]]) -> dict[tuple[int, int], Listener]:
    """Existing listener rows for (agent_id, mood_id) pairs, created where missing."""
    pairs = set(pairs)
    if not pairs:
        return {}
    moods = {m for _, m in pairs}
    # Locked: a poller evaluating one of them elsewhere finishes first, so its
    # changes are not overwritten by this transaction's.
    q = for_update(s, sa.select(Listener).where(Listener.mood_id.in_(moods)))
    found = {(l.agent_id, l.mood_id): l for l in s.scalars(q) if (l.agent_id, l.mood_id) in pairs}
    for agent_id, mood_id in pairs - set(found):
        row = Listener(agent_id=agent_id, mood_id=mood_id, last_person_id=0, looked_id=0,
                       consider_from_id=0, quiet_backoff=0, arrival_signin_id=0, followup_of=0,
                       return_of=0, marks="")
        s.add(row)
        found[(agent_id, mood_id)] = row
    return found


# -- marks: kinds of wake with no column of their own ------------------------------------


def marks_of(l) -> dict[str, tuple[dt.datetime, int]]:
    """A listener's marks: {kind: (due_at, ref)}."""
    if not l.marks:
        return {}
    return {k: (dt.datetime.fromisoformat(at), ref) for k, (at, ref) in json.loads(l.marks).items()}


def with_mark(l, kind: str, due_at: Optional[dt.datetime], ref: int = 0) -> str:
    """The listener's marks with *kind* due at *due_at* (None: unmarked), as stored."""
    marks = {k: [at.isoformat(), r] for k, (at, r) in marks_of(l).items() if k != kind}
    if due_at is not None:
        marks[kind] = [due_at.astimezone(dt.timezone.utc).isoformat(), ref]
    return json.dumps(marks, sort_keys=True) if marks else ""


def mark(s: Session, agent_id: int, mood_id: int, kind: str, due_at: dt.datetime,
         ref: int = 0) -> None:
    """Make *kind* due on the listener at *due_at* (made if missing), with *ref* for its
    own use; the listener is looked at by then."""
    l = listeners_for(s, {(agent_id, mood_id)})[(agent_id, mood_id)]
    l.marks = with_mark(l, kind, due_at, ref)
    l.due_at = due_at if l.due_at is None else min(l.due_at, due_at)


def due_listeners(s: Session, now: dt.datetime, limit: int,
                  after: Optional[tuple] = None) -> list[tuple[dt.datetime, int, int]]:
    """Listeners due by *now*, soonest first, as (due_at, agent_id, mood_id): the first
    *limit*, or the *limit* that follow *after* (the last of those already read)."""
    if after is None:
        return [tuple(r) for r in s.connection().execute(_DUE, {"now": now, "limit": limit})]
    params = {"now": now, "limit": limit, "d": after[0], "a": after[1], "m": after[2]}
    return [tuple(r) for r in s.connection().execute(_DUE_AFTER, params)]


_L = Listener.__table__
_DUE_KEY = (_L.c.due_at, _L.c.agent_id, _L.c.mood_id)
_DUE = (sa.select(*_DUE_KEY)
        .where(_L.c.due_at.is_not(None), _L.c.due_at <= sa.bindparam("now", type_=_L.c.due_at.type))
        .order_by(*_DUE_KEY).limit(sa.bindparam("limit")))
_DUE_AFTER = _DUE.where(sa.tuple_(*_DUE_KEY) > sa.tuple_(
    sa.bindparam("d", type_=_L.c.due_at.type), sa.bindparam("a"), sa.bindparam("m")))


def lock_agent(s: Session, agent_id: int) -> None:
    """Serialise per-agent caps across pollers (a no-op on SQLite, which is serial)."""
    if s.get_bind().dialect.name == "postgresql":
        s.connection().execute(_LOCK_AGENT, {"a": agent_id})


_AGENTS = Agent.__table__
_LOCK_AGENT = (sa.select(_AGENTS.c.participant_id)
               .where(_AGENTS.c.participant_id == sa.bindparam("a")).with_for_update())


def add_owed(s: Session, owed: Iterable[tuple[int, int, int]]) -> None:
    """Record mentions owed, as (agent_id, post_id, mood_id), with one executemany."""
    rows = [dict(agent_id=a, post_id=p, mood_id=m) for a, p, m in owed]
    if rows:
        s.connection().execute(sa.insert(Owed.__table__), rows)


def owed_posts(s: Session, agent_id: int, mood_id: int) -> list[int]:
    return list(s.scalars(_OWED_HERE, {"a": agent_id, "m": mood_id}))


# -- Wakes -----------------------------------------------------------------------------


def in_flight_here(s: Session, agent_id: int, mood_id: int) -> Optional[Wake]:
    return s.scalar(_IN_FLIGHT_HERE, {"a": agent_id, "m": mood_id})


_IN_FLIGHT_HERE = _TURNS_HERE.limit(1)


@dataclass(frozen=True)
class Recorded:
    """A wake just recorded: its id."""

    id: int


def add_wake(s: Session, *, agent_id: int, mood_id: int, kind: str, tools: str, text: str,
             prompt_tokens: int, dial_source: str, now: dt.datetime, answers: list[int],
             about_id: Optional[int], seen_id: int,
             taking_over: Sequence[int] = ()) -> Recorded:
    """Record a wake and the posts it answers, before its turn starts.

    Posts a cut-off wake left unanswered (:func:`left_unanswered`) move to this
    one when it answers them (*taking_over*: those wakes): a post is answered by
    one wake at a time."""
    conn = s.connection()
    wake_id = conn.execute(_ADD_WAKE, dict(
        agent_id=agent_id, mood_id=mood_id, kind=kind, tools=tools, status="pending",
        created_at=now, text=text, prompt_tokens=prompt_tokens, dial_source=dial_source,
        about_id=about_id, seen_id=seen_id, host=procs.HOST, error="")).inserted_primary_key[0]
    if answers and taking_over:
        conn.execute(_TAKE_OVER, {"wakes": list(taking_over), "posts": list(answers)})
    if answers:
        conn.execute(_ADD_ANSWERS,
                     [dict(wake_id=wake_id, post_id=p, agent_id=agent_id) for p in answers])
        conn.execute(_PAID, {"a": agent_id, "posts": list(answers)})
    return Recorded(wake_id)


@dataclass(frozen=True)
class NewWake:
    """One wake of a batch to record with :func:`add_wakes`."""

    agent_id: int
    mood_id: int
    kind: str
    tools: str
    text: str
    prompt_tokens: int
    dial_source: str
    about_id: Optional[int]
    seen_id: int
    answers: Sequence[int] = ()
    taking_over: Sequence[int] = ()  # as for add_wake


def add_wakes(s: Session, wakes: Sequence[NewWake], now: dt.datetime) -> list[int]:
    """Record a batch's wakes (at most one a pair), the posts they answer and the owed
    rows they pay, with one statement per kind of row (the wakes' as a multi-row insert returning their ids);
    the ids, in the order given.  What :func:`add_wake` does for one."""
    if not wakes:
        return []
    conn = s.connection()
    # One wake a pair: the ids are matched by pair, in whatever order they come back.
    made = {(a, m): i for i, a, m in conn.execute(_ADD_WAKES, [dict(
        agent_id=w.agent_id, mood_id=w.mood_id, kind=w.kind, tools=w.tools, status="pending",
        created_at=now, text=w.text, prompt_tokens=w.prompt_tokens, dial_source=w.dial_source,
        about_id=w.about_id, seen_id=w.seen_id, host=procs.HOST, error="") for w in wakes])}
    ids = [made[(w.agent_id, w.mood_id)] for w in wakes]
    for w in wakes:
        if w.answers and w.taking_over:  # rare: a cut-off turn's posts change hands first
            conn.execute(_TAKE_OVER, {"wakes": list(w.taking_over), "posts": list(w.answers)})
    answered = [dict(wake_id=i, post_id=p, agent_id=w.agent_id)
                for i, w in zip(ids, wakes) for p in w.answers]
    if answered:
        conn.execute(_ADD_ANSWERS, answered)
        conn.execute(_PAID_ALL, {"pairs": sorted({(a["agent_id"], a["post_id"]) for a in answered})})
    return ids


def add_woke(s: Session, woke: Sequence[tuple[NewWake, int]], now: dt.datetime) -> None:
    """The decisions behind a batch's recorded wakes (*woke*: each wake and its id), one
    insert: a decision that woke the agent is always a row of its own."""
    if woke:
        s.connection().execute(_ADD_DECISION, [dict(
            agent_id=w.agent_id, mood_id=w.mood_id, kind=w.kind, outcome="wake", reason="woke",
            next_due=None, wake_id=i, at=now, last_at=now, count=1, detail=None)
            for w, i in woke])


_ADD_WAKES = sa.insert(Wake.__table__).returning(
    Wake.__table__.c.id, Wake.__table__.c.agent_id, Wake.__table__.c.mood_id)


_ADD_WAKE = sa.insert(Wake.__table__)
_ADD_ANSWERS = sa.insert(WakeAnswer.__table__)
_TAKE_OVER = sa.delete(WakeAnswer.__table__).where(
    WakeAnswer.__table__.c.wake_id.in_(sa.bindparam("wakes", expanding=True)),
    WakeAnswer.__table__.c.post_id.in_(sa.bindparam("posts", expanding=True)))
_PAID = sa.delete(Owed.__table__).where(
    Owed.__table__.c.agent_id == sa.bindparam("a"),
    Owed.__table__.c.post_id.in_(sa.bindparam("posts", expanding=True)))
_PAID_ALL = sa.delete(Owed.__table__).where(
    sa.tuple_(Owed.__table__.c.agent_id, Owed.__table__.c.post_id)
    .in_(sa.bindparam("pairs", expanding=True)))


def left_unanswered(s: Session, agent_id: int, mood_id: int,
                    followup_of: int) -> dict[int, list[int]]:
    """The posts cut-off turns here left unanswered, by wake: the turn owed a follow-up
    (*followup_of*), and follow-ups held for an operator after being cut off too.

    Until a wake answers them in their place (:func:`add_wake`'s *taking_over*)
    they are shown as owed (``status``, ``why``); the next mention here, or the
    follow-up, answers them."""
    held = s.scalars(_HELD, {"a": agent_id, "m": mood_id})
    ids = {int(r) for r in held if r.isdigit()} | ({followup_of} if followup_of else set())
    if not ids:
        return {}
    out: dict[int, list[int]] = {}
    for wake_id, post_id in s.execute(_UNANSWERED, {"ids": list(ids)}):
        out.setdefault(wake_id, []).append(post_id)
    return out


CUT_OFF_HELD = "cut-off"  # the quarantine's kind for a follow-up cut off too
_HELD = sa.select(Quarantine.ref).where(Quarantine.kind == CUT_OFF_HELD,
                                        Quarantine.agent_id == sa.bindparam("a"),
                                        Quarantine.mood_id == sa.bindparam("m"))
_UNANSWERED = (sa.select(WakeAnswer.wake_id, WakeAnswer.post_id)
               .join(Wake, Wake.id == WakeAnswer.wake_id)
               .where(WakeAnswer.wake_id.in_(sa.bindparam("ids", expanding=True)),
                      Wake.status == WakeStatus.CUT_OFF, Wake.reply_post_id.is_(None))
               .order_by(WakeAnswer.post_id))


def release_cut_offs(s: Session, wake_ids: Sequence[int]) -> None:
    """Cut-off turns whose posts a later wake took over: nothing held for them any more."""
    from poller.models import Quarantine

    s.execute(sa.delete(Quarantine).where(Quarantine.kind == CUT_OFF_HELD,
                                          Quarantine.ref.in_([str(i) for i in wake_ids])))


def answers(s: Session, wake_id: int) -> list[int]:
    return list(s.scalars(_ANSWERS, {"w": wake_id}))


_ANSWERS = (sa.select(WakeAnswer.post_id).where(WakeAnswer.wake_id == sa.bindparam("w"))
            .order_by(WakeAnswer.post_id))


# -- Decisions ---------------------------------------------------------------------------


def record_decision(s: Session, agent_id: int, mood_id: int, kind: str, outcome: str,
                    reason: str, next_due: Optional[dt.datetime], now: dt.datetime,
                    wake_id: Optional[int] = None, detail: Optional[str] = None,
                    merge: bool = True) -> bool:
    """Append a decision, or extend the latest one when it is the same again.

    Returns True when the decision is new (so a caller logs it once, not each cycle).
    A decision that woke the agent is always new.
    """
    d, conn = DecisionRow.__table__, s.connection()
    if wake_id is None and merge:
        last = conn.execute(_LATEST_DECISION, {"a": agent_id, "m": mood_id, "k": kind}).first()
        if last is not None and last.wake_id is None and (last.outcome, last.reason) == (outcome, reason):
            if detail:
                conn.execute(_EXTEND_DECISION_DETAIL, {"k_id": last.id, "last_at": now,
                                                       "next_due": next_due, "detail": detail})
            else:
                conn.execute(_EXTEND_DECISION, {"k_id": last.id, "last_at": now,
                                                "next_due": next_due})
            return False
    conn.execute(_ADD_DECISION, dict(agent_id=agent_id, mood_id=mood_id, kind=kind,
                                     outcome=outcome, reason=reason, next_due=next_due,
                                     wake_id=wake_id, at=now, last_at=now, count=1,
                                     detail=detail))
    return True


_D = DecisionRow.__table__
_ADD_DECISION = sa.insert(_D)
_EXTEND_DECISION = (sa.update(_D).where(_D.c.id == sa.bindparam("k_id"))
                    .values(last_at=sa.bindparam("last_at"), next_due=sa.bindparam("next_due"),
                            count=_D.c.count + 1))
_EXTEND_DECISION_DETAIL = _EXTEND_DECISION.values(detail=sa.bindparam("detail"))
_LATEST_DECISION = (sa.select(_D.c.id, _D.c.outcome, _D.c.reason, _D.c.wake_id)
                    .where(_D.c.agent_id == sa.bindparam("a"), _D.c.mood_id == sa.bindparam("m"),
                           _D.c.kind == sa.bindparam("k"))
                    .order_by(_D.c.id.desc()).limit(1))


def latest_decisions(s: Session, agent_id: int, mood_id: int) -> dict[str, DecisionRow]:
    """The newest decision of each kind weighed for the pair (the service's own kinds in
    their order, then any other kind declared)."""
    out = {}
    weighed = set(s.scalars(sa.select(DecisionRow.kind).where(
        DecisionRow.agent_id == agent_id, DecisionRow.mood_id == mood_id).distinct()))
    order = {k: i for i, k in enumerate(WakeKind)}
    for kind in sorted(weighed, key=lambda k: (order.get(k, len(order)), k)):
        q = (sa.select(DecisionRow).where(DecisionRow.agent_id == agent_id, DecisionRow.mood_id == mood_id,
                                       DecisionRow.kind == kind)
             .order_by(DecisionRow.id.desc()).limit(1))
        row = s.scalar(q)
        if row is not None:
            out[kind] = row
    return out


# -- Posts as the loop needs them ------------------------------------------------------


@dataclass(frozen=True)
class PostEvent:
    """A new post as the scan sees it: where, who (and their kind and trust), what kind."""

    id: int
    mood_id: int
    sender_id: int
    created_at: dt.datetime
    kind: str
    sender_kind: str
    sender_trust: str


def new_posts(s: Session, after_id: int, limit: int) -> list[PostEvent]:
    """Posts after *after_id* with their sender's kind and trust, oldest first."""
    return [PostEvent(r.id, r.mood_id, r.sender_id, r.created_at, r.kind, r.sender_kind, r.trust)
            for r in s.execute(_NEW_POSTS, {"after": after_id, "limit": limit})]


_NEW_POSTS = (sa.select(Post.id, Post.mood_id, Post.sender_id, Post.created_at, Post.kind,
                        Participant.kind.label("sender_kind"), Participant.trust)
              .join(Participant, Participant.id == Post.sender_id)
              .where(Post.id > sa.bindparam("after")).order_by(Post.id)
              .limit(sa.bindparam("limit")))


def mentions_between(s: Session, lo: int, hi: int, agent_ids: set[int]) -> dict[int, set[int]]:
    out: dict[int, set[int]] = {}
    for post_id, pid in s.execute(_MENTIONS_BETWEEN, {"lo": lo, "hi": hi}):
        if pid in agent_ids:
            out.setdefault(post_id, set()).add(pid)
    return out


_MENTIONS_BETWEEN = sa.select(Mention.post_id, Mention.participant_id).where(
    Mention.post_id > sa.bindparam("lo"), Mention.post_id <= sa.bindparam("hi"))


@dataclass(frozen=True)
class SignInEvent:
    id: int
    participant_id: int
    mood_id: int
    at: dt.datetime


def new_signins(s: Session, after_id: int, limit: int) -> list[SignInEvent]:
    return [SignInEvent(r.id, r.participant_id, r.mood_id, r.at)
            for r in s.execute(_NEW_SIGNINS, {"after": after_id, "limit": limit})]


_NEW_SIGNINS = (sa.select(SignIn.id, SignIn.participant_id, SignIn.mood_id, SignIn.at)
                .where(SignIn.id > sa.bindparam("after")).order_by(SignIn.id)
                .limit(sa.bindparam("limit")))


@dataclass(frozen=True)
class SignInRecord:
    id: int
    participant_id: int
    handle: str
    trust: str
    label: str


def signin(s: Session, signin_id: int) -> SignInRecord:
    row = s.get(SignIn, signin_id)
    who = s.get(Participant, row.participant_id)
    return SignInRecord(row.id, who.id, who.handle, who.trust, row.label or "")


def next_signin(s: Session, mood_id: int, after_id: int, not_by: int, since: dt.datetime) -> int:
    """The next sign-in here after *after_id*, still fresh and not by *not_by*; 0 if none."""
    return s.scalar(sa.select(sa.func.min(SignIn.id)).where(
        SignIn.mood_id == mood_id, SignIn.id > after_id, SignIn.participant_id != not_by,
        SignIn.at > since)) or 0


def newest_signin(s: Session, mood_id: int) -> int:
    return s.scalar(sa.select(sa.func.max(SignIn.id)).where(SignIn.mood_id == mood_id)) or 0


def last_spoke_id(s: Session, agent_id: int, mood_id: int) -> int:
    """The agent's newest post or silence here (its silences count as having read)."""
    return s.connection().execute(_LAST_SPOKE, {"a": agent_id, "m": mood_id}).scalar() or 0


_P = Post.__table__
_LAST_SPOKE = sa.select(sa.func.max(_P.c.id)).where(
    _P.c.sender_id == sa.bindparam("a"), _P.c.mood_id == sa.bindparam("m"),
    _P.c.kind.in_(("post", "silent")))


def last_said_at(s: Session, who_id: int, mood_id: int) -> Optional[dt.datetime]:
    q = (sa.select(Post.created_at).where(Post.sender_id == who_id, Post.mood_id == mood_id,
                                          Post.kind == "post")
         .order_by(Post.id.desc()).limit(1))
    return s.scalar(q)


def greeted_since(s: Session, agent_id: int, mood_id: int, who_id: int,
                  since: dt.datetime) -> bool:
    q = (sa.select(Wake.id).where(Wake.agent_id == agent_id, Wake.mood_id == mood_id,
                                  Wake.kind == "arrival", Wake.about_id == who_id,
                                  Wake.created_at > since).limit(1))
    return s.scalar(q) is not None


def spent_since(s: Session, agent_id: int, mood_id: int, since: dt.datetime) -> tuple[float, float]:
    """US dollars the agent's turns that ended at or after *since* cost: in this Mood, and
    in every Mood together (the costs Claude Code reports, or token counts x the configured
    prices for other agents; a turn with no cost counts nothing)."""
    q = (sa.select(Wake.mood_id, sa.func.sum(Turn.cost_usd))
         .join(Turn, Turn.wake_id == Wake.id)
         .where(Wake.agent_id == agent_id, Wake.finished_at >= since,
                Turn.cost_usd.is_not(None))
         .group_by(Wake.mood_id))
    by_mood = {m: float(cost or 0) for m, cost in s.execute(q)}
    return by_mood.get(mood_id, 0.0), sum(by_mood.values())


def post_texts(s: Session, post_ids: list[int]) -> dict[int, str]:
    """The text of each of *post_ids*."""
    known = s.info.get(_TEXTS)
    if known is not None and all(i in known for i in post_ids):
        return {i: known[i] for i in post_ids if i in known}
    return dict(s.execute(_POST_TEXTS, {"ids": list(post_ids)}).all())


@contextlib.contextmanager
def texts_read(s: Session, post_ids: Iterable[int]) -> Iterator[None]:
    """Inside the block, :func:`post_text` and :func:`post_texts` answer for *post_ids*
    from one statement made here (the scan reads what a batch's mentions say once, not
    once a post for each reader of posts); other posts are read as before."""
    ids = list(post_ids)
    s.info[_TEXTS] = dict(s.execute(_POST_TEXTS, {"ids": ids}).all()) if ids else {}
    try:
        yield
    finally:
        s.info.pop(_TEXTS, None)


_TEXTS = "mood_poller_texts_read"  # the session's info: texts of posts read at once


_POST_TEXTS = sa.select(Post.id, Post.text).where(Post.id.in_(sa.bindparam("ids", expanding=True)))


def agent_posts_between(s: Session, mood_id: int, lo: int, hi: int, limit: int) -> int:
    """Agents' posts in (lo, hi], counted up to *limit* (the newest first)."""
    inner = (sa.select(Post.id).join(Participant, Participant.id == Post.sender_id)
             .where(Post.mood_id == mood_id, Post.id > lo, Post.id <= hi,
                    Participant.kind == "agent", Post.kind == "post")
             .order_by(Post.id.desc()).limit(limit).subquery())
    return s.scalar(sa.select(sa.func.count()).select_from(inner)) or 0


def turns_in_a_row(s: Session, post_id: int, cap: int) -> int:
    """Agent turns in a row, since a person spoke, before the turn that made *post_id* (an
    agent's reply, or a handoff's arrival in another Mood), followed across Moods and
    counted up to *cap*; 0 when the post's turn answered a person (or is not known)."""
    n, seen = 0, set()
    while n < cap and post_id not in seen:
        seen.add(post_id)
        conn = s.connection()
        maker = conn.execute(_MADE_BY_HANDOFF, {"p": post_id}).scalar()
        if maker is None:
            maker = conn.execute(_MADE_BY_REPLY, {"p": post_id}).scalar()
        if maker is None:
            return n
        trigger = conn.execute(_TRIGGER, {"w": maker}).first()
        if trigger is None or trigger.kind != ParticipantKind.AGENT:
            return n  # that turn answered a person: the row starts there
        n, post_id = n + 1, trigger.post_id
    return n


_H = Handoff.__table__
_MADE_BY_HANDOFF = sa.select(_H.c.wake_id).where(_H.c.event_post_id == sa.bindparam("p")).limit(1)
_MADE_BY_REPLY = sa.select(Wake.__table__.c.id).where(Wake.__table__.c.reply_post_id == sa.bindparam("p")).limit(1)
_WA = WakeAnswer.__table__
_TRIGGER = (sa.select(_WA.c.post_id, Participant.__table__.c.kind)
            .join(_P, _P.c.id == _WA.c.post_id)
            .join(Participant.__table__, Participant.__table__.c.id == _P.c.sender_id)
            .where(_WA.c.wake_id == sa.bindparam("w"))
            .order_by(_WA.c.post_id.desc()).limit(1))


# -- What a mention is made of ------------------------------------------------------------


@dataclass(frozen=True)
class SenderTrust:
    kind: str
    trust: str


def senders(s: Session, post_ids: list[int]) -> list[SenderTrust]:
    """The kind and trust of whoever sent each of *post_ids*."""
    if not post_ids:
        return []
    return [SenderTrust(kind, trust)
            for kind, trust in s.connection().execute(_SENDERS, {"ids": list(post_ids)})]


_SENDERS = (sa.select(Participant.__table__.c.kind, Participant.__table__.c.trust)
            .join(_P, _P.c.sender_id == Participant.__table__.c.id)
            .where(_P.c.id.in_(sa.bindparam("ids", expanding=True))))


def add_system_post(s: Session, mood_id: int, sender_id: int, body: str, now: dt.datetime,
                    tokens: int) -> PostInfo:
    """The service's own note in a Mood, through the one door for posts (a bridged Mood
    shows it too: an m.notice, a webhook)."""
    return core.insert_post(s, None, mood_id, sender_id, body, now, kind=PostKind.SYSTEM,
                            tokens=tokens)


# -- Recovery --------------------------------------------------------------------------------


def in_flight_on_host(s: Session) -> list[Wake]:
    """Turns this machine started or was to start, locked (busy ones skipped)."""
    pg = s.get_bind().dialect.name == "postgresql"
    return list(s.scalars(_ON_HOST_PG if pg else _ON_HOST, {"host": procs.HOST}))


_ON_HOST = sa.select(Wake).where(Wake.status.in_(IN_FLIGHT), Wake.host == sa.bindparam("host"))
_ON_HOST_PG = _ON_HOST.with_for_update(skip_locked=True)


@dataclass(frozen=True)
class InFlight:
    """A turn of this machine pending or running, as recovery first looks at it."""

    id: int
    status: str
    runner_pid: Optional[int]
    created_at: dt.datetime


def in_flight_here_unlocked(s: Session) -> list[InFlight]:
    """Turns this machine started or was to start, read without locking them."""
    return [InFlight(*r) for r in s.connection().execute(_IN_FLIGHT_ON_HOST, {"host": procs.HOST})]


_IN_FLIGHT_ON_HOST = (sa.select(Wake.__table__.c.id, Wake.__table__.c.status,
                                Wake.__table__.c.runner_pid, Wake.__table__.c.created_at)
                      .where(Wake.__table__.c.status.in_(IN_FLIGHT),
                             Wake.__table__.c.host == sa.bindparam("host")))


@dataclass(frozen=True)
class WakeState:
    """Where a turn stands: its status, and the machine and process running it."""

    status: str
    host: str
    runner_pid: Optional[int]


def wake_state(s: Session, wake_id: int) -> Optional[WakeState]:
    row = s.connection().execute(_WAKE_STATE, {"w": wake_id}).first()
    return None if row is None else WakeState(*row)


_WAKE_STATE = (sa.select(Wake.__table__.c.status, Wake.__table__.c.host,
                         Wake.__table__.c.runner_pid)
               .where(Wake.__table__.c.id == sa.bindparam("w")))


def any_silent_elsewhere(s: Session, stale: dt.datetime) -> bool:
    """Is a turn another machine runs silent since *stale*?  Read without locking."""
    return s.scalar(_ANY_SILENT_ELSEWHERE, {"stale": stale, "host": procs.HOST}) is not None


def silent_elsewhere(s: Session, stale: dt.datetime) -> list[Wake]:
    """Turns another machine runs whose heartbeat has been silent since *stale*."""
    pg = s.get_bind().dialect.name == "postgresql"
    return list(s.scalars(_SILENT_ELSEWHERE_PG if pg else _SILENT_ELSEWHERE,
                          {"stale": stale, "host": procs.HOST}))


_SILENT = (Wake.status == WakeStatus.RUNNING, Wake.host != sa.bindparam("host"),
           sa.func.coalesce(Wake.heartbeat_at, Wake.started_at)
           < sa.bindparam("stale", type_=Wake.started_at.type))
_ANY_SILENT_ELSEWHERE = sa.select(Wake.id).where(*_SILENT).limit(1)
_SILENT_ELSEWHERE = sa.select(Wake).where(*_SILENT)
_SILENT_ELSEWHERE_PG = _SILENT_ELSEWHERE.with_for_update(skip_locked=True)


def unstarted_elsewhere(s: Session, before: dt.datetime) -> list[int]:
    """Wakes another machine recorded before *before* and never started."""
    return list(s.scalars(_UNSTARTED_ELSEWHERE, {"before": before, "host": procs.HOST}))


_UNSTARTED_ELSEWHERE = sa.select(Wake.id).where(
    Wake.status == WakeStatus.PENDING, Wake.host != sa.bindparam("host"), Wake.runner_pid.is_(None),
    Wake.created_at < sa.bindparam("before", type_=Wake.created_at.type))


def fingerprint(s: Session, l: Listener, now: dt.datetime) -> tuple:
    """What a wake decision rested on: the listener, what is owed, the agent's load.

    Taken when a wake is decided and again when it is recorded; if they
    differ, something moved in between (a turn settled, another poller woke
    the agent) and the decision is made afresh.  (:meth:`poller.store.facts.Batch.fingerprint`
    takes it from a batch's facts; the two must agree.)
    """
    conn = s.connection()
    owed = tuple(conn.execute(_OWED_HERE, {"a": l.agent_id, "m": l.mood_id}).scalars())
    here, running, hour = conn.execute(_LOAD, {"a": l.agent_id, "m": l.mood_id,
                                               "since": now - HOUR}).one()
    return listener_print(l) + (owed, bool(here), running or 0, hour or 0,
                                floor_others(s, l.agent_id, l.mood_id))


def floor_others(s: Session, agent_id: int, mood_id: int) -> int:
    """Other agents' unprompted turns in flight in the Mood, read under the Mood's lock
    on PostgreSQL: two pollers recording wakes in one Mood take turns, and the second
    sees the first's wake (its fingerprint no longer matches, so it is not recorded)."""
    conn = s.connection()
    if conn.dialect.name == "postgresql":
        conn.execute(_LOCK_MOOD, {"m": mood_id})
    return conn.execute(_FLOOR_OTHERS, {"a": agent_id, "m": mood_id}).scalar() or 0


HOUR = dt.timedelta(hours=1)
_W = Wake.__table__
_OWED_HERE = (sa.select(Owed.__table__.c.post_id)
              .where(Owed.__table__.c.agent_id == sa.bindparam("a"),
                     Owed.__table__.c.mood_id == sa.bindparam("m"))
              .order_by(Owed.__table__.c.post_id))
_IN_FLIGHT = _W.c.status.in_(IN_FLIGHT)
_RECENT = _W.c.created_at > sa.bindparam("since", type_=Wake.created_at.type)
_LOAD = (sa.select(
    sa.func.sum(sa.case((sa.and_(_IN_FLIGHT, _W.c.mood_id == sa.bindparam("m")), 1), else_=0)),
    sa.func.sum(sa.case((_IN_FLIGHT, 1), else_=0)),
    sa.func.sum(sa.case((_RECENT, 1), else_=0)))
    .where(_W.c.agent_id == sa.bindparam("a"), sa.or_(_IN_FLIGHT, _RECENT)))


_MOODS = Mood.__table__
_LOCK_MOOD = (sa.select(_MOODS.c.id).where(_MOODS.c.id == sa.bindparam("m"))
              .with_for_update(key_share=True))  # NO KEY UPDATE: posts may still come in
UNPROMPTED = (WakeKind.CONSIDER, WakeKind.QUIET, WakeKind.ARRIVAL)  # as poller.law has them
_FLOOR_OTHERS = (sa.select(sa.func.count()).select_from(_W)
                 .where(_W.c.mood_id == sa.bindparam("m"), _W.c.agent_id != sa.bindparam("a"),
                        _IN_FLIGHT, _W.c.kind.in_(UNPROMPTED)))


def listener_print(l) -> tuple:
    """The listener's part of a fingerprint: its timers, cursors and hold."""
    return (l.due_at, l.consider_from_id, l.consider_due_at, l.quiet_due_at,
            l.arrival_signin_id, l.looked_id, l.cooldown_until, l.hold_reason,
            l.followup_of, l.followup_due_at, l.stopped_at, l.command_post_id, l.return_of,
            l.nudge_due_at, l.marks)


def newest_person_post(s: Session, mood_id: int) -> int:
    """The newest post a person made in the Mood; 0 if none."""
    return s.scalar(
        sa.select(sa.func.max(Post.id)).join(Participant, Participant.id == Post.sender_id)
        .where(Post.mood_id == mood_id, Participant.kind == ParticipantKind.PERSON,
               Post.kind == PostKind.POST)) or 0


# -- Quarantine ----------------------------------------------------------------------------


def quarantine(s: Session, kind: str, ref: str, error: str, now: dt.datetime, *,
               agent_id: Optional[int] = None, mood_id: Optional[int] = None) -> bool:
    """Set an item aside with its error; True the first time, False when seen again."""
    from poller.models import Quarantine

    row = s.scalar(sa.select(Quarantine).where(Quarantine.kind == kind, Quarantine.ref == ref))
    error = error[:2000]
    if row is not None:
        row.last_at, row.count, row.error = now, row.count + 1, error
        return False
    s.add(Quarantine(kind=kind, ref=ref, agent_id=agent_id, mood_id=mood_id, error=error, at=now,
                     last_at=now, count=1))
    return True


def defer_listener(s: Session, agent_id: int, mood_id: int, until: dt.datetime) -> None:
    s.execute(sa.update(Listener).where(Listener.agent_id == agent_id, Listener.mood_id == mood_id)
              .values(due_at=until))


def agent_active(s: Session, agent_id: int) -> bool:
    """The agent exists and has not been removed."""
    return s.connection().execute(_ACTIVE, {"a": agent_id}).first() is not None


_ACTIVE = sa.select(_AGENTS.c.participant_id).where(_AGENTS.c.participant_id == sa.bindparam("a"),
                                                    _AGENTS.c.retired_at.is_(None))
