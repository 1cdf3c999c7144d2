"""Runs one turn: ``python -m poller.runner WAKE_ID``.

The poller records a wake, then starts this runner.  The runner claims the
wake (pending -> running, recording its pid), hands the wake to the agent's
waker, and settles the outcome in one transaction: the reply becomes a post
(or a silent dot), a failure or timeout closes the turn with a system post,
and the listener's cooldown and quiet back-off are updated.  SIGTERM ends the
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

import sqlalchemy as sa

from poller import config as config_mod, db, errors, settle, state, text, tokens, wakers
from poller.turns import CLOCK_OFFSET_ENV, after_turn, close_turn
from poller.models import Agent, Mood, Participant, Post, Wake
from poller.store import Store

log = logging.getLogger("poller.runner")


class Clock:
    """Wall clock shifted by the poller's offset, so ``tick --now`` replays stay coherent."""

    def __init__(self) -> None:
        self.offset = dt.timedelta(seconds=float(os.environ.get(CLOCK_OFFSET_ENV, "0") or 0))

    def __call__(self) -> dt.datetime:
        return text.utcnow() + self.offset


def claim(store: Store, wake_id: int, now: dt.datetime):
    """pending -> running, or None if someone else has (or had) this wake."""
    with store.writing() as s:
        w = s.scalar(state.skip_locked(s, sa.select(Wake).where(Wake.id == wake_id)))
        if w is None or w.status != "pending":
            return None
        w.status, w.started_at, w.runner_pid, w.host = "running", now, os.getpid(), state.HOST
        p = s.get(Participant, w.agent_id)
        a = s.get(Agent, w.agent_id)
        m = s.get(Mood, w.mood_id)
        from poller.values import AgentInfo

        agent = AgentInfo.from_rows(p, a)
        return agent, m.slug, w.kind, w.tools, w.text, tuple(state.answers(s, w.id))


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
        w = s.get(Wake, wake_id)
        if w.status != "running":
            return w.status  # already closed (an emergency stop got there first)
        if outcome.status != "replied":
            close_turn(s, store.counter, w, outcome.status, outcome.error, now)
            return w.status
        reply = settle.classify(outcome.reply)
        note = "; ".join(n for n in (outcome.note, reply.note) if n)
        post = Post(mood_id=w.mood_id, sender_id=w.agent_id, created_at=now,
                    text=reply.text, kind=reply.kind, reply_to=None,
                    tokens=store.counter.count(reply.text))
        s.add(post)
        s.flush()
        if reply.kind == "post":
            record_mentions(s, post)
        w.status = "replied" if reply.kind == "post" else "silent"
        w.finished_at, w.reply_post_id, w.error = now, post.id, note
        after_turn(s, w, now, silent_or_failed=reply.kind == "silent")
        return w.status


def record_mentions(s, post: Post) -> None:
    from poller.models import Mention

    keys = text.mentioned_keys(post.text)
    if not keys:
        return
    q = sa.select(Participant.id).where(Participant.handle_key.in_(keys),
                                        Participant.id != post.sender_id)
    s.add_all(Mention(post_id=post.id, participant_id=pid, via="at") for pid in s.scalars(q))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or not argv[0].isdigit():
        print("usage: python -m poller.runner WAKE_ID", file=sys.stderr)
        return 2
    wake_id = int(argv[0])
    cancel = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: cancel.set())
    signal.signal(signal.SIGINT, lambda *_: cancel.set())
    clock = Clock()
    try:
        cfg = config_mod.load()
        store = Store(db.make_engine(cfg.db_url), tokens.counter(cfg.encoding))
    except errors.PollerError as exc:
        print(f"mood-poller runner: {exc}", file=sys.stderr)
        return exc.exit_code
    claimed = claim(store, wake_id, clock())
    if claimed is None:
        return 0
    agent, slug, kind, tools, body, answers = claimed
    turn = wakers.Turn(wake_id, agent.handle, slug, kind, tools, body, answers,
                       timeout=timeout_for(agent, tools, cfg.poller), workdir=agent.workdir)
    try:
        outcome = wakers.for_agent(agent).run(turn, lambda pgid: record_pgid(store, wake_id, pgid),
                                             cancel)
    except Exception as exc:  # a waker bug must still close the turn
        log.exception("waker failed")
        outcome = wakers.Outcome("failed", error=f"the waker failed: {type(exc).__name__}")
    status = settle_outcome(store, wake_id, outcome, clock())
    logging.getLogger("poller.runner").info(
        "turn %s %s", wake_id, status,
        extra={"action": "turn_settled", "wake_id": wake_id, "status": status})
    store.engine.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
