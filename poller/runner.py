"""Runs one turn: ``python -m poller.runner WAKE_ID``.

The poller records a wake, then starts this runner.  The runner claims the
wake (pending -> running, recording its pid), hands the wake to the agent's
waker, and settles the outcome in one transaction: the reply becomes a post
(or a silent dot), a failure or timeout closes the turn with a system post,
and the listener's cooldown and quiet back-off are updated.  A reply's
```handoff and ```settings blocks (:mod:`poller.blocks`) are applied in the
same transaction, or refused whole with a system post and a recorded reason
the agent's next wake there reports.  The agent's session (Claude Code) and
the turn's cost are kept for the next turn.  SIGTERM ends the
turn and records it as cut off.  The database URL and config path come from
the environment (``MOOD_POLLER_DB``, ``MOOD_POLLER_CONFIG``), never argv.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import signal
import sys
import threading
import time

import sqlalchemy as sa

from poller import (blocks, config as config_mod, db, errors, settings, settle, state, text, tokens,
                    wakers)
from poller.clock import Clock
from poller.turns import after_turn, close_turn
from poller.models import (Agent, AgentSession, Handoff, Mood, Owed, Participant, Post,
                           Refusal, Setting, Turn, Wake)
from poller.store import Store, record_mentions

log = logging.getLogger("poller.runner")


def claim(store: Store, wake_id: int, now: dt.datetime):
    """pending -> running, or None if someone else has (or had) this wake."""
    with store.writing() as s:
        w = s.scalar(state.skip_locked(s, sa.select(Wake).where(Wake.id == wake_id)))
        if w is None or w.status != "pending":
            return None
        w.status, w.started_at, w.runner_pid, w.host = "running", now, os.getpid(), state.HOST
        w.heartbeat_at = now
        p = s.get(Participant, w.agent_id)
        a = s.get(Agent, w.agent_id)
        m = s.get(Mood, w.mood_id)
        from poller.values import AgentInfo

        agent = AgentInfo.from_rows(p, a)
        kept = s.get(AgentSession, (w.agent_id, w.mood_id))
        return (agent, m.slug, w.kind, w.tools, w.text, tuple(state.answers(s, w.id)),
                kept.session_id if kept else None)


HEARTBEAT_S = 10.0


def heartbeat(store: Store, wake_id: int, clock, done: threading.Event, every: float,
              cancel: threading.Event) -> None:
    """Mark the turn alive every few seconds until it ends, for pollers on other machines.

    If the turn is no longer running (an emergency stop, or a poller elsewhere
    closed it), end it here too.
    """
    while not done.wait(every):
        try:
            with store.writing() as s:
                hit = s.execute(sa.update(Wake).where(Wake.id == wake_id, Wake.status == "running")
                                .values(heartbeat_at=clock())).rowcount
            if hit == 0:
                cancel.set()
                return
        except Exception:  # a missed beat is harmless; the next one may land
            log.warning("turn %s: heartbeat failed", wake_id, extra={"action": "heartbeat_failed"})


def record_pgid(store: Store, wake_id: int, pgid: int) -> None:
    with store.writing() as s:
        s.execute(sa.update(Wake).where(Wake.id == wake_id).values(agent_pgid=pgid))


def timeout_for(agent, tools: str, cfg: config_mod.PollerConfig):
    if agent.timeout:
        return agent.timeout
    if tools == "full":
        return cfg.full_timeout or None
    return cfg.look_timeout or None


def settle_outcome(store: Store, wake_id: int, outcome: wakers.Outcome, now: dt.datetime) -> str:
    """Record how the turn ended; returns the wake's final status."""
    with store.writing() as s:
        w = s.scalar(state.for_update(s, sa.select(Wake).where(Wake.id == wake_id)))
        if w.status != "running":
            return w.status  # already closed (an emergency stop got there first)
        keep_session(s, w, outcome, now)
        if outcome.status != "replied":
            close_turn(s, store.counter, w, outcome.status, outcome.error, now)
            return w.status
        parsed = blocks.parse(outcome.reply, tools=w.tools)
        reply = settle.classify(parsed.text)
        note = "; ".join(n for n in (outcome.note, reply.note) if n)
        post = _post(s, store.counter, w.mood_id, w.agent_id, reply.text, reply.kind, now)
        if reply.kind == "post":
            record_mentions(s, post)
        w.status = "replied" if reply.kind == "post" else "silent"
        w.finished_at, w.reply_post_id, w.error = now, post.id, note
        apply_blocks(s, store.counter, w, parsed, now)
        after_turn(s, w, now, silent_or_failed=reply.kind == "silent")
        return w.status


def _post(s, counter, mood_id: int, sender_id: int, body: str, kind: str, now: dt.datetime) -> Post:
    post = Post(mood_id=mood_id, sender_id=sender_id, created_at=now, text=body, kind=kind,
                reply_to=None, tokens=counter.count(body))
    s.add(post)
    s.flush()
    return post


def keep_session(s, w: Wake, outcome: wakers.Outcome, now: dt.datetime) -> None:
    """The turn's session and cost; the session is resumed by the agent's next turn here."""
    turn = s.get(Turn, w.id)
    if turn is None:
        turn = Turn(wake_id=w.id, settings_seen_id=0)
        s.add(turn)
    turn.session_id, turn.cost_usd = outcome.session or None, outcome.cost
    if outcome.session is None:
        return
    kept = s.get(AgentSession, (w.agent_id, w.mood_id))
    if outcome.session == "":  # the waker says the old session cannot be resumed
        if kept is not None:
            s.delete(kept)
    elif kept is None:
        s.add(AgentSession(agent_id=w.agent_id, mood_id=w.mood_id, session_id=outcome.session,
                           wake_id=w.id, updated_at=now))
    else:
        kept.session_id, kept.wake_id, kept.updated_at = outcome.session, w.id, now


# -- blocks in the reply --------------------------------------------------------------


def apply_blocks(s, counter, w: Wake, parsed: blocks.Parsed, now: dt.datetime) -> None:
    """Apply the reply's valid blocks; record and announce the refused ones."""
    refused = list(parsed.refused)
    if parsed.settings is not None:
        apply_settings(s, w, parsed.settings, now)
    if parsed.handoff is not None:
        why = apply_handoff(s, counter, w, parsed.handoff, now)
        if why:
            refused.append(blocks.Refused("handoff", why))
    handle = s.scalar(sa.select(Participant.handle).where(Participant.id == w.agent_id))
    for r in refused:
        s.add(Refusal(wake_id=w.id, agent_id=w.agent_id, mood_id=w.mood_id, block=r.block,
                      reason=r.reason, at=now))
        _post(s, counter, w.mood_id, w.agent_id,
              f"@{handle}'s {r.block} block was refused and nothing in it was applied: {r.reason}.",
              "system", now)
        log.info("refused a %s block from %s: %s", r.block, handle, r.reason,
                 extra={"action": "block_refused", "wake_id": w.id, "block": r.block})


def apply_settings(s, w: Wake, block: blocks.Settings, now: dt.datetime) -> None:
    """Append the block's rows for (this Mood, this agent), set by the agent itself.

    ``blocks.settings_block`` already validated every value with the rules of
    ``mood-poller set``; the rows go in with the rest of the settling.
    """
    for key, value in block.changes.items():
        s.add(Setting(mood_id=w.mood_id, agent_id=w.agent_id, key=key,
                      value=str(settings.validate(key, value)), until=None, set_by=w.agent_id,
                      note=block.note, at=now))


def apply_handoff(s, counter, w: Wake, h: blocks.Handoff, now: dt.datetime) -> str:
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
    handle = s.scalar(sa.select(Participant.handle).where(Participant.id == w.agent_id))
    arrived = _post(s, counter, dst.id, w.agent_id,
                    f"@{handle} handed context here from the Mood \"{src.slug}\"{for_text}: {h.about}",
                    "handoff", now)
    _post(s, counter, src.id, w.agent_id,
          f"@{handle} handed context to the Mood \"{dst.slug}\"{for_text}: {h.about}", "handoff", now)
    s.add(Handoff(wake_id=w.id, agent_id=w.agent_id, from_mood_id=src.id, to_mood_id=dst.id,
                  for_agent_id=for_id, about=h.about, context=h.context,
                  event_post_id=arrived.id, at=now))
    if for_id is not None:
        # The named agent owes the handoff a look: it is woken there like a
        # mention by an agent (look-only), held if busy, answered once.
        s.add(Owed(agent_id=for_id, post_id=arrived.id, mood_id=dst.id))
        listener = state.listeners_for(s, {(for_id, dst.id)})[(for_id, dst.id)]
        listener.due_at = now if listener.due_at is None else min(listener.due_at, now)
    log.info("%s handed context from %s to %s", handle, src.slug, dst.slug,
             extra={"action": "handoff", "wake_id": w.id, "from": src.slug, "to": dst.slug})
    return ""


SETTLE_ATTEMPTS = 5


def settle_with_retries(store: Store, wake_id: int, outcome: wakers.Outcome, clock) -> str:
    """Settle, retrying lost races (a deadlock with another poller, a busy file).

    A reply that still cannot be recorded closes the turn as failed, so it is
    never left "running" for a restart to call cut off.
    """
    import sqlalchemy.exc

    for attempt in range(SETTLE_ATTEMPTS):
        try:
            return settle_outcome(store, wake_id, outcome, clock())
        except sqlalchemy.exc.OperationalError as exc:
            log.warning("settling turn %s failed (attempt %d): %s", wake_id, attempt + 1,
                        str(exc).splitlines()[0], extra={"action": "settle_retry"})
            time.sleep(0.2 * 2 ** attempt)
        except Exception as exc:
            log.exception("settling turn %s failed", wake_id)
            failed = wakers.Outcome("failed", error=f"the reply could not be recorded: "
                                    f"{type(exc).__name__}")
            return settle_outcome(store, wake_id, failed, clock())
    failed = wakers.Outcome("failed", error="the reply could not be recorded: database busy")
    return settle_outcome(store, wake_id, failed, clock())


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or not argv[0].isdigit():
        print("usage: python -m poller.runner WAKE_ID", file=sys.stderr)
        return 2
    wake_id = int(argv[0])
    cancel = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: cancel.set())
    signal.signal(signal.SIGINT, lambda *_: cancel.set())
    clock = Clock.from_env()
    try:
        cfg = config_mod.load()
        store = Store(db.make_engine(cfg.db_url), tokens.counter(cfg.encoding))
    except errors.PollerError as exc:
        print(f"mood-poller runner: {exc}", file=sys.stderr)
        return exc.exit_code
    claimed = claim(store, wake_id, clock())
    if claimed is None:
        return 0
    agent, slug, kind, tools, body, answers, session = claimed
    turn = wakers.Turn(wake_id, agent.handle, slug, kind, tools, body, answers,
                       timeout=timeout_for(agent, tools, cfg.poller), workdir=agent.workdir,
                       session=session,
                       pass_env=tuple(n.strip() for n in cfg.poller.agent_env.split(",") if n.strip()))
    done = threading.Event()
    every = min(HEARTBEAT_S, cfg.poller.turn_stale / 4)
    threading.Thread(target=heartbeat, args=(store, wake_id, clock, done, every, cancel),
                     daemon=True).start()
    try:
        outcome = wakers.for_agent(agent).run(turn, lambda pgid: record_pgid(store, wake_id, pgid),
                                             cancel)
    except Exception as exc:  # a waker bug must still close the turn
        log.exception("waker failed")
        outcome = wakers.Outcome("failed", error=f"the waker failed: {type(exc).__name__}")
    done.set()
    status = settle_with_retries(store, wake_id, outcome, clock)
    logging.getLogger("poller.runner").info(
        "turn %s %s", wake_id, status,
        extra={"action": "turn_settled", "wake_id": wake_id, "status": status})
    store.engine.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
