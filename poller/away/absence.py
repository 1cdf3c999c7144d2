"""The cycle's part in away and back: bringing agents back, and offering idle nudges.

Each cycle (:meth:`poller.cycle.loop.Poller.tick`), after recovery and before the
scan, :func:`come_back` brings back every agent whose absence is up (its time
came, or a reply to a judgment called it back), in one flow that always
finishes:

1. **claim** the return (a short write): one poller of several takes it; a
   claim whose poller died, here or anywhere once it is stale, is taken over;
2. **its account** of the outing, from the configured OpenAI-compatible
   endpoint (the summarizer's), with no transaction open; with no endpoint,
   or on any failure, a stock line from the catalog's label;
3. **come back** in one transaction (:func:`poller.store.absences.finish_return`):
   the account as its own post in the Mood it left from, marked as a return;
   the absence's record; fresh eyes after a long absence; and, only if it
   missed pings, a ``return`` wake due there.

Absences already past due when ``run`` starts come back a short floor after
it (``poller.return_floor``), not inside its first cycle.  :func:`nudges`,
at most once a minute, makes an idle nudge due for agents whose last Mood
has gone quiet (:func:`poller.away.nudge_blocked`).
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Optional

from poller import away
from poller.away import catalog
from poller.wake import summarize
from poller.config import SummarizerConfig
from poller.cycle.context import Context
from poller.store import absences, facts

log = logging.getLogger("poller.absence")

CLAIM_STALE_MIN = dt.timedelta(seconds=60)  # a return claimed longer ago is taken over
NUDGE_EVERY = dt.timedelta(seconds=60)  # how often idle nudges are weighed


def account(config: SummarizerConfig, outing: away.Outing) -> tuple[str, str]:
    """Its account of the outing and where it came from (``llm`` or ``stock``)."""
    stock = away.stock_account(outing.label)
    if not (config.url and config.model):
        return stock, "stock"
    body = {"model": config.model, "temperature": 0.7,
            "max_tokens": away.EXPERIENCE_TOKENS,
            "messages": away.experience_messages(outing)}
    try:
        text = away.clean_account(summarize.complete(config, body))
    except summarize.SummaryError as exc:
        log.warning("%s's account of %s: %s; a stock line serves", outing.agent, outing.label,
                    exc, extra={"action": "account_failed", "agent": outing.agent})
        return stock, "stock"
    return (text, "llm") if text else (stock, "stock")


def come_back(ctx: Context, holder: str, now: dt.datetime,
              floor_until: Optional[dt.datetime] = None,
              booted_at: Optional[dt.datetime] = None) -> int:
    """Bring back every agent whose absence is up; how many came back.

    An absence that was due before *booted_at* waits until *floor_until*.
    """
    with ctx.store.reading() as s:
        due = absences.due(s, now)
    back = 0
    stale = now - max(CLAIM_STALE_MIN, dt.timedelta(seconds=3 * ctx.config.summarizer.timeout))
    for absence in due:
        if floor_until is not None and booted_at is not None and \
                absence.due_at <= booted_at and now < floor_until:
            continue
        with ctx.store.writing() as s:
            if not absences.claim_return(s, absence, holder, now, stale):
                continue  # another poller is bringing it back
        back += _finish(ctx, absence, holder, now)
    return back


def _finish(ctx: Context, absence: absences.Absence, holder: str, now: dt.datetime) -> int:
    agent = ctx.agents.get(absence.agent_id)
    handle = agent.handle if agent else str(absence.agent_id)
    out_for = max(0, round(((now - absence.departed_at).total_seconds()) / 60))
    text, source = account(ctx.config.summarizer, away.Outing(
        handle, absence.label, absence.seed, absence.note, out_for,
        absence.cut_short_by is not None))
    with ctx.store.writing() as s:
        done = absences.finish_return(s, ctx.counter, absence, holder,
                                      away.return_text(absence.label, text), now)
    if done is None:
        return 0
    log.info("%s is back from %s after %d minutes (%s%s; %d missed ping(s))", handle,
             away.phrase(absence.label), out_for, done.absence.status, ", fresh eyes" if done.fresh_eyes else "",
             done.missed, extra={"action": "absence_returned", "agent": handle,
                                 "activity_id": absence.id, "status": done.absence.status,
                                 "missed": done.missed, "account": source})
    return 1


def nudges(ctx: Context, now: dt.datetime) -> int:
    """Make an idle nudge due for each agent with a catalog that has earned one; how many."""
    due = []
    with ctx.store.reading() as s:
        out = absences.active(s, [a.id for a in ctx.agents.values() if catalog.path_of(a)])
        for agent in ctx.agents.values():
            cat = catalog.of(agent)
            if cat is None:
                continue
            mood_id, quiet_since, last_return, last_nudge = absences.idle_facts(s, agent.id)
            zone = ctx.settings.values(mood_id, agent.id, now)["timezone"] if mood_id else "UTC"
            why = away.nudge_blocked(away.Idle(
                now, zone, agent.id in out, quiet_since, last_return, last_nudge), cat)
            if not why:
                due.append((agent.id, mood_id))
    if not due:
        return 0
    with ctx.store.writing() as s:
        listeners = facts.listeners(s, set(due))
        for l in listeners.values():
            if l.nudge_due_at is None:
                l.nudge_due_at = now
                l.due_at = now if l.due_at is None else min(l.due_at, now)
        facts.save(s, listeners.values())
    return len(due)
