"""Reading what one wake is made of: posts, catch-up, and the optional lines.

The composer is pure; this module is its edge in the store: it reads the posts that woke
the agent, the catch-up candidates (since the agent last spoke for a
mention, the Mood lately for the rest), who else was asked, and whether the
agent's last turn here was cut off.  ``extras`` reads the optional lines: the
settings changed since the agent last woke here, context handed to it from
other Moods, what was refused from its last reply, and posts the woke posts
link to; ``taken`` marks the handed context and refusals as delivered by the
wake that carries them.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import sqlalchemy as sa
from sqlalchemy.orm import Session

from poller import settings, values
from poller.kinds import FINISHED, IN_FLIGHT, ParticipantKind, PostKind, Tools, WakeStatus
from poller.store import absences, cycle, prefetch
from poller.store.prefetch import MISS
from poller.models import (AgentSession, CheckinAgreement, Handoff, Listener, Mention, Mood,
                           Participant, Post, Quarantine, Refusal, Setting, SignIn, Turn, Wake)

HISTORY_POSTS = 600  # catch-up candidates read per wake; older ones are only counted...
HISTORY_POSTS_MAX = 2_400  # ...unless their stored tokens do not cover the budget: then up to this
HANDED_CHARS = 12_000  # handed context one wake carries; the rest waits for the next
MAX_LINKS = 3  # linked posts read in per wake
LINK_AROUND = 1  # posts read on each side of a linked post
LETTER_PEOPLE = 30  # people and agents a letter names
# "#p-123" (this Mood) or "/moods/<slug>/#p-123" (any Mood), as the web view writes them.
LINK_RE = re.compile(r"(?:/moods/(?P<slug>[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?)/)?#p-(?P<id>\d{1,18})\b")


def _wake_posts(rows) -> list[values.WakePost]:
    """Rows of :func:`_posts_query` as WakePosts (unpacked by position: hundreds a wake)."""
    agent, post = ParticipantKind.AGENT, values.WakePost
    return [post(id=i, sender=handle, created_at=at, text=text, tokens=tokens,
                 sender_is_agent=sender_kind == agent, kind=kind, reply_to=reply_to)
            for i, at, text, tokens, kind, reply_to, handle, sender_kind in rows]


# The statements a wake's gathering runs are built once, here, with their values as bound
# parameters: SQLAlchemy then neither builds them again nor computes their cache keys at
# each execution.  Columns, not ORM objects: a wake reads hundreds of posts, and building
# an identity-mapped Post for each cost more than the rest of the wake.
_POSTS = (sa.select(Post.id, Post.created_at, Post.text, Post.tokens, Post.kind, Post.reply_to,
                    Participant.handle, Participant.kind.label("sender_kind"))
          .join(Participant, Participant.id == Post.sender_id))
_POSTS_BY_ID = _POSTS.where(Post.id.in_(sa.bindparam("ids", expanding=True))).order_by(Post.id)


def _posts_query():
    return _POSTS


def posts_by_id(s: Session, ids: Sequence[int]) -> list[values.WakePost]:
    if not ids:
        return []
    got = prefetch.posts(s, "posts", ids, _posts_of)
    if got is not MISS:
        return [got[i] for i in sorted(got)]
    return _wake_posts(s.execute(_POSTS_BY_ID, {"ids": list(ids)}))


def _posts_of(s: Session, ids: list[int]) -> dict[int, values.WakePost]:
    return {p.id: p for p in _wake_posts(s.execute(_POSTS_BY_ID, {"ids": ids}))}


def history(s: Session, mood_id: int, after_id: int, exclude: set[int], budget: int = 0,
            keep_from: int = 0, fresh: Optional[absences.Window] = None
            ) -> tuple[list[values.WakePost], int]:
    """Posts after *after_id*, oldest first, and how many older ones were left out.

    The newest HISTORY_POSTS; when their stored token counts fall short of
    *budget* (or do not reach back to *keep_from*, a consider's first new
    post) and older ones exist, older posts too, HISTORY_POSTS at a time up to
    HISTORY_POSTS_MAX, so a large catch-up budget is filled instead of being
    cut short by a post count.

    With *fresh* (the agent's fresh eyes after a long absence) nothing from
    before it left is read, and the backlog it missed is neither read nor counted.
    """
    q, more_q, count_q = _HISTORY, _HISTORY_MORE, _HISTORY_EARLIER
    if fresh is not None:
        after_id = max(after_id, fresh.from_id)
        missed = absences.not_missed(fresh)
        q, more_q, count_q = q.where(missed), more_q.where(missed), count_q.where(missed)
    limit = HISTORY_POSTS + len(exclude)
    rows = s.execute(q, {"mood": mood_id, "after": after_id, "limit": limit}).all()
    full = len(rows) == limit
    covered = sum(max(r.tokens, 0) for r in rows) if full else 0
    while (full and len(rows) < HISTORY_POSTS_MAX
           and (covered < budget or rows[-1].id > keep_from > 0)):
        more = s.execute(more_q, {"mood": mood_id, "after": after_id, "before": rows[-1].id,
                                  "limit": HISTORY_POSTS}).all()
        rows += more
        covered += sum(max(r.tokens, 0) for r in more)
        full = len(more) == HISTORY_POSTS
    posts = [p for p in _wake_posts(reversed(rows)) if p.id not in exclude]
    earlier = 0
    if full:
        earlier = s.scalar(count_q, {"mood": mood_id, "after": after_id,
                                     "before": rows[-1].id}) or 0
    return posts[-max(HISTORY_POSTS, len(rows) - len(exclude)):], earlier


_IN_MOOD_AFTER = (Post.mood_id == sa.bindparam("mood"), Post.id > sa.bindparam("after"))
_HISTORY = _POSTS.where(*_IN_MOOD_AFTER).order_by(Post.id.desc()).limit(sa.bindparam("limit"))
_HISTORY_MORE = (_POSTS.where(*_IN_MOOD_AFTER, Post.id < sa.bindparam("before"))
                 .order_by(Post.id.desc()).limit(sa.bindparam("limit")))
_HISTORY_EARLIER = sa.select(sa.func.count()).where(*_IN_MOOD_AFTER,
                                                    Post.id < sa.bindparam("before"))


@dataclass(frozen=True)
class InSession:
    """What the agent's live session in a Mood already holds: the Mood up to a post."""

    seen_id: int  # the newest post its last wake in the session showed
    seen_at: Optional[dt.datetime]  # when that post was made (None: it showed no post)


def in_session(s: Session, agent_id: int, mood_id: int, now: dt.datetime,
               archive_after: int) -> Optional[InSession]:
    """The agent's kept session here, if it was used within *archive_after* seconds.

    A session is kept (``agent_sessions``) by wakers that resume one, from the
    turn that reported it; it is dropped when the waker says it cannot be
    resumed.  Its last wake's ``seen_id`` is where the session's knowledge of
    the Mood ends.  None: no session, a forgotten one, or one left unused for
    longer than *archive_after* (0: sessions are never relied on).
    """
    if not archive_after:
        return None
    kept = prefetch.pair(s, "session", agent_id, mood_id, _sessions)
    if kept is MISS:
        row = s.execute(_IN_SESSION, {"a": agent_id, "m": mood_id}).first()
    else:
        row = kept if kept is not None and kept.wake_id is not None else None
    if row is None or row.updated_at < now - dt.timedelta(seconds=archive_after):
        return None
    if kept is not MISS:
        return InSession(row.seen_id, row.seen_at if row.seen_id else None)
    at = s.scalar(_POST_AT, {"p": row.seen_id}) if row.seen_id else None
    return InSession(row.seen_id, at)


_KEPT_HERE = (AgentSession.agent_id == sa.bindparam("a"), AgentSession.mood_id == sa.bindparam("m"))
_IN_SESSION = (sa.select(AgentSession.updated_at, Wake.seen_id)
               .join(Wake, Wake.id == AgentSession.wake_id).where(*_KEPT_HERE))
_POST_AT = sa.select(Post.created_at).where(Post.id == sa.bindparam("p"))
_PAIRS = sa.bindparam("pairs", expanding=True)


def _sessions(s: Session, pairs: list[prefetch.Pair]) -> dict:
    """The pairs' kept sessions (None: none), with their last wake's seen post and its time."""
    out = dict.fromkeys(pairs)
    for r in s.execute(_SESSIONS, {"pairs": pairs}):
        out[(r.agent_id, r.mood_id)] = r
    return out


_SESSIONS = (sa.select(AgentSession.agent_id, AgentSession.mood_id, AgentSession.updated_at,
                       Wake.id.label("wake_id"), Wake.seen_id, Post.created_at.label("seen_at"))
             .outerjoin(Wake, Wake.id == AgentSession.wake_id)
             .outerjoin(Post, Post.id == Wake.seen_id)
             .where(sa.tuple_(AgentSession.agent_id, AgentSession.mood_id).in_(_PAIRS)))


def first_turn(s: Session, agent_id: int, mood_id: int, keeps_sessions: bool) -> bool:
    """Whether this wake is the agent's first turn in the Mood: the one the letter opens.

    For an agent that keeps a session per Mood (Claude Code), a wake that
    starts a new session (none is kept here); for any other, the first wake
    it ever gets here.
    """
    if keeps_sessions:
        kept = prefetch.pair(s, "session", agent_id, mood_id, _sessions)
        if kept is not MISS:
            return kept is None
    else:
        last = prefetch.pair(s, "latest", agent_id, mood_id, _latest)
        if last is not MISS:
            return not last.woke
    return s.scalar(_KEPT if keeps_sessions else _WOKE, {"a": agent_id, "m": mood_id}) is None


_KEPT = sa.select(AgentSession.agent_id).where(*_KEPT_HERE)
_WAKES_HERE = (Wake.agent_id == sa.bindparam("a"), Wake.mood_id == sa.bindparam("m"))
_WOKE = sa.select(Wake.id).where(*_WAKES_HERE).limit(1)


def _latest(s: Session, pairs: list[prefetch.Pair]) -> dict:
    """Per pair (a listener's), what its newest rows say: whether it was ever woken
    here, its last finished turn, the settings its last turn had seen, the newest
    setting, and its newest post or silence here."""
    return {(r.agent_id, r.mood_id): r for r in s.execute(_LATEST, {"pairs": pairs})}


_L = Listener.__table__
_W = Wake.__table__
_OF_L = (_W.c.agent_id == _L.c.agent_id, _W.c.mood_id == _L.c.mood_id)
_FINISHED_LAST = sa.orm.aliased(Wake)
_LATEST = (
    sa.select(
        _L.c.agent_id, _L.c.mood_id,
        sa.exists().where(*_OF_L).label("woke"),
        _FINISHED_LAST.status, _FINISHED_LAST.finished_at, _FINISHED_LAST.error,
        sa.select(Turn.settings_seen_id).join(_W, _W.c.id == Turn.wake_id).where(*_OF_L)
        .order_by(_W.c.id.desc()).limit(1).scalar_subquery().label("settings_seen"),
        sa.select(sa.func.coalesce(sa.func.max(Setting.id), 0)).scalar_subquery()
        .label("settings_newest"),
        sa.select(sa.func.max(Post.id)).where(
            Post.sender_id == _L.c.agent_id, Post.mood_id == _L.c.mood_id,
            Post.kind.in_((PostKind.POST, PostKind.SILENT))).scalar_subquery().label("spoke"))
    .select_from(_L)
    .outerjoin(_FINISHED_LAST, _FINISHED_LAST.id == (
        sa.select(_W.c.id).where(*_OF_L, _W.c.status.in_(FINISHED))
        .order_by(_W.c.id.desc()).limit(1).scalar_subquery()))
    .where(sa.tuple_(_L.c.agent_id, _L.c.mood_id).in_(_PAIRS)))


def people(s: Session, mood_id: int, agent_id: int,
           keeps: Callable[[int], bool] = lambda _agent: True) -> list[values.Member]:
    """Who has posted or signed in here (removed ones left out), by handle, up to LETTER_PEOPLE.

    In a batch, read at once for the Moods where a pair ahead may be at its first turn
    (*keeps*: whether an agent's first turn is that of a session)."""
    got = prefetch.mood(s, "people", mood_id, _people_of,
                        among=lambda sets, pair: _may_open(sets, pair, keeps(pair[0])))
    rows = (s.execute(_PEOPLE, {"m": mood_id, "a": agent_id, "limit": LETTER_PEOPLE})
            if got is MISS else [r for r in got if r.id != agent_id][:LETTER_PEOPLE])
    return [values.Member(r.handle, r.kind == ParticipantKind.AGENT, r.trust) for r in rows]


def _may_open(sets: prefetch.Prefetch, pair: prefetch.Pair, keeps: bool) -> bool:
    """Whether the pair's wake may be its first turn here (see :func:`first_turn`) as far
    as the batch's sets tell (what they have not read, it may)."""
    if keeps:
        kept = sets.of_pairs.get("session", {}).get(pair, MISS)
        return kept is None or kept is MISS
    last = sets.of_pairs.get("latest", {}).get(pair, MISS)
    return last is MISS or not last.woke


def _people_of(s: Session, moods: list[int]) -> dict[int, list]:
    """:func:`people` for each Mood, with one more (the agent asking is left out after)."""
    out: dict[int, list] = {m: [] for m in moods}
    for r in s.execute(_PEOPLE_OF, {"moods": moods, "limit": LETTER_PEOPLE + 1}):
        out[r.mood_id].append(r)
    return out


_PEOPLE = (sa.select(Participant.handle, Participant.kind, Participant.trust)
           .where(Participant.retired_at.is_(None), Participant.id != sa.bindparam("a"),
                  sa.or_(sa.select(Post.id).where(Post.mood_id == sa.bindparam("m"),
                                                  Post.sender_id == Participant.id).exists(),
                         sa.select(SignIn.id).where(SignIn.mood_id == sa.bindparam("m"),
                                                    SignIn.participant_id == Participant.id)
                         .exists()))
           .order_by(Participant.handle_key).limit(sa.bindparam("limit")))
_PEOPLE_RANKED = (
    sa.select(Mood.id.label("mood_id"), Participant.id, Participant.handle, Participant.kind,
              Participant.trust, sa.func.row_number().over(
                  partition_by=Mood.id, order_by=Participant.handle_key).label("n"))
    .select_from(sa.join(Mood, Participant, sa.true()))
    .where(Mood.id.in_(sa.bindparam("moods", expanding=True)), Participant.retired_at.is_(None),
           sa.or_(sa.select(Post.id).where(Post.mood_id == Mood.id,
                                           Post.sender_id == Participant.id).exists(),
                  sa.select(SignIn.id).where(SignIn.mood_id == Mood.id,
                                             SignIn.participant_id == Participant.id).exists()))
    .subquery())
_PEOPLE_OF = (sa.select(_PEOPLE_RANKED.c.mood_id, _PEOPLE_RANKED.c.id, _PEOPLE_RANKED.c.handle,
                        _PEOPLE_RANKED.c.kind, _PEOPLE_RANKED.c.trust)
              .where(_PEOPLE_RANKED.c.n <= sa.bindparam("limit"))
              .order_by(_PEOPLE_RANKED.c.mood_id, _PEOPLE_RANKED.c.n))


def also_asked(s: Session, post_ids: Sequence[int], agent_id: int,
               agent_ids: set[int]) -> list[values.AlsoAsked]:
    if not post_ids:
        return []
    got = prefetch.posts(s, "mentioned", post_ids, _mentioned)
    if got is not MISS:
        asked = {(pid, handle, busy) for rows in got.values() for pid, handle, busy in rows
                 if pid != agent_id and pid in agent_ids}
        return sorted(values.AlsoAsked(handle, busy) for _, handle, busy in asked)
    out = []
    for r in s.execute(_ALSO_ASKED, {"ids": list(post_ids), "a": agent_id}):
        if r.id not in agent_ids:
            continue
        busy = s.scalar(_BUSY, {"a": r.id})
        out.append(values.AlsoAsked(r.handle, busy is not None))
    return sorted(out)


def _mentioned(s: Session, ids: list[int]) -> dict[int, list[tuple[int, str, bool]]]:
    """Who each post mentions: (id, handle, whether a turn of theirs is in flight)."""
    rows = s.execute(_MENTIONED, {"ids": ids}).all()
    busy = set(s.scalars(_BUSY_OF, {"ids": sorted({r.id for r in rows})})) if rows else set()
    out: dict[int, list[tuple[int, str, bool]]] = {}
    for r in rows:
        out.setdefault(r.post_id, []).append((r.id, r.handle, r.id in busy))
    return out


_MENTIONED = (sa.select(Mention.post_id, Participant.id, Participant.handle)
              .join(Mention, Mention.participant_id == Participant.id)
              .where(Mention.post_id.in_(sa.bindparam("ids", expanding=True))))
_BUSY_OF = (sa.select(Wake.agent_id).where(Wake.agent_id.in_(sa.bindparam("ids", expanding=True)),
                                           Wake.status.in_(IN_FLIGHT)).distinct())
_ALSO_ASKED = (sa.select(Participant.id, Participant.handle)
               .join(Mention, Mention.participant_id == Participant.id)
               .where(Mention.post_id.in_(sa.bindparam("ids", expanding=True)),
                      Participant.id != sa.bindparam("a")).distinct())
_BUSY = sa.select(Wake.id).where(Wake.agent_id == sa.bindparam("a"),
                                 Wake.status.in_(IN_FLIGHT)).limit(1)


def cut_off(s: Session, agent_id: int, mood_id: int) -> Optional[values.CutOff]:
    """The agent's last finished turn here, if it was cut off or failed."""
    last = prefetch.pair(s, "latest", agent_id, mood_id, _latest)
    if last is MISS:
        last = s.execute(_LAST_FINISHED, {"a": agent_id, "m": mood_id}).first()
    if last is None or last.status not in (WakeStatus.FAILED, WakeStatus.CUT_OFF):
        return None
    # A failure's recorded error holds the agent's own output (stderr, an HTTP
    # body): it stays in the record, and the wake says only that it failed.
    # A cut-off's reason is the service's own words (a timeout, a restart).
    why = "it failed before it could reply" if last.status == WakeStatus.FAILED else last.error
    return values.CutOff(last.finished_at, why or "it was cut off")


# Three columns, not the Wake row: its text (the whole last wake) is not needed.
_LAST_FINISHED = (sa.select(Wake.status, Wake.finished_at, Wake.error)
                  .where(*_WAKES_HERE, Wake.status.in_(FINISHED))
                  .order_by(Wake.id.desc()).limit(1))


# -- the optional lines ---------------------------------------------------------------


@dataclass
class Extras:
    settings_changed: list[values.DialChange] = field(default_factory=list)
    settings_seen_id: int = 0
    handed: list[values.Handed] = field(default_factory=list)
    handoff_ids: list[int] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    refusal_ids: list[int] = field(default_factory=list)
    linked: list[values.LinkedPost] = field(default_factory=list)


def extras(s: Session, agent_id: int, mood_id: int, woke: Sequence[values.WakePost],
           shown: set[int], now: dt.datetime) -> Extras:
    out = Extras()
    out.settings_changed, out.settings_seen_id = settings_changed(s, agent_id, mood_id, now)
    for hid, item in handed(s, agent_id, mood_id):
        out.handoff_ids.append(hid)
        out.handed.append(item)
    for rid, line in refusals(s, agent_id, mood_id):
        out.refusal_ids.append(rid)
        out.refusals.append(line)
    out.linked = linked(s, mood_id, woke, shown)
    return out


def command_extras(s: Session, agent_id: int, mood_id: int) -> Extras:
    """A command's turn shows the agent nothing: what its last wake here had seen of the
    settings stays what the next wake lists changes from."""
    seen = s.scalar(_SETTINGS_SEEN, {"a": agent_id, "m": mood_id})
    return Extras(settings_seen_id=cycle.max_id(s, Setting.id) if seen is None else seen)


def still_untaken(s: Session, ex: Extras) -> bool:
    """True if no other wake has taken this handed context or these refusals meanwhile."""
    # Locked until the wake is recorded, so two pollers cannot both take them.
    if ex.handoff_ids:
        q = cycle.for_update(s, sa.select(Handoff.id).where(Handoff.id.in_(ex.handoff_ids),
                                                            Handoff.taken_wake_id.is_(None)))
        if len(s.scalars(q).all()) != len(ex.handoff_ids):
            return False
    if ex.refusal_ids:
        q = cycle.for_update(s, sa.select(Refusal.id).where(Refusal.id.in_(ex.refusal_ids),
                                                            Refusal.reported_wake_id.is_(None)))
        if len(s.scalars(q).all()) != len(ex.refusal_ids):
            return False
    return True


def taken(s: Session, wake_id: int, ex: Extras) -> None:
    """The wake *wake_id* carries these: record it so no later wake repeats them."""
    taken_all(s, [(wake_id, ex)])


def taken_all(s: Session, taken_by: Sequence[tuple[int, Extras]]) -> None:
    """:func:`taken` for a batch of wakes, as (wake_id, extras): their turns' rows in one
    insert; handed context and refusals (rare) one wake at a time."""
    if not taken_by:
        return
    s.connection().execute(_ADD_TURNS, [dict(wake_id=w, settings_seen_id=ex.settings_seen_id)
                                        for w, ex in taken_by])
    for wake_id, ex in taken_by:
        if ex.handoff_ids:
            s.execute(sa.update(Handoff).where(Handoff.id.in_(ex.handoff_ids))
                      .values(taken_wake_id=wake_id))
        if ex.refusal_ids:
            s.execute(sa.update(Refusal).where(Refusal.id.in_(ex.refusal_ids))
                      .values(reported_wake_id=wake_id))


_ADD_TURNS = sa.insert(Turn.__table__)


def settings_changed(s: Session, agent_id: int, mood_id: int,
                     now: dt.datetime) -> tuple[list[values.DialChange], int]:
    """Changes to what applies here since the agent's last wake here, and the newest row id.

    Only rows that changed the value in force for this (Mood, agent) count:
    a global change hidden by a Mood-specific one is not news here.
    """
    last = prefetch.pair(s, "latest", agent_id, mood_id, _latest)
    if last is MISS:
        newest = cycle.max_id(s, Setting.id)
        seen = s.scalar(_SETTINGS_SEEN, {"a": agent_id, "m": mood_id})
    else:
        newest, seen = last.settings_newest, last.settings_seen
    if seen is None or seen >= newest:
        return [], newest
    rows = s.execute(_SETTINGS_HERE, {"a": agent_id, "m": mood_id, "newest": newest}).all()

    def as_row(r) -> settings.Row:
        return settings.Row(r.id, r.mood_id, r.agent_id, r.key, r.value, r.until)

    applied = [as_row(r) for r in rows if r.id <= seen]
    before = settings.resolve(applied, mood_id, agent_id, now)
    out = []
    for r in rows:
        if r.id <= seen:
            continue
        applied.append(as_row(r))
        after = settings.resolve(applied, mood_id, agent_id, now)
        key = r.key
        if key in after and after[key].value != before[key].value:
            out.append(values.DialChange(r.handle or "an operator", key,
                                             str(before[key].value), str(after[key].value)))
        before = after
    return out, newest


_SETTINGS_SEEN = (sa.select(Turn.settings_seen_id).join(Wake, Wake.id == Turn.wake_id)
                  .where(*_WAKES_HERE).order_by(Wake.id.desc()).limit(1))
_SETTINGS_HERE = (sa.select(Setting.id, Setting.mood_id, Setting.agent_id, Setting.key,
                            Setting.value, Setting.until, Participant.handle)
                  .outerjoin(Participant, Participant.id == Setting.set_by)
                  .where(sa.or_(Setting.mood_id.is_(None), Setting.mood_id == sa.bindparam("m")),
                         sa.or_(Setting.agent_id.is_(None), Setting.agent_id == sa.bindparam("a")),
                         Setting.id <= sa.bindparam("newest"))
                  .order_by(Setting.id))


def handed(s: Session, agent_id: int, mood_id: int) -> list[tuple[int, values.Handed]]:
    """Context handed to this Mood for this agent (or anyone), oldest first, within HANDED_CHARS."""
    waiting = prefetch.mood(s, "handed", mood_id, _handed_to)
    if waiting is not MISS and None not in waiting and agent_id not in waiting:
        return []  # nothing waits here for it (else it is read, and locked, on its own)
    # Another agent's wake may be taking the same "for anyone" context right now.
    mine = _HANDED_LOCKED if s.get_bind().dialect.name == "postgresql" else _HANDED
    rows = list(s.scalars(mine, {"a": agent_id, "m": mood_id}))
    if not rows:
        return []
    out, total = [], 0
    src = sa.orm.aliased(Mood)
    q = (sa.select(Handoff, src.slug, Participant.handle, Wake.tools)
         .join(src, src.id == Handoff.from_mood_id)
         .join(Participant, Participant.id == Handoff.agent_id)
         .join(Wake, Wake.id == Handoff.wake_id)
         .where(Handoff.id.in_(rows)).order_by(Handoff.id))
    for r in s.execute(q):
        h = r.Handoff
        if out and total + len(h.context) > HANDED_CHARS:
            break
        total += len(h.context)
        out.append((h.id, values.Handed(r.slug, r.handle, h.about, h.context[:HANDED_CHARS],
                                         look_only=r.tools != Tools.FULL)))
    return out


_HANDED = (sa.select(Handoff.id)
           .where(Handoff.to_mood_id == sa.bindparam("m"), Handoff.taken_wake_id.is_(None),
                  sa.or_(Handoff.for_agent_id.is_(None), Handoff.for_agent_id == sa.bindparam("a")))
           .order_by(Handoff.id))
_HANDED_LOCKED = _HANDED.with_for_update(skip_locked=True)


def _handed_to(s: Session, moods: list[int]) -> dict[int, set[Optional[int]]]:
    """For each Mood, whom context not taken yet waits for (None: anyone)."""
    out: dict[int, set[Optional[int]]] = {m: set() for m in moods}
    for m, a in s.execute(_HANDED_TO, {"moods": moods}):
        out[m].add(a)
    return out


_HANDED_TO = (sa.select(Handoff.to_mood_id, Handoff.for_agent_id)
              .where(Handoff.to_mood_id.in_(sa.bindparam("moods", expanding=True)),
                     Handoff.taken_wake_id.is_(None)).distinct())


def refusals(s: Session, agent_id: int, mood_id: int) -> list[tuple[int, str]]:
    got = prefetch.pair(s, "refusals", agent_id, mood_id, _refusals)
    rows = s.scalars(_REFUSALS, {"a": agent_id, "m": mood_id}) if got is MISS else got
    return [(r.id, f"your {r.block} block: {r.reason}") for r in rows]


def _refusals(s: Session, pairs: list[prefetch.Pair]) -> dict:
    return prefetch.grouped(s.execute(_REFUSALS_OF, {"pairs": pairs}), pairs)


_REFUSALS_OF = (sa.select(Refusal.agent_id, Refusal.mood_id, Refusal.id, Refusal.block,
                          Refusal.reason)
                .where(sa.tuple_(Refusal.agent_id, Refusal.mood_id).in_(_PAIRS),
                       Refusal.reported_wake_id.is_(None))
                .order_by(Refusal.id))


_REFUSALS = (sa.select(Refusal).where(Refusal.agent_id == sa.bindparam("a"),
                                      Refusal.mood_id == sa.bindparam("m"),
                                      Refusal.reported_wake_id.is_(None))
             .order_by(Refusal.id))


def linked(s: Session, mood_id: int, woke: Sequence[values.WakePost],
           shown: set[int]) -> list[values.LinkedPost]:
    """Posts the woke posts link to, each with a little around it, not already in the wake."""
    targets: list[tuple[Optional[str], int]] = []
    for p in woke:
        for m in LINK_RE.finditer(p.text):
            key = (m.group("slug"), int(m.group("id")))
            if key not in targets and len(targets) < MAX_LINKS:
                targets.append(key)
    out: list[values.LinkedPost] = []
    taken_ids = set(shown)
    for slug, post_id in targets:
        target = s.get(Post, post_id)
        if target is None:
            continue
        mood = s.get(Mood, target.mood_id)
        if (slug is None and target.mood_id != mood_id) or (slug is not None and mood.slug != slug):
            continue  # a link that does not point where it says
        for p in _around(s, target):
            if p.id not in taken_ids:
                taken_ids.add(p.id)
                out.append(values.LinkedPost(mood.slug, p))
    return out


def around(s: Session, post_id: int, n: int) -> list[values.WakePost]:
    """The post *post_id* with up to *n* posts on each side of it, in its Mood."""
    target = s.get(Post, post_id)
    return _around(s, target, n) if target is not None else []


def _around(s: Session, target: Post, n: int = LINK_AROUND) -> list[values.WakePost]:
    base = _posts_query().where(Post.mood_id == target.mood_id, Post.kind == PostKind.POST)
    before = s.execute(base.where(Post.id < target.id).order_by(Post.id.desc()).limit(n)).all()
    after = s.execute(base.where(Post.id > target.id).order_by(Post.id).limit(n)).all()
    me = s.execute(_posts_query().where(Post.id == target.id)).all()
    return _wake_posts([*reversed(before), *me, *after])


def checkin_people(s: Session, agent_id: int, mood_id: int) -> list[str]:
    """Handles of the people whose active check-in agreement this agent watches here."""
    got = prefetch.pair(s, "checkins", agent_id, mood_id, _checkin_people)
    if got is not MISS:
        return list(got)
    return list(s.scalars(_CHECKIN_PEOPLE, {"a": agent_id, "m": mood_id}))


def _checkin_people(s: Session, pairs: list[prefetch.Pair]) -> dict:
    return prefetch.grouped(s.execute(_CHECKIN_PEOPLE_OF, {"pairs": pairs}), pairs)


_CHECKIN_PEOPLE = (sa.select(Participant.handle)
                   .join(CheckinAgreement, CheckinAgreement.person_id == Participant.id)
                   .where(CheckinAgreement.agent_id == sa.bindparam("a"),
                          CheckinAgreement.mood_id == sa.bindparam("m"),
                          CheckinAgreement.status == "active")
                   .order_by(Participant.handle_key))
_CHECKIN_PEOPLE_OF = (
    sa.select(CheckinAgreement.agent_id, CheckinAgreement.mood_id, Participant.handle)
    .join(CheckinAgreement, CheckinAgreement.person_id == Participant.id)
    .where(sa.tuple_(CheckinAgreement.agent_id, CheckinAgreement.mood_id).in_(_PAIRS),
           CheckinAgreement.status == "active")
    .order_by(CheckinAgreement.agent_id, CheckinAgreement.mood_id, Participant.handle_key))


# -- the cycle store's reads a wake makes, from the batch's sets where it read them ----------


def last_spoke_id(s: Session, agent_id: int, mood_id: int) -> int:
    """:func:`poller.store.cycle.last_spoke_id`: the agent's newest post or silence here."""
    last = prefetch.pair(s, "latest", agent_id, mood_id, _latest)
    if last is MISS:
        return cycle.last_spoke_id(s, agent_id, mood_id)
    return last.spoke or 0


def senders(s: Session, post_ids: Sequence[int]) -> list[cycle.SenderTrust]:
    """:func:`poller.store.cycle.senders`: the kind and trust of whoever sent each post."""
    got = prefetch.posts(s, "senders", post_ids, _senders) if post_ids else MISS
    if got is MISS:
        return cycle.senders(s, list(post_ids))
    return [got[i] for i in sorted(got)]


def _senders(s: Session, ids: list[int]) -> dict[int, cycle.SenderTrust]:
    return {i: cycle.SenderTrust(kind, trust)
            for i, kind, trust in s.execute(_SENDERS, {"ids": ids})}


_SENDERS = (sa.select(Post.id, Participant.kind, Participant.trust)
            .join(Participant, Participant.id == Post.sender_id)
            .where(Post.id.in_(sa.bindparam("ids", expanding=True))))


def left_unanswered(s: Session, agent_id: int, mood_id: int,
                    followup_of: int = 0) -> dict[int, list[int]]:
    """:func:`poller.store.cycle.left_unanswered`: the posts cut-off turns here left
    unanswered, by turn (read on its own only when one is held or followed up)."""
    held = prefetch.pair(s, "held", agent_id, mood_id, _held)
    if held is not MISS and not followup_of and not any(r.isdigit() for r in held):
        return {}
    return cycle.left_unanswered(s, agent_id, mood_id, followup_of)


def _held(s: Session, pairs: list[prefetch.Pair]) -> dict:
    return prefetch.grouped(s.execute(_HELD_OF, {"pairs": pairs}), pairs)


_HELD_OF = (sa.select(Quarantine.agent_id, Quarantine.mood_id, Quarantine.ref)
            .where(Quarantine.kind == cycle.CUT_OFF_HELD,
                   sa.tuple_(Quarantine.agent_id, Quarantine.mood_id).in_(_PAIRS)))
