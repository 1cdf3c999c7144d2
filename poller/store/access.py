"""Who may come in at the front door, and what the door reads.

People's tokens (``mood-poller person token``) are kept only as their SHA-256:
the token itself is printed once and never stored, so a copy of the database
signs nobody in.  A web session is the same: the cookie holds a random secret,
the table its digest.  Revoking a person's tokens ends their sessions.

Also here: the reads ``serve`` needs that the CLI does not (a page of posts
before an id, the changes an event stream watches, turns and tokens per agent
since a time, the figures ``/metrics`` and ``/healthz`` report) and the
pollers' beats, each cycle's time, which ``/healthz`` ages.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass, field
from typing import Optional

import sqlalchemy as sa
from sqlalchemy.orm import Session

from poller import errors
from poller.kinds import IN_FLIGHT, ParticipantKind
from poller.models import (DialCache, Listener, Mood, Owed, Participant, PersonToken, PollerBeat,
                           Post, Turn, Wake, WebSession)
from poller.store import db
from poller.store.core import Store

TOKEN_PREFIX = "mpt_"  # a person's token starts with this, so a leaked one is recognisable
SESSION_TTL = dt.timedelta(days=14)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Identity:
    """The person a token or a session speaks for."""

    person_id: int
    handle: str
    trust: str
    operator: bool
    token_id: int

    @property
    def may_post(self) -> bool:
        return self.trust in ("full", "look")

    def to_json(self) -> dict:
        return {"handle": self.handle, "trust": self.trust, "operator": self.operator}


# -- Tokens -------------------------------------------------------------------------------


def new_token(store: Store, handle: str, now: dt.datetime) -> tuple[str, int]:
    """A new token for the person HANDLE: (the token, shown only now; its id)."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with store.writing() as s:
        p = _person(s, handle)
        row = PersonToken(participant_id=p.id, digest=digest(token), created_at=now)
        s.add(row)
        s.flush()
        return token, row.id


def revoke_tokens(store: Store, handle: str, now: dt.datetime) -> int:
    """Revoke every live token of HANDLE (and so their sessions); how many."""
    with store.writing() as s:
        p = _person(s, handle)
        return s.execute(sa.update(PersonToken).where(
            PersonToken.participant_id == p.id, PersonToken.revoked_at.is_(None))
            .values(revoked_at=now)).rowcount


def identify(store: Store, token: str) -> Optional[Identity]:
    """The person a live token belongs to, or None.

    The lookup is by the token's digest, which a caller cannot steer byte by
    byte; the stored digest is then compared in constant time as well.
    """
    if not token or len(token) > 200:
        return None
    return _by_digest(store, digest(token))


def _by_digest(store: Store, want: str) -> Optional[Identity]:
    row = _first(store, _IDENTITY, {"digest": want})
    if row is None or not hmac.compare_digest(row.digest, want):
        return None
    return _identity(row)


IDENTITY_TTL = 2.0  # seconds a server trusts what it read of a token (see Identities)


class Identities:
    """Who bearer tokens belong to, as one server remembers them for a short while.

    Every API request names its token, and reading it back was a fifth of a request's
    work.  A token seen here is trusted for *ttl* seconds, never longer: a change
    committed by this process to people or tokens (a revoke, a new trust, a removal, a
    role) forgets them all at once (:func:`identities_changed`), and one committed by
    another process (the CLI beside a running ``serve``) is seen within *ttl*.  Unknown
    or revoked tokens are not remembered: each is looked up again.
    """

    def __init__(self, store: Store, ttl: float = IDENTITY_TTL,
                 clock=None, size: int = 10_000) -> None:
        self.store, self.ttl, self.size = store, ttl, size
        self.clock = clock or time.monotonic
        self._known: dict[str, tuple[int, float, Identity]] = {}

    def identify(self, token: str) -> Optional[Identity]:
        """:func:`identify`, remembered."""
        if not token or len(token) > 200:
            return None
        want, now, epoch = digest(token), self.clock(), _EPOCH[0]
        hit = self._known.get(want)
        if hit is not None and hit[0] == epoch and 0 <= now - hit[1] < self.ttl:
            return hit[2]
        who = _by_digest(self.store, want)
        if who is None:
            self._known.pop(want, None)
        else:
            if len(self._known) >= self.size:
                self._known.clear()
            self._known[want] = (epoch, now, who)
        return who


_EPOCH = [0]  # bumped when this process commits a change to people or tokens


def identities_changed() -> None:
    """Forget every identity remembered in this process (:class:`Identities`)."""
    _EPOCH[0] += 1


_WHO = (Participant, PersonToken)


@sa.event.listens_for(Session, "after_flush")
def _flushed_people(session, _context) -> None:
    if any(isinstance(o, _WHO) for o in (*session.new, *session.dirty, *session.deleted)):
        session.info["identities"] = True


@sa.event.listens_for(Session, "do_orm_execute")
def _bulk_people(state) -> None:
    if (state.is_update or state.is_delete) and state.bind_mapper is not None \
            and state.bind_mapper.class_ in _WHO:
        state.session.info["identities"] = True


@sa.event.listens_for(Session, "after_commit")
def _committed_people(session) -> None:
    if session.info.pop("identities", False):
        identities_changed()


@sa.event.listens_for(Session, "after_rollback")
def _rolled_back_people(session) -> None:
    session.info.pop("identities", None)


def _first(store: Store, query, params: Optional[dict] = None):
    """The first row of a read on a plain connection: every request asks who it is from,
    and a connection costs half what an ORM session does.  On PostgreSQL the one statement
    runs outside a transaction (autocommit: no ``BEGIN`` before it, no ``ROLLBACK`` after,
    two round trips of the three), which a single read does not need; on SQLite it is
    sent with no ``BEGIN`` before it."""
    with store.engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            conn = conn.execution_options(isolation_level="AUTOCOMMIT")
        else:  # SQLite: the SELECT is its own transaction, without a BEGIN sent first
            conn = conn.execution_options(**{db.SINGLE_READ: True})
        return conn.execute(query, params).first()


def _identity_query():
    return (sa.select(Participant.id, Participant.handle, Participant.trust, Participant.operator,
                      PersonToken.id.label("token_id"), PersonToken.digest)
            .join(PersonToken, PersonToken.participant_id == Participant.id)
            .where(PersonToken.revoked_at.is_(None), Participant.retired_at.is_(None),
                   Participant.kind == ParticipantKind.PERSON))


_IDENTITY = _identity_query().where(PersonToken.digest == sa.bindparam("digest"))


def _identity(row) -> Identity:
    return Identity(row.id, row.handle, row.trust, bool(row.operator), row.token_id)


def set_operator(store: Store, handle: str, operator: bool) -> None:
    with store.writing() as s:
        _person(s, handle).operator = operator


def operators(store: Store) -> set[int]:
    """The ids of the people with the operator role."""
    with store.reading() as s:
        return set(s.scalars(sa.select(Participant.id).where(Participant.operator.is_(True))))


def _person(s, handle: str) -> Participant:
    p = Store._participant(s, handle)
    if p.kind != ParticipantKind.PERSON:
        raise errors.UserError(f"{p.handle!r} is an agent; tokens and roles are for people")
    if p.retired_at is not None:
        raise errors.UserError(f"{p.handle!r} was removed")
    return p


# -- Web sessions ---------------------------------------------------------------------------


def open_session(store: Store, who: Identity, now: dt.datetime) -> str:
    """A new session for *who*: the cookie's secret (only its digest is kept)."""
    secret = secrets.token_urlsafe(32)
    with store.writing() as s:
        s.execute(sa.delete(WebSession).where(WebSession.expires_at <= now))
        s.add(WebSession(digest=digest(secret), token_id=who.token_id, created_at=now,
                         expires_at=now + SESSION_TTL))
    return secret


def session_identity(store: Store, secret: str, now: dt.datetime) -> Optional[Identity]:
    if not secret or len(secret) > 200:
        return None
    want = digest(secret)
    row = _first(store, _identity_query().add_columns(WebSession.digest.label("session_digest"))
                 .join(WebSession, WebSession.token_id == PersonToken.id)
                 .where(WebSession.digest == want, WebSession.expires_at > now))
    if row is None or not hmac.compare_digest(row.session_digest, want):
        return None
    return _identity(row)


def close_session(store: Store, secret: str) -> None:
    with store.writing() as s:
        s.execute(sa.delete(WebSession).where(WebSession.digest == digest(secret)))


# -- What the door reads ----------------------------------------------------------------------


def posts_page(store: Store, slug: str, *, after_id: int = 0, before_id: Optional[int] = None,
               limit: int = 50) -> list:
    """Up to *limit* posts of a Mood between the ids, oldest first: after *after_id* the
    oldest ones, else the newest before *before_id*."""
    from poller import values

    with store.reading() as s:
        mood = Store._mood(s, slug)
        q = (sa.select(Post, Participant.handle, Participant.kind)
             .join(Participant, Participant.id == Post.sender_id)
             .where(Post.mood_id == mood.id, Post.id > after_id))
        if before_id is not None:
            q = q.where(Post.id < before_id)
        newest_first = after_id == 0
        q = q.order_by(Post.id.desc() if newest_first else Post.id).limit(limit)
        rows = s.execute(q).all()
        if newest_first:
            rows.reverse()
        return [values.PostInfo.from_row(p, slug, h, k) for p, h, k in rows]


@dataclass(frozen=True)
class Heads:
    """What an event stream watches, store-wide: when it changes, streams look closer."""

    post_id: int
    wake_id: int
    in_flight: tuple[tuple[int, str, Optional[str]], ...]  # (wake id, status, progress)
    holds: tuple[tuple[int, int, str], ...]  # (agent id, Mood id, reason)


def heads(store: Store) -> Heads:
    with store.reading() as s:
        post_id = s.scalar(sa.select(sa.func.max(Post.id))) or 0
        wake_id = s.scalar(sa.select(sa.func.max(Wake.id))) or 0
        flight = tuple(tuple(r) for r in s.execute(
            sa.select(Wake.id, Wake.status, Wake.progress).where(Wake.status.in_(IN_FLIGHT))
            .order_by(Wake.id)))
        holds = tuple(tuple(r) for r in s.execute(
            sa.select(Listener.agent_id, Listener.mood_id, Listener.hold_reason)
            .where(Listener.hold_reason.is_not(None))
            .order_by(Listener.agent_id, Listener.mood_id)))
    return Heads(post_id, wake_id, flight, holds)


def moods_touched(store: Store, old: Heads, new: Heads) -> set[int]:
    """The Moods where something moved between two looks at the heads: new posts, turns
    started or ended, holds set or lifted."""
    holds = {mood for _, mood, _ in set(old.holds) ^ set(new.holds)}
    turns = {wake for wake, *_ in set(old.in_flight) ^ set(new.in_flight)}
    with store.reading() as s:
        posts = set(s.scalars(sa.select(Post.mood_id).distinct().where(
            Post.id > old.post_id, Post.id <= new.post_id)))
        wakes = set(s.scalars(sa.select(Wake.mood_id).distinct().where(sa.or_(
            sa.and_(Wake.id > old.wake_id, Wake.id <= new.wake_id), Wake.id.in_(turns)))))
    return posts | wakes | holds


@dataclass(frozen=True)
class TurnRecord:
    id: int
    agent: str
    kind: str
    status: str
    since: dt.datetime
    finished_at: Optional[dt.datetime]
    progress: Optional[str] = None  # what it is doing while it runs (names only)


@dataclass(frozen=True)
class HoldRecord:
    agent: str
    reason: str
    since: Optional[dt.datetime]
    owed: int


@dataclass(frozen=True)
class MoodChanges:
    posts: list
    turns: list[TurnRecord]  # wakes after the cursor, those in flight, and the ones asked about
    holds: list[HoldRecord]


def mood_changes(store: Store, slug: str, after_post: int, after_wake: int,
                 watched: tuple[int, ...] = (), limit: int = 200) -> MoodChanges:
    """A Mood's posts after *after_post*, its turns after *after_wake* or in flight (and
    the *watched* ones), and its holds on owed mentions now."""
    from poller import values

    with store.reading() as s:
        mood = Store._mood(s, slug)
        rows = s.execute(sa.select(Post, Participant.handle, Participant.kind)
                         .join(Participant, Participant.id == Post.sender_id)
                         .where(Post.mood_id == mood.id, Post.id > after_post)
                         .order_by(Post.id).limit(limit)).all()
        posts = [values.PostInfo.from_row(p, slug, h, k) for p, h, k in rows]
        which = sa.or_(Wake.id > after_wake, Wake.status.in_(IN_FLIGHT))
        if watched:
            which = sa.or_(which, Wake.id.in_(watched))
        turns = [TurnRecord(w.id, h, w.kind, w.status, w.started_at or w.created_at,
                            w.finished_at, w.progress) for w, h in s.execute(
            sa.select(Wake, Participant.handle).join(Participant, Participant.id == Wake.agent_id)
            .where(Wake.mood_id == mood.id, which).order_by(Wake.id).limit(limit))]
        owed = dict(s.execute(sa.select(Owed.agent_id, sa.func.count()).where(
            Owed.mood_id == mood.id).group_by(Owed.agent_id)).all())
        holds = [HoldRecord(h, l.hold_reason, l.hold_since, owed[l.agent_id]) for l, h in s.execute(
            sa.select(Listener, Participant.handle)
            .join(Participant, Participant.id == Listener.agent_id)
            .where(Listener.mood_id == mood.id, Listener.hold_reason.is_not(None))
            .order_by(Participant.handle_key)) if owed.get(l.agent_id)]
    return MoodChanges(posts, turns, holds)


@dataclass(frozen=True)
class AgentDay:
    turns: int
    tokens: int
    usd: float = 0.0  # what those turns cost (as reported, or priced by tokens)


def agents_since(store: Store, since: dt.datetime) -> dict[str, AgentDay]:
    """Turns started, prompt tokens sent and dollars spent per agent handle since *since*."""
    with store.reading() as s:
        rows = s.execute(sa.select(Participant.handle, sa.func.count(Wake.id),
                                   sa.func.coalesce(sa.func.sum(Wake.prompt_tokens), 0),
                                   sa.func.coalesce(sa.func.sum(Turn.cost_usd), 0.0))
                         .join(Participant, Participant.id == Wake.agent_id)
                         .outerjoin(Turn, Turn.wake_id == Wake.id)
                         .where(Wake.created_at >= since).group_by(Participant.handle)).all()
    return {h: AgentDay(int(n), int(t), round(float(usd), 6)) for h, n, t, usd in rows}


# -- Health and metrics -------------------------------------------------------------------


def record_beat(store: Store, holder: str, at: dt.datetime, interval: float, took: float,
                scope: str = "all") -> None:
    """A poller serving *scope* finished a cycle at *at* (it runs one every *interval* s)."""
    with store.writing() as s:
        row = s.get(PollerBeat, holder)
        if row is None:
            s.add(PollerBeat(holder=holder, at=at, interval=interval, took=took, scope=scope))
        else:
            row.at, row.interval, row.took, row.scope = at, interval, took, scope


def drop_beat(store: Store, holder: str) -> None:
    with store.writing() as s:
        s.execute(sa.delete(PollerBeat).where(PollerBeat.holder == holder))


@dataclass(frozen=True)
class Beat:
    holder: str
    at: dt.datetime
    interval: float
    took: float
    scope: str = "all"


# A bridge beats as a poller does, in the same table, its holder under this prefix
# ("bridge:matrix:HOST:PID"), its scope saying what it serves.
BRIDGE_PREFIX = "bridge:"
_POLLERS = ~PollerBeat.holder.startswith(BRIDGE_PREFIX)


def beats(s) -> list[Beat]:
    """Every running poller's last beat, newest first."""
    rows = s.scalars(sa.select(PollerBeat).where(_POLLERS)
                     .order_by(PollerBeat.at.desc(), PollerBeat.holder))
    return [Beat(r.holder, r.at, r.interval, r.took, r.scope) for r in rows]


def last_beat(store: Store) -> Optional[Beat]:
    with store.reading() as s:
        row = s.scalar(sa.select(PollerBeat).where(_POLLERS)
                       .order_by(PollerBeat.at.desc()).limit(1))
        return None if row is None else Beat(row.holder, row.at, row.interval, row.took)


def bridge_holder(bridge: str) -> str:
    """This process's holder name as the bridge *bridge*."""
    import os

    from poller import procs

    return f"{BRIDGE_PREFIX}{bridge}:{procs.HOST}:{os.getpid()}"


@dataclass(frozen=True)
class BridgeBeat:
    """A running bridge as ``health``, ``status`` and ``/metrics`` show it."""

    bridge: str  # matrix | webhook
    holder: str
    at: dt.datetime  # its last beat
    every: float  # seconds between beats
    serves: str  # what it said it serves
    last_event_at: Optional[dt.datetime]  # the newest chat event it took in
    backlog: int  # outbox items waiting for it
    failed: int  # outbox items it gave up on (``outbox retry``)

    def stale(self, now: dt.datetime, intervals: float = 5.0) -> bool:
        return (now - self.at).total_seconds() > intervals * max(self.every, 1.0) + 30


def bridges_needed(s) -> dict[str, int]:
    """The bridges this database has work for: ``matrix`` with its linked Moods, ``webhook``
    with its webhooks (name -> how many)."""
    from poller.models import BridgeLink, Webhook

    rooms = s.scalar(sa.select(sa.func.count()).select_from(BridgeLink)
                     .where(BridgeLink.kind == "mood", BridgeLink.bridge == "matrix"))
    hooks = s.scalar(sa.select(sa.func.count()).select_from(Webhook))
    return {name: n for name, n in (("matrix", rooms), ("webhook", hooks)) if n}


def bridge_beats(s) -> list[BridgeBeat]:
    """Every bridge that beats (running, or stopped without saying so), newest first."""
    from poller.models import BridgeEvent, OutboxItem

    rows = s.scalars(sa.select(PollerBeat).where(PollerBeat.holder.startswith(BRIDGE_PREFIX))
                     .order_by(PollerBeat.at.desc(), PollerBeat.holder)).all()
    out = []
    for r in rows:
        bridge = r.holder[len(BRIDGE_PREFIX):].split(":", 1)[0]
        counts = dict(s.execute(sa.select(OutboxItem.status, sa.func.count())
                                .where(OutboxItem.bridge == bridge)
                                .group_by(OutboxItem.status)).all())
        last = s.scalar(sa.select(sa.func.max(BridgeEvent.at)).where(BridgeEvent.bridge == bridge))
        out.append(BridgeBeat(bridge, r.holder, r.at, r.interval, r.scope, last,
                              counts.get("pending", 0), counts.get("failed", 0)))
    return out


@dataclass(frozen=True)
class Figures:
    """What ``/metrics`` reports, read in one transaction."""

    wakes: dict[tuple[str, str], int]  # (kind, status) -> count
    turn_seconds: "Histogram"  # finished turns' durations
    prompt_tokens: "Histogram"  # every wake's prompt size
    holds: dict[str, int]  # reason -> listeners holding owed mentions
    owed: int
    dial_fetched_at: Optional[dt.datetime]
    moods: int
    # Per agent: (tokens in, tokens out, US dollars) of its turns, as recorded.
    spent: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Histogram:
    """Cumulative counts at each upper bound, the count and the sum: Prometheus' shape."""

    buckets: tuple[tuple[float, int], ...]
    count: int
    total: float


def histogram(s, value, bounds: tuple[float, ...], *where) -> Histogram:
    """A histogram of the SQL expression *value* over wakes, counted by the database in
    one pass (nothing loaded row by row, however many wakes there are)."""
    cols = [sa.func.coalesce(sa.func.sum(sa.case((value <= b, 1), else_=0)), 0) for b in bounds]
    row = s.execute(sa.select(*cols, sa.func.count(), sa.func.coalesce(sa.func.sum(value), 0))
                    .select_from(Wake).where(*where)).one()
    return Histogram(tuple(zip(bounds, map(int, row[:-2]))), int(row[-2]), float(row[-1]))


def seconds_between(s, start, end):
    """``end - start`` in seconds, as this database computes it."""
    if s.get_bind().dialect.name == "postgresql":
        return sa.func.extract("epoch", end - start)
    return (sa.func.julianday(end) - sa.func.julianday(start)) * 86400.0


TURN_BOUNDS = (0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600)
TOKEN_BOUNDS = (250, 500, 1000, 2000, 4000, 8000, 16000, 32000)


def figures(store: Store) -> Figures:
    with store.reading() as s:
        wakes = {(k, st): n for k, st, n in s.execute(
            sa.select(Wake.kind, Wake.status, sa.func.count()).group_by(Wake.kind, Wake.status))}
        durations = histogram(s, seconds_between(s, Wake.started_at, Wake.finished_at),
                              TURN_BOUNDS, Wake.started_at.is_not(None),
                              Wake.finished_at.is_not(None))
        tokens = histogram(s, Wake.prompt_tokens, TOKEN_BOUNDS)
        owed_pairs = sa.select(Owed.agent_id, Owed.mood_id).distinct().subquery()
        holds = dict(s.execute(
            sa.select(Listener.hold_reason, sa.func.count()).select_from(Listener)
            .join(owed_pairs, sa.and_(owed_pairs.c.agent_id == Listener.agent_id,
                                      owed_pairs.c.mood_id == Listener.mood_id))
            .where(Listener.hold_reason.is_not(None))
            .group_by(Listener.hold_reason)).all())
        owed = s.scalar(sa.select(sa.func.count()).select_from(Owed)) or 0
        fetched = s.scalar(sa.select(sa.func.max(DialCache.fetched_at)))
        moods = s.scalar(sa.select(sa.func.count()).select_from(Mood)) or 0
        spent = {handle: (int(i or 0), int(o or 0), float(c or 0)) for handle, i, o, c in s.execute(
            sa.select(Participant.handle, sa.func.sum(Turn.tokens_in), sa.func.sum(Turn.tokens_out),
                      sa.func.sum(Turn.cost_usd))
            .join(Wake, Wake.id == Turn.wake_id).join(Participant, Participant.id == Wake.agent_id)
            .group_by(Participant.handle))}
    return Figures(wakes, durations, tokens, holds, owed, fetched, moods, spent)


def ping(store: Store) -> None:
    """Raise if the database cannot answer a trivial query."""
    with store.reading() as s:
        s.execute(sa.select(1))
