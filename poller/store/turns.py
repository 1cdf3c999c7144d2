"""A turn's reads and writes: claiming a wake, the heartbeat, the verbs of settling, closing.

Shared by the runner (claim, heartbeat), settling (:mod:`poller.turns.settling`,
which reads the reply and calls the verbs here) and the cycle (recovery, the
emergency stop), each verb inside the caller's transaction where a claim and
its writes must commit together.  A reply is ingested like any post
(:func:`poller.store.core.insert_post`): the same validation, the same
mention records.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Optional

import sqlalchemy as sa
from sqlalchemy.orm import Session

from poller import clock, kinds, procs, settings
from poller.kinds import IN_FLIGHT, OutboxEvent, PostKind, WakeKind, WakeStatus
from poller.models import (Agent, AgentSession, Handoff, Listener, Mood, Owed, Participant,
                           Refusal, Setting, Turn, Wake, WakeAnswer)
from poller.store import cycle, outbox
from poller.store.core import Store, insert_post, resolve_in
from poller.values import AgentInfo, MoodInfo, ParticipantInfo

log = logging.getLogger("poller.turns")

@dataclass(frozen=True)
class Claimed:
    """What a runner needs to run the turn it claimed."""

    wake_id: int
    agent: AgentInfo
    mood: str
    kind: str
    tools: str
    text: str
    answers: tuple[int, ...]
    session: Optional[str]
    prompt_tokens: int = 0
    history: str = ""  # a model agent's kept conversation (JSON), with the session
    session_at: Optional[dt.datetime] = None  # when the kept session was last used
    agent_id: int = 0
    mood_id: int = 0


def claim(store: Store, wake_id: int, now: dt.datetime, pid: int) -> Optional[Claimed]:
    """pending -> running, or None if someone else has (or had) this wake."""
    with store.writing() as s:
        # Wait for a lock someone holds on the row (a poller recovering, briefly):
        # skipping it would leave the wake unstarted until recovery's grace runs out.
        w = locked_wake(s, wake_id)
        if w is None or w.status != WakeStatus.PENDING:
            return None
        if cycle.flag(s, "scram") is not None:
            return None  # no turn starts during an emergency stop; recovery starts it after
        w.status, w.started_at, w.runner_pid, w.host = WakeStatus.RUNNING, now, pid, procs.HOST
        w.heartbeat_at = now
        outbox.enqueue_turn(s, w, OutboxEvent.TURN_STARTED, now)
        agent = AgentInfo.from_rows(s.get(Participant, w.agent_id), s.get(Agent, w.agent_id))
        kept = s.get(AgentSession, (w.agent_id, w.mood_id))
        return Claimed(w.id, agent, s.get(Mood, w.mood_id).slug, w.kind, w.tools, w.text,
                       tuple(cycle.answers(s, w.id)), kept.session_id if kept else None,
                       w.prompt_tokens, (kept.history or "") if kept else "",
                       kept.updated_at if kept else None, w.agent_id, w.mood_id)


def beat(store: Store, wake_id: int, now: dt.datetime) -> bool:
    """Mark the turn alive; False if it is no longer running (closed elsewhere)."""
    with store.writing() as s:
        return s.connection().execute(_BEAT, {"w": wake_id, "at": now}).rowcount > 0


_W = Wake.__table__
_WHILE_RUNNING = sa.update(_W).where(_W.c.id == sa.bindparam("w"),
                                     _W.c.status == WakeStatus.RUNNING)
_BEAT = _WHILE_RUNNING.values(heartbeat_at=sa.bindparam("at", type_=_W.c.heartbeat_at.type))
_PROGRESS = _WHILE_RUNNING.values(progress=sa.bindparam("doing", type_=_W.c.progress.type))


def record_progress(store: Store, wake_id: int, progress: str) -> bool:
    """What the running turn is doing now; False once it is no longer running (a progress
    report that arrives after the turn ended never lands on the finished wake)."""
    with store.writing() as s:
        return s.connection().execute(_PROGRESS, {"w": wake_id,
                                                  "doing": progress[:200] or None}).rowcount > 0


def record_pgid(store: Store, wake_id: int, pgid: int) -> None:
    with store.writing() as s:
        s.execute(sa.update(Wake).where(Wake.id == wake_id).values(agent_pgid=pgid))


def handle_of(s: Session, participant_id: int) -> str:
    return s.scalar(_HANDLE, {"p": participant_id})


_HANDLE = sa.select(Participant.handle).where(Participant.id == sa.bindparam("p"))


# -- closing and settling ----------------------------------------------------------------


def close(s: Session, counter, w: Wake, status: str, why: str, now: dt.datetime,
          public: Optional[str] = None) -> None:
    """Record a turn that did not finish normally, with a system post saying so.

    *why* is the full reason, kept on the wake (``mood-poller wakes show``);
    the post in the Mood says *public* when given: the kind of failure
    without the agent's output (its stderr, an HTTP body), which may hold
    anything.
    """
    lock_listener(s, w)
    w.status, w.finished_at, w.error, w.progress = status, now, why, None
    said = why if public is None else public
    handle = handle_of(s, w.agent_id)
    if kinds.asked_for(w.kind):
        body = f"@{handle}'s turn ended without a reply: {said}."
        cycle.add_system_post(s, w.mood_id, w.agent_id, body, now, counter.count(body))
    else:  # nobody asked for this turn: the Mood is not told, the operator is
        log.warning("turn %s: %s's %s turn ended without a reply (%s); nobody asked for it, "
                    "so the Mood is not told", w.id, handle, w.kind, why,
                    extra={"action": "turn_failed_unasked", "wake_id": w.id, "agent": handle,
                           "kind": w.kind, "status": status})
    after_turn(s, w, now, silent_or_failed=True)


FOLLOW_UP_AFTER = dt.timedelta(seconds=60)


def follow_up(s: Session, counter, w: Wake, now: dt.datetime) -> None:
    """A turn was cut off with no reply: owe the Mood one look-only follow-up.

    The mention it answered is not woken again (a full-tool turn may have
    done half its work); instead, soon after, the agent gets a ``cut-off``
    wake carrying the note and the posts left unanswered, to answer, say what
    it had been doing, or stay silent.  A follow-up that is cut off too is
    held for an operator, with a notice in the Mood and in ``status``.
    """
    if w.reply_post_id is not None:
        return  # it had replied: nothing is owed
    l = cycle.listeners_for(s, {(w.agent_id, w.mood_id)})[(w.agent_id, w.mood_id)]
    if w.kind != WakeKind.CUT_OFF:
        due = now + FOLLOW_UP_AFTER
        if _still_owed(s, l.followup_of, w.id):
            # A follow-up is owed already, for posts an earlier cut-off turn left
            # unanswered, and this turn took none of them over (it answered nothing:
            # a consider, a quiet look): that follow-up stays theirs, or they are lost.
            l.followup_due_at = min(l.followup_due_at or due, due)
        else:
            l.followup_of, l.followup_due_at = w.id, due
        l.due_at = l.followup_due_at if l.due_at is None else min(l.due_at, l.followup_due_at)
        return
    handle = handle_of(s, w.agent_id)
    body = (f"@{handle}'s follow-up to a turn that was cut off was cut off too; it is held for "
            f"an operator (`mood-poller wakes show {w.id}`).")
    cycle.add_system_post(s, w.mood_id, w.agent_id, body, now, counter.count(body))
    cycle.quarantine(s, cycle.CUT_OFF_HELD, str(w.id), f"wake {w.id}, a follow-up, was cut off too: "
                     f"{w.error}", now, agent_id=w.agent_id, mood_id=w.mood_id)


def _still_owed(s: Session, followup_of: int, wake_id: int) -> bool:
    """Whether the cut-off wake *followup_of* still holds posts left unanswered and the
    wake *wake_id* answers none (so it did not take them over)."""
    if not followup_of or followup_of == wake_id:
        return False
    held = s.scalar(sa.select(sa.func.count()).select_from(WakeAnswer)
                    .where(WakeAnswer.wake_id == followup_of))
    mine = s.scalar(sa.select(sa.func.count()).select_from(WakeAnswer)
                    .where(WakeAnswer.wake_id == wake_id))
    return bool(held) and not mine


def after_turn(s: Session, w: Wake, now: dt.datetime, silent_or_failed: bool) -> None:
    """Start the cooldown, back off quiet looks that found nothing, wake held work."""
    outbox.enqueue_turn(s, w, OutboxEvent.TURN_ENDED, now)
    l = s.get(Listener, (w.agent_id, w.mood_id))
    if l is None:
        return
    values = settings.values(resolve_in(s, w.mood_id, w.agent_id, now))
    l.cooldown_until = now + dt.timedelta(seconds=values["cooldown"])
    if w.kind == WakeKind.QUIET and values["idle_after"]:
        if silent_or_failed:
            l.quiet_backoff = (l.quiet_backoff or 0) + 1
        l.quiet_due_at = now + clock.slowed(values["idle_after"], l.quiet_backoff or 0)
    # Held work here is looked at again on the next cycle.  (Mentions held in
    # other Moods for want of a free slot re-check every cycle by themselves,
    # so settling never has to lock other listeners' rows.)
    l.due_at = now


def locked_wake(s: Session, wake_id: int) -> Wake:
    pg = s.get_bind().dialect.name == "postgresql"
    return s.scalar(_WAKE_LOCKED if pg else _WAKE, {"w": wake_id})


_WAKE = sa.select(Wake).where(Wake.id == sa.bindparam("w"))
_WAKE_LOCKED = _WAKE.with_for_update()


def lock_listener(s: Session, w: Wake) -> None:
    """Lock the turn's listener row before the turn's posts go in.

    Inserting a post takes the cursor tables' advisory lock (PostgreSQL), and
    the cycle takes listener rows before it posts a notice; settling and
    recovery take them in the same order (wake, listener, advisory lock), so
    a turn ending while a cycle decides its Mood cannot deadlock with it.
    """
    pg = s.get_bind().dialect.name == "postgresql"
    s.execute(_LISTENER_LOCKED if pg else _LISTENER, {"a": w.agent_id, "m": w.mood_id})


_LISTENER = sa.select(Listener.agent_id).where(Listener.agent_id == sa.bindparam("a"),
                                               Listener.mood_id == sa.bindparam("m"))
_LISTENER_LOCKED = _LISTENER.with_for_update()


def in_flight(s: Session) -> list[Wake]:
    """Every turn pending or running, anywhere."""
    return list(s.scalars(sa.select(Wake).where(Wake.status.in_(IN_FLIGHT))))


@dataclass(frozen=True)
class Ending:
    """A turn being settled, as settling and the reply blocks' appliers read its wake."""

    id: int
    agent_id: int
    mood_id: int
    kind: str
    tools: str
    text: str
    seen_id: int
    prompt_tokens: int
    status: str
    reply_post_id: Optional[int] = None

    @classmethod
    def from_row(cls, w: Wake) -> "Ending":
        return cls(w.id, w.agent_id, w.mood_id, w.kind, w.tools, w.text, w.seen_id,
                   w.prompt_tokens, w.status, w.reply_post_id)


def begin_settling(s: Session, wake_id: int) -> Ending:
    """Lock the turn's wake and, while it still runs, its listener (wake, then listener,
    as recovery takes them); nothing is at work on it any more."""
    w = locked_wake(s, wake_id)
    if w.status == WakeStatus.RUNNING:
        lock_listener(s, w)
        w.progress = None
    return Ending.from_row(w)


def keep_session(s: Session, turn: Ending, session: Optional[str], cost: Optional[float],
                 now: dt.datetime, outcome=None) -> None:
    """The turn's session and cost; the session is resumed by the agent's next turn here.

    A command's turn (``/compact``...) ran in the session kept here and showed it no
    post: the session it reports replaces the kept one's id, nothing else of it.
    ``""`` for *session* says the old session cannot be resumed: it is dropped."""
    row = s.get(Turn, turn.id)
    if row is None:
        row = Turn(wake_id=turn.id, settings_seen_id=0)
        s.add(row)
    row.session_id, row.cost_usd = session or None, cost
    row.tokens_in = getattr(outcome, "tokens_in", None)
    row.tokens_out = getattr(outcome, "tokens_out", None)
    if session is None:
        return
    kept = s.get(AgentSession, (turn.agent_id, turn.mood_id))
    try:
        _keep(s, kept, turn, session, now)
    finally:
        keep_history(s, turn, outcome)


def keep_history(s: Session, turn: Ending, outcome) -> None:
    """A model agent's conversation, kept with its session in the transaction that posts
    the reply; a compacted one makes the next wake here carry the full catch-up."""
    history = getattr(outcome, "history", None)
    if history is None:
        return
    kept = s.get(AgentSession, (turn.agent_id, turn.mood_id))
    if kept is None:
        return
    kept.history, kept.history_tokens = history, getattr(outcome, "history_tokens", None)
    if getattr(outcome, "compacted", False):
        kept.wake_id = None  # what the session held is summarised: the next wake is in full


def _keep(s: Session, kept, turn: Ending, session: str, now: dt.datetime) -> None:
    if turn.kind == WakeKind.COMMAND:
        if kept is not None and session:
            kept.session_id = session
    elif session == "":
        if kept is not None:
            s.delete(kept)
    elif kept is None:
        s.add(AgentSession(agent_id=turn.agent_id, mood_id=turn.mood_id, session_id=session,
                           wake_id=turn.id, updated_at=now))
        s.flush()
    else:
        if kept.session_id != session:
            kept.history, kept.history_tokens = None, None  # another session: not its words
        kept.session_id, kept.wake_id, kept.updated_at = session, turn.id, now


def price(s: Session, wake_id: int, cost_usd: float) -> None:
    """The turn's cost, when its agent reported none and it was priced by its tokens."""
    s.get(Turn, wake_id).cost_usd = cost_usd


def end(s: Session, counter, wake_id: int, status: str, why: str, now: dt.datetime,
        public: Optional[str] = None) -> str:
    """:func:`close` the turn by its id; its final status."""
    w = s.get(Wake, wake_id)
    close(s, counter, w, status, why, now, public)
    return w.status


def owe_follow_up(s: Session, counter, wake_id: int, now: dt.datetime) -> None:
    """:func:`follow_up` the turn by its id."""
    follow_up(s, counter, s.get(Wake, wake_id), now)


def owe_again(s: Session, wake_id: int, now: dt.datetime) -> None:
    """The agent never took this wake in (its session could not be resumed, so the
    run ended before it began): the mentions it carried are owed again, and the
    next cycle wakes the agent for them in a fresh session."""
    w = s.get(Wake, wake_id)
    posts = list(s.scalars(sa.select(WakeAnswer.post_id).where(WakeAnswer.wake_id == w.id)))
    if not posts:
        return
    s.execute(sa.delete(WakeAnswer).where(WakeAnswer.wake_id == w.id))
    s.add_all(Owed(agent_id=w.agent_id, post_id=p, mood_id=w.mood_id) for p in posts)
    w.error = f"{w.error}; it never began, so its {len(posts)} mention(s) are owed again"
    l = s.get(Listener, (w.agent_id, w.mood_id))
    if l is not None:
        l.cooldown_until, l.due_at = None, now  # not a turn it took: no cooldown


def record_command_output(s: Session, counter, wake_id: int, body: str, note: str,
                          now: dt.datetime) -> str:
    """A person's slash command ran: *body* (what it printed) goes into the Mood as a
    system note, and nothing else of a turn follows (no cooldown, no blocks, no silence);
    what waited for the session is looked at again.  The wake's final status."""
    w = s.get(Wake, wake_id)
    posted = cycle.add_system_post(s, w.mood_id, w.agent_id, body, now, counter.count(body))
    s.flush()
    w.reply_post_id = posted.id
    w.status, w.finished_at, w.error = WakeStatus.REPLIED, now, note
    l = s.get(Listener, (w.agent_id, w.mood_id))
    if l is not None:
        l.due_at = now
    return w.status


@dataclass(frozen=True)
class Replied:
    """A reply that went in: the turn as it now stands, and the reply's tokens."""

    turn: Ending
    tokens: int


def record_reply(s: Session, counter, wake_id: int, text: str, *, silent: bool, note: str,
                 now: dt.datetime) -> Replied:
    """Ingest the reply (a silence is recorded as a silent post) and finish the wake with
    it; raises :class:`poller.errors.UserError` when the text cannot be posted."""
    w = s.get(Wake, wake_id)
    post = insert_post(s, counter, w.mood_id, w.agent_id, text, now,
                       kind=PostKind.SILENT if silent else PostKind.POST)
    w.status = WakeStatus.SILENT if silent else WakeStatus.REPLIED
    w.finished_at, w.reply_post_id, w.error = now, post.id, note
    outbox.attach_wake(s, post.id, w.id)
    return Replied(Ending.from_row(w), post.tokens)


def finish(s: Session, wake_id: int, now: dt.datetime, silent: bool) -> None:
    """:func:`after_turn` for a turn that replied (or stayed silent)."""
    after_turn(s, s.get(Wake, wake_id), now, silent_or_failed=silent)


def record_refusal(s: Session, counter, turn: Ending, block: str, reason: str,
                   now: dt.datetime) -> str:
    """Record a refused block and say so in the Mood; the agent's handle."""
    handle = handle_of(s, turn.agent_id)
    s.add(Refusal(wake_id=turn.id, agent_id=turn.agent_id, mood_id=turn.mood_id, block=block,
                  reason=reason, at=now))
    body = f"@{handle}'s {block} block was refused and nothing in it was applied: {reason}."
    cycle.add_system_post(s, turn.mood_id, turn.agent_id, body, now, counter.count(body))
    return handle


def add_agent_settings(s: Session, turn: Ending, changes: dict[str, str], note: str,
                       now: dt.datetime) -> None:
    """Append rows for (this Mood, this agent), set by the agent itself; every value was
    validated already, with the rules of ``mood-poller set``."""
    for key, value in changes.items():
        s.add(Setting(mood_id=turn.mood_id, agent_id=turn.agent_id, key=key,
                      value=str(settings.validate(key, value)), until=None,
                      set_by=turn.agent_id, note=note, at=now))


def agent_of(s: Session, agent_id: int) -> AgentInfo:
    return AgentInfo.from_rows(s.get(Participant, agent_id), s.get(Agent, agent_id))


def mood_named(s: Session, slug: str) -> Optional[MoodInfo]:
    row = s.scalar(_MOOD_NAMED, {"slug": slug})
    return MoodInfo.from_row(row) if row is not None else None


_MOOD_NAMED = sa.select(Mood).where(Mood.slug == sa.bindparam("slug"))


def mood_of(s: Session, mood_id: int) -> MoodInfo:
    return MoodInfo.from_row(s.get(Mood, mood_id))


def participant_named(s: Session, handle: str) -> Optional[ParticipantInfo]:
    row = s.scalar(_PARTICIPANT_NAMED, {"key": handle.lower()})
    return ParticipantInfo.from_row(row) if row is not None else None


_PARTICIPANT_NAMED = sa.select(Participant).where(Participant.handle_key == sa.bindparam("key"))


def record_handoff(s: Session, counter, turn: Ending, *, src: MoodInfo,
                   dst: MoodInfo, for_agent: Optional[ParticipantInfo],
                   about: str, context: str, now: dt.datetime) -> str:
    """A handoff and its event posts in both Moods; a named agent owes the arrival a look
    (woken there like a mention by an agent: look-only, held if busy, answered once).
    The handing agent's handle."""
    handle = handle_of(s, turn.agent_id)
    for_text = f" for @{for_agent.handle}" if for_agent else ""
    arrived = insert_post(s, counter, dst.id, turn.agent_id,
                          f"@{handle} handed context here from the Mood \"{src.slug}\"{for_text}: "
                          f"{about}", now, kind=PostKind.HANDOFF)
    insert_post(s, counter, src.id, turn.agent_id,
                f"@{handle} handed context to the Mood \"{dst.slug}\"{for_text}: {about}", now,
                kind=PostKind.HANDOFF)
    for_id = for_agent.id if for_agent else None
    s.add(Handoff(wake_id=turn.id, agent_id=turn.agent_id, from_mood_id=src.id,
                  to_mood_id=dst.id, for_agent_id=for_id, about=about, context=context,
                  event_post_id=arrived.id, at=now))
    if for_id is not None:
        s.add(Owed(agent_id=for_id, post_id=arrived.id, mood_id=dst.id))
        listener = cycle.listeners_for(s, {(for_id, dst.id)})[(for_id, dst.id)]
        listener.due_at = now if listener.due_at is None else min(listener.due_at, now)
    return handle
