"""Closing turns: shared by the loop (recovery, emergency stop) and the runner.

Kept free of the composer and its imports so a runner starts quickly.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal

import sqlalchemy as sa

from poller import settings, state
from poller.store import Store
from poller.models import Listener, Participant, Post, Wake



def close_turn(s, counter, w: Wake, status: str, why: str, now: dt.datetime) -> None:
    """Close a turn that did not finish normally, with a system post saying so."""
    # A process group id means something only on the machine that ran the turn.
    if w.host == state.HOST and w.agent_pgid and state.group_alive(w.agent_pgid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(w.agent_pgid, signal.SIGKILL)
    w.status, w.finished_at, w.error = status, now, why
    handle = s.scalar(sa.select(Participant.handle).where(Participant.id == w.agent_id))
    body = f"@{handle}'s turn ended without a reply: {why}."
    s.add(Post(mood_id=w.mood_id, sender_id=w.agent_id, created_at=now, text=body, kind="system",
               reply_to=None, tokens=counter.count(body)))
    after_turn(s, w, now, silent_or_failed=True)


def after_turn(s, w: Wake, now: dt.datetime, silent_or_failed: bool) -> None:
    """Start the cooldown, back off quiet looks that found nothing, wake held work."""
    l = s.get(Listener, (w.agent_id, w.mood_id))
    if l is None:
        return
    # Only the rows that can apply here, not the whole settings table.
    values = settings.values(Store._resolve(s, w.mood_id, w.agent_id, now))
    l.cooldown_until = now + dt.timedelta(seconds=values["cooldown"])
    if w.kind == "quiet" and values["idle_after"]:
        if silent_or_failed:
            l.quiet_backoff = (l.quiet_backoff or 0) + 1
        l.quiet_due_at = now + dt.timedelta(seconds=values["idle_after"] * 2 ** (l.quiet_backoff or 0))
    # Held work here is looked at again on the next cycle.  (Mentions held in
    # other Moods for want of a free slot re-check every cycle by themselves,
    # so settling never has to lock other listeners' rows.)
    l.due_at = now
