"""The screen in the cycle: its client, made as a poller starts, and its last look at
the composed considers (:mod:`poller.cycle.stages`)."""

from __future__ import annotations

import datetime as dt

from poller import screen
from poller.cycle import drafts, stages
from poller.kinds import WakeKind


def setup(ctx) -> None:
    ctx.screen = screen.from_config(ctx.config.screen, ctx.store.counter)


def screened(ctx, step, composed: list, now: dt.datetime, report) -> list:
    """The composed wakes to record: considers worth screening (at least
    ``screen.min_wake_tokens``: a smaller wake costs less than asking) that the screen
    says nobody needs are recorded as screened out instead (asked with no transaction
    open)."""
    client, least = ctx.screen, ctx.config.screen.min_wake_tokens
    if client is None:
        return composed
    keep, out = [], []
    for draft, wake in composed:
        verdict = (client.ask(draft.agent.handle, draft.mood.slug, draft.request.woke, now)
                   if draft.kind == WakeKind.CONSIDER and wake.prompt_tokens >= least
                   else None)
        report.screen_tokens += verdict.tokens if verdict else 0
        (keep if verdict is None or verdict.needed else out).append((draft, wake, verdict))
    if out:
        with step.writing() as s:
            for draft, _, verdict in out:
                if not drafts.screen_out(ctx, s, draft, verdict.reason, now, report):
                    report.abandoned += 1  # changed meanwhile: looked at again next cycle
    return [(d, w) for d, w, _ in keep]


stages.add(stages.Stage("screen", setup=setup, composed=screened))
