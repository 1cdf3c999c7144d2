"""What a wake of each kind would say right now, without waking anyone.

``preview`` runs the poller's own composition inside a transaction that is
rolled back, so what it prints is exactly what the loop would send: same
reads, same templates, same dials.  When nothing of that kind is pending, it
stands in the most recent matching material (the newest person's post for a
mention or consider, the newest sign-in for an arrival).
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from poller import errors, state
from poller.loop import Planned, Poller
from poller.models import Listener, Participant, Post, SignIn


def preview(poller: Poller, slug: str, handle: str, kind: str, now: dt.datetime,
            full: bool = False) -> Planned:
    store = poller.store
    mood_info = store.mood(slug)
    agent_info = store.agent(handle)
    with store.scratch() as s:
        poller.settings.refresh(s)
        participant = s.get(Participant, agent_info.id)
        mood = state.mood_row(s, mood_info.id)
        l = s.get(Listener, (agent_info.id, mood_info.id)) or Listener(
            agent_id=agent_info.id, mood_id=mood_info.id, last_person_id=0, looked_id=0,
            consider_from_id=0, quiet_backoff=0, arrival_signin_id=0)
        owed = state.owed_posts(s, agent_info.id, mood_info.id)
        newest_person = s.scalar(
            sa.select(Post.id).join(Participant, Participant.id == Post.sender_id)
            .where(Post.mood_id == mood_info.id, Participant.kind == "person", Post.kind == "post")
            .order_by(Post.id.desc()).limit(1))
        if kind == "mention" and not owed:
            if newest_person is None:
                raise errors.UserError(f"nothing to preview: no person has posted in {slug!r} yet")
            owed = [newest_person]
        if kind == "consider" and not l.consider_from_id:
            if newest_person is None:
                raise errors.UserError(f"nothing to preview: no person has posted in {slug!r} yet")
            l.consider_from_id = newest_person
        if kind == "arrival" and not l.arrival_signin_id:
            latest = s.scalar(sa.select(SignIn.id).where(SignIn.mood_id == mood_info.id)
                              .order_by(SignIn.id.desc()).limit(1))
            if latest is None:
                raise errors.UserError(f"nothing to preview: nobody has signed in to {slug!r} yet")
            l.arrival_signin_id = latest
        values = poller.settings.values(mood_info.id, agent_info.id, now)
        return poller._wake(s, kind, l, participant, mood, values, owed, now,
                            force_tools="full" if full else None)
