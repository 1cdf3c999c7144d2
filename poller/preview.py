"""What a wake of each kind would say right now, without waking anyone.

``preview`` gathers and composes exactly as the loop does (same reads, same
templates, same dials) inside a transaction that is rolled back, and records
nothing.  When nothing of that kind is pending, it stands in the most recent
matching material (the newest person's post for a mention or consider, the
newest sign-in for an arrival).
"""

from __future__ import annotations

import datetime as dt

from poller.cycle import drafts
from poller import errors
from poller.cycle.context import Planned
from poller.kinds import WakeKind
from poller.cycle.loop import Poller
from poller.store import cycle, facts


def preview(poller: Poller, slug: str, handle: str, kind: str, now: dt.datetime,
            full: bool = False) -> Planned:
    store, ctx = poller.store, poller.ctx
    mood_info = store.mood(slug)
    agent_info = store.agent(handle)
    ctx.dials = poller.dials(now)
    with store.scratch() as s:
        ctx.settings.refresh(s)
        ctx.agents = cycle.agents(s)
        pair = (agent_info.id, mood_info.id)
        l = facts.listeners(s, {pair})[pair]  # changed below for the preview only, never saved
        owed = cycle.owed_posts(s, agent_info.id, mood_info.id)
        newest_person = cycle.newest_person_post(s, mood_info.id)
        if kind in (WakeKind.MENTION, WakeKind.CONSIDER) and newest_person == 0 \
                and not (kind == WakeKind.MENTION and owed):
            raise errors.UserError(f"nothing to preview: no person has posted in {slug!r} yet")
        if kind == WakeKind.MENTION and not owed:
            owed = [newest_person]
        if kind == WakeKind.CONSIDER and not l.consider_from_id:
            l.consider_from_id = newest_person
        if kind == WakeKind.ARRIVAL and not l.arrival_signin_id:
            l.arrival_signin_id = cycle.newest_signin(s, mood_info.id)
            if not l.arrival_signin_id:
                raise errors.UserError(f"nothing to preview: nobody has signed in to {slug!r} yet")
        values = ctx.settings.values(mood_info.id, agent_info.id, now)
        draft = drafts.gather(ctx, s, kind, l, agent_info, mood_info, values, owed, now,
                              force_tools="full" if full else None)
    wake = drafts.compose_text(ctx, draft)
    return Planned(None, agent_info.handle, mood_info.slug, kind, draft.tools, wake.text,
                   draft.answers)
