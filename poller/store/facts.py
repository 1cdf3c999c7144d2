"""The facts a cycle decides on, read for a whole batch of due (agent, Mood) pairs at once.

The cycle claims a batch of due listeners and reads everything ``law.decide``
may ask about them in a handful of set queries (the listeners, their Moods,
what is owed and who sent it, the agents' turns in flight and wakes of the
last hour, the latest decision of each kind, the unprompted turns of any
agent in flight in their Moods, and, where several agents are due in one
Mood, when each last spoke there); it decides in Python, then
writes the listeners that changed and the decisions with one executemany
each.  The statements are SQLAlchemy Core on the session's connection, so
they are compiled once and cached; rows come back as plain values.

On PostgreSQL the listeners are claimed with ``FOR UPDATE SKIP LOCKED`` (a
pair another poller holds is not ours this cycle) and the batch's agents are
locked in id order, so two pollers never weigh one agent's caps at once.
"""

from __future__ import annotations

import datetime as dt
import operator
from dataclasses import dataclass, field
from typing import Iterable, Optional

import sqlalchemy as sa
from sqlalchemy.orm import Session

from poller.kinds import FINISHED, IN_FLIGHT, PostKind, WakeKind, WakeStatus
from poller.models import (Agent, DecisionRow, Listener, Mood, Owed, Participant, Post,
                           UTCDateTime, Wake)
from poller.store import absences, cycle
from poller.values import MoodInfo

HOUR = dt.timedelta(hours=1)
SCREENED_OUT = "screened-out"  # a consider the screen turned away (see poller.screen)
UNPROMPTED = (WakeKind.CONSIDER, WakeKind.QUIET, WakeKind.ARRIVAL)  # as poller.law has them

LISTENERS = Listener.__table__
COLUMNS = tuple(c.name for c in LISTENERS.columns)
KEY = ("agent_id", "mood_id")
MUTABLE = tuple(c for c in COLUMNS if c not in KEY)
Pair = tuple[int, int]  # (agent_id, mood_id)


class ListenerRow:
    """A listener row as plain attributes, which the cycle changes in place and
    :func:`save` writes back (inserted if new, updated only if changed).  For a
    due pair the batch adds what it read about it: the posts owed, who sent them
    (person or agent), and the agent's considers here in the last hour."""

    owed: list[int] = []  # (set per row only where something is owed: never appended to)
    sender_kinds: list[str] = []
    considers: tuple[dt.datetime, ...] = ()

    def __init__(self, values: Iterable) -> None:
        self.__dict__.update(zip(COLUMNS, values))  # thousands a batch: no per-column Python
        self._was: Optional[tuple] = _state(self)

    @classmethod
    def fresh(cls, agent_id: int, mood_id: int) -> "ListenerRow":
        """A listener the database does not hold yet: inserted by :func:`save`."""
        row = cls(NEW.get(name, {"agent_id": agent_id, "mood_id": mood_id}.get(name))
                  for name in COLUMNS)
        row._was = None
        return row

    def state(self) -> tuple:
        return _state(self)

    def restore(self) -> None:
        """Undo what weighing this pair changed (it raised and is set aside)."""
        for name, value in zip(MUTABLE, self._was or ()):
            setattr(self, name, value)

    @property
    def changed(self) -> bool:
        return _state(self) != self._was


_state = operator.attrgetter(*MUTABLE)  # the columns a cycle may change, as one tuple


def _picker(which: list[int]):
    """A function picking the values at *which* from a state, always as a tuple."""
    if len(which) == 1:
        return lambda state: (state[which[0]],)
    return operator.itemgetter(*which)


_UNTOUCHED = _picker(list(range(len(MUTABLE))))
NEW = dict(last_person_id=0, looked_id=0, consider_from_id=0, quiet_backoff=0,
           arrival_signin_id=0, followup_of=0, command_post_id=0,
           return_of=0, marks="")  # a new listener's columns that are not NULL


def listeners(s: Session, pairs: set[Pair]) -> dict[Pair, ListenerRow]:
    """The listener rows of *pairs*, new ones where missing (see :func:`save`).

    Locked on PostgreSQL: a poller evaluating one of them elsewhere finishes
    first, so its changes are not overwritten by this transaction's.
    """
    if not pairs:
        return {}
    s.flush()
    conn = s.connection()
    q = _IN_MOODS_PG if conn.dialect.name == "postgresql" else _IN_MOODS
    found = {}
    for row in conn.execute(q, {"moods": sorted({m for _, m in pairs})}):
        pair = (row.agent_id, row.mood_id)
        if pair in pairs:
            found[pair] = ListenerRow(row)
    for pair in pairs - found.keys():
        found[pair] = ListenerRow.fresh(*pair)
    return found


# Statements built once, their values bound at execution (see poller.store.reads).
_ALL = sa.select(*(LISTENERS.c[name] for name in COLUMNS))
_IN_MOODS = _ALL.where(LISTENERS.c.mood_id.in_(sa.bindparam("moods", expanding=True)))
_IN_MOODS_PG = _IN_MOODS.with_for_update()
_ONE = _ALL.where(LISTENERS.c.agent_id == sa.bindparam("a"),
                  LISTENERS.c.mood_id == sa.bindparam("m"))
_ONE_PG = _ONE.with_for_update(skip_locked=True)
_DUE_OF = _ALL.where(sa.tuple_(LISTENERS.c.agent_id, LISTENERS.c.mood_id)
                     .in_(sa.bindparam("pairs", expanding=True)),
                     LISTENERS.c.due_at <= sa.bindparam("now", type_=LISTENERS.c.due_at.type))
_DUE_OF_PG = _DUE_OF.with_for_update(skip_locked=True)



_INSERT = sa.insert(LISTENERS)


def _update(dialect, columns: tuple[str, ...]) -> tuple[str, tuple]:
    """UPDATE listeners SET *columns* for one (agent_id, mood_id), as the driver's own SQL,
    with a converter for each parameter (see :func:`_to_driver`)."""
    key = (dialect.name, columns)
    made = _UPDATES.get(key)
    if made is None:
        mark = "?" if dialect.paramstyle == "qmark" else "%s"
        sql = (f"UPDATE {LISTENERS.name} SET " + ", ".join(f"{c} = {mark}" for c in columns)
               + f" WHERE agent_id = {mark} AND mood_id = {mark}")
        made = _UPDATES[key] = (sql, tuple(_to_driver(dialect) if c in _TIMES else None
                                           for c in columns))
    return made


_UPDATES: dict[tuple, tuple[str, tuple]] = {}
_TIMES = {c.name for c in LISTENERS.columns if isinstance(c.type, UTCDateTime)}
UTC = dt.timezone.utc


def _to_driver(dialect):
    """An aware time as the column stores it, the conversion ``UTCDateTime`` and the
    dialect make, done here once per value: thousands of listeners are written a batch,
    and SQLAlchemy's per-row parameter processing was most of the cost."""
    if dialect.name == "sqlite":  # SQLAlchemy's SQLite DATETIME storage format, exactly
        def sqlite(v):
            if v is None:
                return None
            u = v.astimezone(UTC)
            return "%04d-%02d-%02d %02d:%02d:%02d.%06d" % (
                u.year, u.month, u.day, u.hour, u.minute, u.second, u.microsecond)
        return sqlite
    return lambda v: None if v is None else v.astimezone(UTC).replace(tzinfo=None)


def claim_one(s: Session, agent_id: int, mood_id: int) -> Optional[ListenerRow]:
    """The pair's listener, locked for this transaction; None if it has none, or
    (PostgreSQL) another poller holds it now."""
    s.flush()
    conn = s.connection()
    q = _ONE_PG if conn.dialect.name == "postgresql" else _ONE
    row = conn.execute(q, {"a": agent_id, "m": mood_id}).first()
    return None if row is None else ListenerRow(row)


def save(s: Session, rows: Iterable[ListenerRow]) -> None:
    """Insert the new listener rows and update the changed ones, an executemany each.

    The update sets only the columns some row changed: a scan moves a few
    timers of thousands of listeners, and every column set costs a conversion.
    """
    s.flush()  # what the session holds goes first (a hold note, a new Mood's rows)
    conn = s.connection()
    new, changed, touched = [], [], set()
    rest = _UNTOUCHED  # picks the columns no row has changed yet
    for l in rows:
        if l._was is None:
            new.append({name: getattr(l, name) for name in COLUMNS})
            continue
        state = _state(l)
        if state != l._was:
            changed.append((l, state))
            if rest is not None and rest(state) != rest(l._was):  # a column not seen changing
                touched.update(i for i, (a, b) in enumerate(zip(state, l._was)) if a != b)
                left = [i for i in range(len(MUTABLE)) if i not in touched]
                rest = _picker(left) if left else None
    if new:
        conn.execute(_INSERT, new)
    if changed:
        which = sorted(touched)
        sql, convert = _update(conn.dialect, tuple(MUTABLE[i] for i in which))
        pick = _picker(which)
        conn.exec_driver_sql(sql, [
            tuple(f(v) if f else v for f, v in zip(convert, pick(state))) + (l.agent_id, l.mood_id)
            for l, state in changed])
    s.expire_all()  # rows this session had loaded may have changed underneath it


@dataclass
class Load:
    """One agent's turns in flight and wakes in the last hour: as the batch read them,
    plus the wakes it has decided since (recorded before the next pair's wake is)."""

    running: int = 0
    here: set[int] = field(default_factory=set)  # Moods where a turn of it is in flight
    woke: list[dt.datetime] = field(default_factory=list)  # its wakes' times, any Mood

    def planned(self, mood_id: int, now: dt.datetime) -> None:
        self.running += 1
        self.here.add(mood_id)
        self.woke.append(now)


@dataclass(frozen=True)
class Latest:
    """The newest decision recorded for one (agent, Mood, kind)."""

    id: int
    outcome: str
    reason: str
    wake_id: Optional[int]

    def repeated_by(self, outcome: str, reason: str) -> bool:
        return self.wake_id is None and (self.outcome, self.reason) == (outcome, reason)


@dataclass
class Batch:
    """Everything the decisions of one batch rest on."""

    now: dt.datetime
    listeners: dict[Pair, ListenerRow]
    moods: dict[int, MoodInfo]
    load: dict[int, Load]
    latest: dict[tuple[int, int, str], Latest]
    decisions: list[dict] = field(default_factory=list)  # to record, see decide()
    # The floor: per Mood, the unprompted turns in flight there (and those this batch
    # decides, see took_floor), oldest first, as (agent_id, handle).
    floor: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    spoke: dict[Pair, dt.datetime] = field(default_factory=dict)  # in crowded Moods only
    # Calm, per Mood with a consider due: silent unprompted turns in a row, the newest's end
    calm: dict[int, tuple[int, Optional[dt.datetime]]] = field(default_factory=dict)
    away: dict[int, absences.Absence] = field(default_factory=dict)  # agents out, by id

    def floor_holder(self, agent_id: int, mood_id: int) -> Optional[str]:
        """The handle of another agent holding the floor in the Mood, or None."""
        return next((h for a, h in self.floor.get(mood_id, ()) if a != agent_id), None)

    def floor_others(self, agent_id: int, mood_id: int) -> int:
        """Other agents' unprompted turns in flight in the Mood (for the fingerprint)."""
        return sum(1 for a, _ in self.floor.get(mood_id, ()) if a != agent_id)

    def took_floor(self, agent_id: int, handle: str, mood_id: int) -> None:
        self.floor.setdefault(mood_id, []).append((agent_id, handle))

    def fingerprint(self, l: ListenerRow, now: dt.datetime) -> tuple:
        """What a wake decision on *l* rests on, as :func:`cycle.fingerprint` reads it one
        pair at a time: the listener, what is owed, the agent's load (with the wakes this
        batch planned before it) and the others' unprompted turns in flight in the Mood."""
        load = self.load[l.agent_id]
        return cycle.listener_print(l) + (
            tuple(l.owed), l.mood_id in load.here, load.running,
            sum(1 for t in load.woke if t > now - HOUR), self.floor_others(l.agent_id, l.mood_id))

    def repeats(self, l: ListenerRow, kind: str, outcome: str, reason: str) -> Optional[Latest]:
        last = self.latest.get((l.agent_id, l.mood_id, kind))
        return last if last is not None and last.repeated_by(outcome, reason) else None

    def decide(self, l: ListenerRow, kind: str, outcome: str, reason: str,
               next_due: Optional[dt.datetime]) -> bool:
        """Note a decision to record with the batch; True when it is new (not a repeat)."""
        last = self.repeats(l, kind, outcome, reason)
        self.decisions.append(dict(id=last.id if last else None, agent_id=l.agent_id,
                                   mood_id=l.mood_id, kind=kind, outcome=outcome, reason=reason,
                                   next_due=next_due))
        return last is None


def claim(s: Session, pairs: list[Pair], now: dt.datetime, screening: bool = False) -> Batch:
    """Claim the pairs still due and read their facts; pairs another poller holds are left out."""
    s.flush()  # what this session has pending (a dry run's scan) is read back below
    conn = s.connection()
    listeners = _claim_listeners(conn, pairs, now)
    claimed = list(listeners)
    agents = sorted({a for a, _ in claimed})
    if agents and conn.dialect.name == "postgresql":
        conn.execute(_LOCK_AGENTS, {"agents": agents})
    batch = Batch(now, listeners, _moods(conn, {m for _, m in claimed}),
                  {a: Load() for a in agents}, _latest(conn, claimed))
    if claimed:
        _owed(conn, batch, claimed)
        _wakes(conn, batch, agents, now, screening)
        _floor(conn, batch)
        _spoke(conn, batch)
        _calm(conn, batch, now, screening)
        batch.away = absences.active(s, agents)
    return batch


_AGENTS = Agent.__table__
_LOCK_AGENTS = (sa.select(_AGENTS.c.participant_id)
                .where(_AGENTS.c.participant_id.in_(sa.bindparam("agents", expanding=True)))
                .order_by(_AGENTS.c.participant_id).with_for_update())


def recheck(s: Session, pairs: list[Pair], now: dt.datetime) -> tuple[Batch, set[int]]:
    """Before a batch's wakes are recorded: the *pairs*' listeners claimed again, and what
    their fingerprints rest on (:meth:`Batch.fingerprint`), read for the whole batch; and
    which of their agents are still active.

    On PostgreSQL the listeners are taken with ``SKIP LOCKED`` (a pair another poller
    holds now is left out), then the agents and the Moods are locked in id order, so
    two pollers recording wakes of one agent, or unprompted wakes in one Mood, take turns
    and the second sees the first's (see :func:`cycle.floor_others`).
    """
    s.flush()
    conn = s.connection()
    pg = conn.dialect.name == "postgresql"
    listeners = {}
    if pairs:
        for row in conn.execute(_PAIRS_PG if pg else _PAIRS, {"pairs": list(pairs)}):
            l = ListenerRow(row)
            listeners[(l.agent_id, l.mood_id)] = l
    claimed = list(listeners)
    agents = sorted({a for a, _ in claimed})
    moods = sorted({m for _, m in claimed})
    batch = Batch(now, listeners, {}, {a: Load() for a in agents}, {})
    if not claimed:
        return batch, set()
    active = {a for a, retired in conn.execute(_AGENTS_LOCKED, {"agents": agents})
              if retired is None}
    if pg:
        conn.execute(_LOCK_MOODS, {"moods": moods})
    _owed(conn, batch, claimed)
    _wakes(conn, batch, agents, now, False)
    for mood_id, agent_id, handle in conn.execute(_FLOOR, {"moods": moods}):
        batch.took_floor(agent_id, handle, mood_id)
    return batch, active


_PAIRS = _ALL.where(sa.tuple_(LISTENERS.c.agent_id, LISTENERS.c.mood_id)
                    .in_(sa.bindparam("pairs", expanding=True)))
_PAIRS_PG = _PAIRS.with_for_update(skip_locked=True)
_AGENTS_LOCKED = (sa.select(_AGENTS.c.participant_id, _AGENTS.c.retired_at)
                  .where(_AGENTS.c.participant_id.in_(sa.bindparam("agents", expanding=True)))
                  .order_by(_AGENTS.c.participant_id).with_for_update())  # SQLite: no lock, serial
_LOCK_MOODS = (sa.select(Mood.__table__.c.id)
               .where(Mood.__table__.c.id.in_(sa.bindparam("moods", expanding=True)))
               .order_by(Mood.__table__.c.id).with_for_update(key_share=True))  # posts still come in


def _claim_listeners(conn, pairs: list[Pair], now: dt.datetime) -> dict[Pair, ListenerRow]:
    if not pairs:
        return {}
    q = _DUE_OF_PG if conn.dialect.name == "postgresql" else _DUE_OF
    found = {}
    for row in conn.execute(q, {"pairs": list(pairs), "now": now}):
        l = ListenerRow(row)
        found[(l.agent_id, l.mood_id)] = l
    return found


def _moods(conn, mood_ids: set[int]) -> dict[int, MoodInfo]:
    if not mood_ids:
        return {}
    return {r.id: MoodInfo(r.id, r.slug, r.title, r.archived, r.created_at,
                           r.typing_at and _aware(r.typing_at))
            for r in conn.execute(_MOODS, {"ids": sorted(mood_ids)})}


_M = Mood.__table__
_MOODS = sa.select(_M.c.id, _M.c.slug, _M.c.title, _M.c.archived, _M.c.created_at,
                   _M.c.typing_at).where(_M.c.id.in_(sa.bindparam("ids", expanding=True)))


def _owed(conn, batch: Batch, pairs: list[Pair]) -> None:
    """The posts each pair owes, oldest first, and whether a person or an agent sent each."""
    owed: dict[Pair, tuple[list[int], list[str]]] = {}
    for agent_id, mood_id, post_id, kind in conn.execute(_OWED, {"pairs": list(pairs)}):
        posts, kinds = owed.setdefault((agent_id, mood_id), ([], []))
        posts.append(post_id)
        kinds.append(kind)
    for pair, (posts, kinds) in owed.items():
        l = batch.listeners[pair]
        l.owed, l.sender_kinds = posts, kinds


_O, _P, _WHO, _W, _D = (Owed.__table__, Post.__table__, Participant.__table__, Wake.__table__,
                        DecisionRow.__table__)
_OWED = (sa.select(_O.c.agent_id, _O.c.mood_id, _O.c.post_id, _WHO.c.kind)
         .join(_P, _P.c.id == _O.c.post_id).join(_WHO, _WHO.c.id == _P.c.sender_id)
         .where(sa.tuple_(_O.c.agent_id, _O.c.mood_id).in_(sa.bindparam("pairs", expanding=True)))
         .order_by(_O.c.post_id))


def _wakes(conn, batch: Batch, agents: list[int], now: dt.datetime, screening: bool) -> None:
    """The agents' turns in flight, and their wakes in the last hour (considers by Mood)."""
    for agent_id, mood_id in conn.execute(_BUSY, {"agents": agents}):
        load = batch.load[agent_id]
        load.running += 1
        load.here.add(mood_id)
    considers: dict[Pair, list[dt.datetime]] = {}
    for agent_id, mood_id, kind, at in conn.execute(_RECENT, {"agents": agents,
                                                              "since": now - HOUR}):
        batch.load[agent_id].woke.append(at)
        if kind == WakeKind.CONSIDER:
            considers.setdefault((agent_id, mood_id), []).append(at)
    # A consider the screen turned away spent a consider too (each is its own row):
    # the screen is asked no more often than the agent would have been woken.
    screened = (conn.execute(_SCREENED, {"pairs": list(batch.listeners), "since": now - HOUR})
                if screening else ())
    for agent_id, mood_id, at in screened:
        considers.setdefault((agent_id, mood_id), []).append(_aware(at))
    for pair, times in considers.items():
        if pair in batch.listeners:
            batch.listeners[pair].considers = tuple(times)


_OF_AGENTS = _W.c.agent_id.in_(sa.bindparam("agents", expanding=True))
_BUSY = sa.select(_W.c.agent_id, _W.c.mood_id).where(_OF_AGENTS, _W.c.status.in_(IN_FLIGHT))
_RECENT = sa.select(_W.c.agent_id, _W.c.mood_id, _W.c.kind, _W.c.created_at).where(
    _OF_AGENTS, _W.c.created_at > sa.bindparam("since", type_=_W.c.created_at.type))
_SCREENED = sa.select(_D.c.agent_id, _D.c.mood_id, _D.c.at).where(
    sa.tuple_(_D.c.agent_id, _D.c.mood_id).in_(sa.bindparam("pairs", expanding=True)),
    _D.c.kind == WakeKind.CONSIDER, _D.c.reason == SCREENED_OUT,
    _D.c.at > sa.bindparam("since", type_=_D.c.at.type))


def _floor(conn, batch: Batch) -> None:
    """The unprompted turns in flight in the batch's Moods, whoever's they are."""
    for mood_id, agent_id, handle in conn.execute(_FLOOR, {"moods": list(batch.moods)}):
        batch.took_floor(agent_id, handle, mood_id)


_FLOOR = (sa.select(_W.c.mood_id, _W.c.agent_id, _WHO.c.handle)
          .join(_WHO, _WHO.c.id == _W.c.agent_id)
          .where(_W.c.mood_id.in_(sa.bindparam("moods", expanding=True)),
                 _W.c.status.in_(IN_FLIGHT), _W.c.kind.in_(sorted(UNPROMPTED)))
          .order_by(_W.c.id))


def _spoke(conn, batch: Batch) -> None:
    """When each agent due in a Mood with others due last posted there (its readiness)."""
    per_mood: dict[int, int] = {}
    for _, m in batch.listeners:
        per_mood[m] = per_mood.get(m, 0) + 1
    crowded = [pair for pair in batch.listeners if per_mood[pair[1]] > 1]
    if not crowded:
        return
    for agent_id, mood_id, at in conn.execute(_SPOKE, {"pairs": crowded}):
        if at is not None:
            batch.spoke[(agent_id, mood_id)] = _aware(at)


_SPOKE = (sa.select(_P.c.sender_id, _P.c.mood_id, sa.func.max(_P.c.created_at))
          .where(sa.tuple_(_P.c.sender_id, _P.c.mood_id).in_(sa.bindparam("pairs", expanding=True)),
                 _P.c.kind == PostKind.POST)
          .group_by(_P.c.sender_id, _P.c.mood_id))


CALM_WINDOW = dt.timedelta(hours=12)  # calm older than the longest rest changes nothing


def _calm(conn, batch: Batch, now: dt.datetime, screening: bool) -> None:
    """For Moods with a consider due: the unprompted turns there that ended silent in a
    row, newest first, up to the first that spoke or the first mention's turn (pressure).
    A consider the screen turned away counts as a silent one: nothing needed saying."""
    moods = sorted({m for (_, m), l in batch.listeners.items()
                    if l.consider_from_id and l.consider_due_at and l.consider_due_at <= now})
    if not moods:
        return
    params = {"moods": moods, "since": now - CALM_WINDOW}
    events = [(m, _aware(at), k, st) for m, k, st, at in conn.execute(_FINISHED_IN, params)
              if at is not None]
    if screening:
        events += [(m, _aware(at), WakeKind.CONSIDER, WakeStatus.SILENT)
                   for m, at in conn.execute(_SCREENED_IN, params)]
    open_moods = set(moods)
    for mood_id, at, kind, status in sorted(events, key=lambda e: (e[0], e[1]), reverse=True):
        if mood_id not in open_moods:
            continue  # its run of calm already ended
        turns, last = batch.calm.get(mood_id, (0, None))
        if kind in UNPROMPTED and status == WakeStatus.SILENT:
            batch.calm[mood_id] = (turns + 1, last or at)
        elif kind == WakeKind.MENTION or (kind in UNPROMPTED and status == WakeStatus.REPLIED):
            open_moods.discard(mood_id)


_IN_MOODS_OF = sa.bindparam("moods", expanding=True)
_FINISHED_IN = (sa.select(_W.c.mood_id, _W.c.kind, _W.c.status, _W.c.finished_at)
                .where(_W.c.mood_id.in_(_IN_MOODS_OF), _W.c.status.in_(FINISHED),
                       _W.c.created_at > sa.bindparam("since", type_=_W.c.created_at.type)))
_SCREENED_IN = sa.select(_D.c.mood_id, _D.c.at).where(
    _D.c.mood_id.in_(_IN_MOODS_OF), _D.c.kind == WakeKind.CONSIDER, _D.c.reason == SCREENED_OUT,
    _D.c.at > sa.bindparam("since", type_=_D.c.at.type))


def _aware(at) -> dt.datetime:
    """An aggregate's time comes back as the driver gives it (SQLite: text, naive)."""
    if isinstance(at, str):
        at = dt.datetime.fromisoformat(at)
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _latest(conn, pairs: list[Pair]) -> dict[tuple[int, int, str], Latest]:
    if not pairs:
        return {}
    return {(r.agent_id, r.mood_id, r.kind): Latest(r.id, r.outcome, r.reason, r.wake_id)
            for r in conn.execute(_LATEST, {"pairs": list(pairs)})}


_LATEST = sa.select(_D.c.id, _D.c.agent_id, _D.c.mood_id, _D.c.kind, _D.c.outcome, _D.c.reason,
                    _D.c.wake_id).where(_D.c.id.in_(
                        sa.select(sa.func.max(_D.c.id))
                        .where(sa.tuple_(_D.c.agent_id, _D.c.mood_id)
                               .in_(sa.bindparam("pairs", expanding=True)))
                        .group_by(_D.c.agent_id, _D.c.mood_id, _D.c.kind).scalar_subquery()))


_ADD_DECISIONS = sa.insert(DecisionRow.__table__)
_REPEAT_DECISION = (sa.update(DecisionRow.__table__)
                    .where(DecisionRow.__table__.c.id == sa.bindparam("k_id"))
                    .values(last_at=sa.bindparam("last_at"), next_due=sa.bindparam("next_due"),
                            count=DecisionRow.__table__.c.count + 1))


def write(s: Session, batch: Batch, skip: Iterable[Pair] = ()) -> None:
    """Record the batch: the listeners that changed (not those in *skip*, set aside)
    and its decisions, one executemany each; a repeated decision only moves
    ``last_at``, ``next_due`` and ``count``."""
    skip = set(skip)
    save(s, (l for pair, l in batch.listeners.items() if pair not in skip))
    conn, now = s.connection(), batch.now
    repeats = [dict(k_id=d["id"], last_at=now, next_due=d["next_due"])
               for d in batch.decisions if d["id"] is not None]
    if repeats:
        conn.execute(_REPEAT_DECISION, repeats)
    new = [dict(agent_id=d["agent_id"], mood_id=d["mood_id"], kind=d["kind"],
                outcome=d["outcome"], reason=d["reason"], next_due=d["next_due"], wake_id=None,
                at=now, last_at=now, count=1)
           for d in batch.decisions if d["id"] is None]
    if new:
        conn.execute(_ADD_DECISIONS, new)
