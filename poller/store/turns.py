"""A turn's reads and writes: claiming a wake, the heartbeat, settling, closing.

Shared by the runner (claim, heartbeat, settle) and the cycle (recovery, the
emergency stop), each verb inside the caller's transaction where a claim and
its writes must commit together.  A reply is ingested like any post
(:func:`poller.store.core.insert_post`): the same validation, the same
mention records.
"""

from __future__ import annotations

import datetime as dt
import logging
import random
from dataclasses import dataclass
from typing import Optional

import sqlalchemy as sa
from sqlalchemy.orm import Session

from poller.turns import blocks, settle
from poller.away import catalog as catalogs
from poller import errors, law, settings
from poller.control import slash
from poller.kinds import OutboxEvent, PostKind, WakeKind, WakeStatus
from poller.models import (Agent, AgentSession, Handoff, Listener, Mood, Owed, Participant,
                           Refusal, Setting, Turn, Wake, WakePost)
from poller.text import MAX_POST_CHARS
from poller import procs
from poller.store import away as absences, cycle, outbox
from poller.store.core import Store, insert_post, resolve_in
from poller.values import AgentInfo

log = logging.getLogger("poller.runner")


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


def claim(store: Store, wake_id: int, now: dt.datetime, pid: int) -> Optional[Claimed]:
    """pending -> running, or None if someone else has (or had) this wake."""
    with store.writing() as s:
        # Wait for a lock someone holds on the row (a poller recovering, briefly):
        # skipping it would leave the wake unstarted until recovery's grace runs out.
        w = s.scalar(cycle.for_update(s, sa.select(Wake).where(Wake.id == wake_id)))
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
                       w.prompt_tokens)


def beat(store: Store, wake_id: int, now: dt.datetime) -> bool:
    """Mark the turn alive; False if it is no longer running (closed elsewhere)."""
    with store.writing() as s:
        return s.execute(sa.update(Wake).where(Wake.id == wake_id,
                                               Wake.status == WakeStatus.RUNNING)
                         .values(heartbeat_at=now)).rowcount > 0


def record_progress(store: Store, wake_id: int, progress: str) -> bool:
    """What the running turn is doing now; False once it is no longer running (a progress
    report that arrives after the turn ended never lands on the finished wake)."""
    with store.writing() as s:
        return s.execute(sa.update(Wake).where(Wake.id == wake_id,
                                               Wake.status == WakeStatus.RUNNING)
                         .values(progress=progress[:200] or None)).rowcount > 0


def record_pgid(store: Store, wake_id: int, pgid: int) -> None:
    with store.writing() as s:
        s.execute(sa.update(Wake).where(Wake.id == wake_id).values(agent_pgid=pgid))


def handle_of(s: Session, participant_id: int) -> str:
    return s.scalar(sa.select(Participant.handle).where(Participant.id == participant_id))


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
    body = f"@{handle_of(s, w.agent_id)}'s turn ended without a reply: {said}."
    cycle.add_system_post(s, w.mood_id, w.agent_id, body, now, counter.count(body))
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
        l.followup_of, l.followup_due_at = w.id, now + FOLLOW_UP_AFTER
        l.due_at = l.followup_due_at if l.due_at is None else min(l.due_at, l.followup_due_at)
        return
    handle = handle_of(s, w.agent_id)
    body = (f"@{handle}'s follow-up to a turn that was cut off was cut off too; it is held for "
            f"an operator (`mood-poller wakes show {w.id}`).")
    cycle.add_system_post(s, w.mood_id, w.agent_id, body, now, counter.count(body))
    cycle.quarantine(s, "cut-off", str(w.id), f"wake {w.id}, a follow-up, was cut off too: "
                     f"{w.error}", now, agent_id=w.agent_id, mood_id=w.mood_id)


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
        l.quiet_due_at = now + law.slowed(values["idle_after"], l.quiet_backoff or 0)
    # Held work here is looked at again on the next cycle.  (Mentions held in
    # other Moods for want of a free slot re-check every cycle by themselves,
    # so settling never has to lock other listeners' rows.)
    l.due_at = now


def locked_wake(s: Session, wake_id: int) -> Wake:
    return s.scalar(cycle.for_update(s, sa.select(Wake).where(Wake.id == wake_id)))


def lock_listener(s: Session, w: Wake) -> None:
    """Lock the turn's listener row before the turn's posts go in.

    Inserting a post takes the cursor tables' advisory lock (PostgreSQL), and
    the cycle takes listener rows before it posts a notice; settling and
    recovery take them in the same order (wake, listener, advisory lock), so
    a turn ending while a cycle decides its Mood cannot deadlock with it.
    """
    s.execute(cycle.for_update(s, sa.select(Listener.agent_id).where(
        Listener.agent_id == w.agent_id, Listener.mood_id == w.mood_id)))


def in_flight(s: Session) -> list[Wake]:
    """Every turn pending or running, anywhere."""
    from poller.kinds import IN_FLIGHT

    return list(s.scalars(sa.select(Wake).where(Wake.status.in_(IN_FLIGHT))))


@dataclass(frozen=True)
class Prices:
    """US dollars per million tokens, for agents that report no cost of their own."""

    usd_per_mtok_in: float
    usd_per_mtok_out: float

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        return (tokens_in * self.usd_per_mtok_in + tokens_out * self.usd_per_mtok_out) / 1e6


def settle_outcome(store: Store, wake_id: int, outcome, now: dt.datetime,
                   prices: Optional[Prices] = None) -> str:
    """Record how the turn ended; returns the wake's final status.

    *outcome* is a :class:`poller.turns.wakers.Outcome`: a status, the reply, an
    error (kept on the wake) and its public reason (posted in the Mood), the
    agent's session and the turn's cost.  An outcome with no public reason
    is announced by its status alone.  A turn that reports no cost is priced
    by its tokens at *prices*, when given (the wake's tokens in, the reply's out).
    """
    with store.writing() as s:
        w = locked_wake(s, wake_id)
        if w.status != WakeStatus.RUNNING:
            return w.status  # already closed (an emergency stop got there first)
        lock_listener(s, w)
        w.progress = None  # the turn is over: nothing is at work any more
        turn = keep_session(s, w, outcome.session, outcome.cost, now)
        if outcome.status != WakeStatus.REPLIED:
            return ended_badly(s, store.counter, w, outcome, now)
        if w.kind == WakeKind.COMMAND:
            return command_done(s, store.counter, w, outcome, now)
        parsed = blocks.parse(outcome.reply, tools=w.tools)
        reply = settle.classify(parsed.text)
        try:
            post = insert_post(s, store.counter, w.mood_id, w.agent_id, reply.text, now,
                               kind=PostKind.POST if reply.kind == "post" else PostKind.SILENT)
        except errors.UserError as exc:
            close(s, store.counter, w, WakeStatus.FAILED,
                  f"its reply could not be posted: {exc}", now)
            return w.status
        w.status = WakeStatus.REPLIED if reply.kind == "post" else WakeStatus.SILENT
        w.finished_at, w.reply_post_id = now, post.id
        outbox.attach_wake(s, post.id, w.id)
        if outcome.cost is None and prices is not None:
            turn.cost_usd = prices.cost(w.prompt_tokens, post.tokens)
        w.error = "; ".join(n for n in (outcome.note, reply.note) if n)
        if reply.kind == "post":
            come_back_if_called(s, w, now)
        apply_blocks(s, store.counter, w, parsed, now)
        after_turn(s, w, now, silent_or_failed=reply.kind == "silent")
        return w.status


def ended_badly(s: Session, counter, w: Wake, outcome, now: dt.datetime) -> str:
    """A turn that failed or was cut off: closed with a notice; a follow-up owed for a cut
    off (not for a command's), the mentions again for a wake the agent never took in."""
    public = getattr(outcome, "public", "") or (
        "it was cut off" if outcome.status == WakeStatus.CUT_OFF else "it failed")
    close(s, counter, w, outcome.status, outcome.error, now, public=public)
    if outcome.status == WakeStatus.CUT_OFF and w.kind != WakeKind.COMMAND:
        follow_up(s, counter, w, now)
    elif getattr(outcome, "unseen", False):
        owe_again(s, w, now)
    return w.status


def command_done(s: Session, counter, w: Wake, outcome, now: dt.datetime) -> str:
    """A person's slash command ran: what it printed goes into the Mood as a system note
    (the session's output, not the agent speaking), and nothing else of a turn follows
    (no cooldown, no blocks read, no silence)."""
    word = (w.text or "/").lstrip("/")
    body = slash.output_note(word, handle_of(s, w.agent_id), outcome.reply, MAX_POST_CHARS)
    note = cycle.add_system_post(s, w.mood_id, w.agent_id, body, now, counter.count(body))
    s.flush()
    w.reply_post_id = note.id
    w.status, w.finished_at, w.error = WakeStatus.REPLIED, now, outcome.note or outcome.error
    l = s.get(Listener, (w.agent_id, w.mood_id))
    if l is not None:
        l.due_at = now  # what waited for the session is looked at again
    return w.status


def come_back_if_called(s: Session, w: Wake, now: dt.datetime) -> None:
    """A real reply to a judgment (a trusted ping while the agent was out) cuts the
    absence short: it comes back now.  A silent one keeps it out."""
    judged = absences.judgment_of(s, w.id)
    if judged is not None:
        absences.call_back(s, *judged, now)
        log.info("wake %s: a reply to a judgment, so the absence is cut short", w.id,
                 extra={"action": "absence_cut_short", "wake_id": w.id,
                        "activity_id": judged[0]})


def owe_again(s: Session, w: Wake, now: dt.datetime) -> None:
    """The agent never took this wake in (its session could not be resumed, so the
    run ended before it began): the mentions it carried are owed again, and the
    next cycle wakes the agent for them in a fresh session."""
    posts = list(s.scalars(sa.select(WakePost.post_id).where(WakePost.wake_id == w.id)))
    if not posts:
        return
    s.execute(sa.delete(WakePost).where(WakePost.wake_id == w.id))
    s.add_all(Owed(agent_id=w.agent_id, post_id=p, mood_id=w.mood_id) for p in posts)
    w.error = f"{w.error}; it never began, so its {len(posts)} mention(s) are owed again"
    l = s.get(Listener, (w.agent_id, w.mood_id))
    if l is not None:
        l.cooldown_until, l.due_at = None, now  # not a turn it took: no cooldown


def keep_session(s: Session, w: Wake, session: Optional[str], cost, now: dt.datetime) -> Turn:
    """The turn's session and cost; the session is resumed by the agent's next turn here.

    A command's turn (``/compact``...) ran in the session kept here and showed it no
    post: the session it reports replaces the kept one's id, nothing else of it."""
    turn = s.get(Turn, w.id)
    if turn is None:
        turn = Turn(wake_id=w.id, settings_seen_id=0)
        s.add(turn)
    turn.session_id, turn.cost_usd = session or None, cost
    if session is None:
        return turn
    kept = s.get(AgentSession, (w.agent_id, w.mood_id))
    if w.kind == WakeKind.COMMAND:
        if kept is not None and session:
            kept.session_id = session
        return turn
    if session == "":  # the waker says the old session cannot be resumed
        if kept is not None:
            s.delete(kept)
    elif kept is None:
        s.add(AgentSession(agent_id=w.agent_id, mood_id=w.mood_id, session_id=session,
                           wake_id=w.id, updated_at=now))
    else:
        kept.session_id, kept.wake_id, kept.updated_at = session, w.id, now
    return turn


# -- blocks in the reply --------------------------------------------------------------


def apply_blocks(s: Session, counter, w: Wake, parsed: blocks.Parsed, now: dt.datetime) -> None:
    """Apply the reply's valid blocks; record and announce the refused ones."""
    from poller.schedules import agreements

    refused = list(parsed.refused)
    refused += agreements.after_reply(s, counter, w, parsed, w.status == WakeStatus.REPLIED, now)
    if parsed.settings is not None:
        apply_settings(s, w, parsed.settings, now)
    if parsed.handoff is not None:
        why = apply_handoff(s, counter, w, parsed.handoff, now)
        if why:
            refused.append(blocks.Refused("handoff", why))
    if parsed.away is not None:
        why = apply_away(s, w, parsed.away, now)
        if why:
            refused.append(blocks.Refused("away", why))
    handle = handle_of(s, w.agent_id)
    for r in refused:
        s.add(Refusal(wake_id=w.id, agent_id=w.agent_id, mood_id=w.mood_id, block=r.block,
                      reason=r.reason, at=now))
        body = f"@{handle}'s {r.block} block was refused and nothing in it was applied: {r.reason}."
        cycle.add_system_post(s, w.mood_id, w.agent_id, body, now, counter.count(body))
        log.info("refused a %s block from %s: %s", r.block, handle, r.reason,
                 extra={"action": "block_refused", "wake_id": w.id, "block": r.block})


def apply_settings(s: Session, w: Wake, block: blocks.Settings, now: dt.datetime) -> None:
    """Append the block's rows for (this Mood, this agent), set by the agent itself.

    ``blocks.settings_block`` already validated every value with the rules of
    ``mood-poller set``; the rows go in with the rest of the settling.
    """
    for key, value in block.changes.items():
        s.add(Setting(mood_id=w.mood_id, agent_id=w.agent_id, key=key,
                      value=str(settings.validate(key, value)), until=None, set_by=w.agent_id,
                      note=block.note, at=now))


def apply_away(s: Session, w: Wake, block: blocks.Away, now: dt.datetime) -> str:
    """Start the absence the block asks for, after the reply just posted (its goodbye);
    or the reason it is refused.  The duration is rolled from the catalog entry."""
    cycle.lock_agent(s, w.agent_id)  # one absence at a time, whichever turn asks first
    if absences.active_for(s, w.agent_id) is not None:
        return "you are away from the screen already"
    agent = AgentInfo.from_rows(s.get(Participant, w.agent_id), s.get(Agent, w.agent_id))
    try:
        cat = catalogs.of(agent, strict=True)
    except catalogs.CatalogError as exc:  # the why is for operators, not for the Mood
        log.error("%s's away block: %s", agent.handle, exc,
                  extra={"action": "catalog_invalid", "agent": agent.handle})
        return "your activities catalog is invalid just now (the poller's log says why)"
    if cat is None:
        return ("you have no activities catalog, so there is nowhere to go (an operator "
                "gives one with `mood-poller agent set --activities FILE`)")
    entry = cat.entry(block.activity)
    if entry is None:
        return f"there is no activity {block.activity!r} in your catalog (yours: {', '.join(cat.ids)})"
    minutes = random.randint(*entry.duration)
    absence = absences.start(s, agent_id=w.agent_id, mood_id=w.mood_id, entry=entry, cat=cat,
                             note=block.note, minutes=minutes, post_id=w.reply_post_id,
                             wake_id=w.id, now=now)
    log.info("%s went out: %s for %d minutes", agent.handle, entry.label, minutes,
             extra={"action": "absence_started", "wake_id": w.id, "activity_id": absence.id,
                    "activity": entry.id, "minutes": minutes})
    return ""


def apply_handoff(s: Session, counter, w: Wake, h: blocks.Handoff, now: dt.datetime) -> str:
    """Record a handoff and its event posts in both Moods; or the reason it is refused."""
    here = s.get(Mood, w.mood_id)
    other = s.scalar(sa.select(Mood).where(Mood.slug == h.mood))
    if other is None:
        return f"there is no Mood {h.mood!r}"
    if other.id == here.id:
        return "a handoff must name another Mood, not this one"
    if other.archived:
        return f"the Mood {h.mood!r} is archived"
    for_id = None
    if h.for_agent:
        p = s.scalar(sa.select(Participant).where(Participant.handle_key == h.for_agent.lower()))
        if p is None or p.kind != "agent":
            return f"there is no agent {h.for_agent!r}"
        for_id, for_text = p.id, f" for @{p.handle}"
    else:
        for_text = ""
    src, dst = (here, other) if h.direction == "to" else (other, here)
    handle = handle_of(s, w.agent_id)
    arrived = insert_post(s, counter, dst.id, w.agent_id,
                          f"@{handle} handed context here from the Mood \"{src.slug}\"{for_text}: "
                          f"{h.about}", now, kind=PostKind.HANDOFF)
    insert_post(s, counter, src.id, w.agent_id,
                f"@{handle} handed context to the Mood \"{dst.slug}\"{for_text}: {h.about}", now,
                kind=PostKind.HANDOFF)
    s.add(Handoff(wake_id=w.id, agent_id=w.agent_id, from_mood_id=src.id, to_mood_id=dst.id,
                  for_agent_id=for_id, about=h.about, context=h.context,
                  event_post_id=arrived.id, at=now))
    if for_id is not None:
        # The named agent owes the handoff a look: it is woken there like a
        # mention by an agent (look-only), held if busy, answered once.
        s.add(Owed(agent_id=for_id, post_id=arrived.id, mood_id=dst.id))
        listener = cycle.listeners_for(s, {(for_id, dst.id)})[(for_id, dst.id)]
        listener.due_at = now if listener.due_at is None else min(listener.due_at, now)
    log.info("%s handed context from %s to %s", handle, src.slug, dst.slug,
             extra={"action": "handoff", "wake_id": w.id, "from": src.slug, "to": dst.slug})
    return ""
