"""Settling a turn: what the agent sent back becomes a post, a silence or a failure.

:func:`settle_outcome` records how a turn ended, in one write transaction so
a turn settles exactly once: the session kept, the reply read
(:mod:`poller.turns.settle`) and posted, or the turn closed with a notice,
the reply's blocks applied through the registry of :mod:`poller.turns.blocks`
(each kind by the applier its owner declared), and the refused ones recorded
and announced.  Every write is a verb of :mod:`poller.store.turns`.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Optional

from poller import errors
from poller.kinds import WakeKind, WakeStatus
from poller.store import Store, turns
from poller.turns import blocks, settle

log = logging.getLogger("poller.runner")


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
        turn = turns.begin_settling(s, wake_id)
        if turn.status != WakeStatus.RUNNING:
            return turn.status  # already closed (an emergency stop got there first)
        turns.keep_session(s, turn, outcome.session, outcome.cost, now, outcome)
        if outcome.status != WakeStatus.REPLIED:
            return ended_badly(s, store.counter, turn, outcome, now)
        output = blocks.output_for(turn.kind)
        if output is not None:
            return output.settle(s, store.counter, turn, outcome, now)
        return replied(s, store.counter, turn, outcome, now, prices)


def replied(s, counter, turn: turns.Ending, outcome, now: dt.datetime,
            prices: Optional[Prices]) -> str:
    """The reply goes in as a post or a silence, then its blocks are applied."""
    parsed = blocks.parse(outcome.reply, tools=turn.tools)
    reply = settle.classify(parsed.text)
    note = "; ".join(n for n in (outcome.note, reply.note) if n)
    try:
        done = turns.record_reply(s, counter, turn.id, reply.text, silent=reply.kind == "silent",
                                  note=note, now=now)
    except errors.UserError as exc:
        return turns.end(s, counter, turn.id, WakeStatus.FAILED,
                         f"its reply could not be posted: {exc}", now)
    if outcome.cost is None and prices is not None:
        tokens_in = getattr(outcome, "tokens_in", None)
        tokens_out = getattr(outcome, "tokens_out", None)
        turns.price(s, turn.id, prices.cost(turn.prompt_tokens if tokens_in is None else tokens_in,
                                            done.tokens if tokens_out is None else tokens_out))
    apply_blocks(s, counter, done.turn, parsed, now)
    turns.finish(s, turn.id, now, silent=reply.kind == "silent")
    return done.turn.status


def ended_badly(s, counter, turn: turns.Ending, outcome, now: dt.datetime) -> str:
    """A turn that failed or was cut off: closed with a notice; a follow-up owed for a cut
    off (not for a command's), the mentions again for a wake the agent never took in."""
    public = getattr(outcome, "public", "") or (
        "it was cut off" if outcome.status == WakeStatus.CUT_OFF else "it failed")
    status = turns.end(s, counter, turn.id, outcome.status, outcome.error, now, public=public)
    if outcome.status == WakeStatus.CUT_OFF and turn.kind != WakeKind.COMMAND:
        turns.owe_follow_up(s, counter, turn.id, now)
    elif getattr(outcome, "unseen", False):
        turns.owe_again(s, turn.id, now)
    return status


def apply_blocks(s, counter, turn: turns.Ending, parsed: blocks.Parsed,
                 now: dt.datetime) -> None:
    """Run the registered kinds' appliers and hooks in rank order; record and announce
    the refused blocks (those refused when parsed first)."""
    posted = turn.status == WakeStatus.REPLIED
    refused = list(parsed.refused)
    for step in blocks.steps():
        if isinstance(step, blocks.ReplyHook):
            step.run(s, counter, turn, posted, now)
            continue
        value = parsed.get(step.name)
        if value is None and turn.kind not in step.without_block:
            continue
        why = step.apply(s, counter, turn, value, now)
        if why:
            refused.append(blocks.BlockRefusal(step.name, why))
    for r in refused:
        handle = turns.record_refusal(s, counter, turn, r.block, r.reason, now)
        log.info("refused a %s block from %s: %s", r.block, handle, r.reason,
                 extra={"action": "block_refused", "wake_id": turn.id, "block": r.block})
