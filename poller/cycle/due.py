"""When a listener is due: the kinds due on it now, and when it next needs looking at.

Both read the declared kinds (:func:`poller.kinds.listened`): each kind says
when it is due on a listener (``due_at``) and how that time meets a
cooldown (``schedule``): ``cooled`` times wait out the listener's cooldown,
a ``lifts`` kind due lifts that wait for all of them (a mention never waits),
and ``free`` times never wait for it (a cut-off's follow-up, a return).
"""

from __future__ import annotations

import datetime as dt
from typing import Optional

from poller import kinds
from poller.store import cycle


def due_kinds(l, owed: list[int], now: dt.datetime) -> list[str]:
    """The kinds due on this listener, in the order they are weighed."""
    out = []
    for spec in kinds.listened():
        at = spec.due_at(l, owed, now)
        if at is not None and at <= now:
            out.append(spec.name)
    return out


def next_due(l, owed, now: dt.datetime) -> Optional[dt.datetime]:
    """The earliest time this listener needs looking at again (*owed*: the posts it owes,
    or whether it owes any)."""
    cooled, free, lifted = [], [], False
    for spec in kinds.listened():
        at = spec.due_at(l, owed, now)
        if at is None:
            continue
        if spec.schedule == "free":
            free.append(at)
        else:
            cooled.append(at)
            lifted = lifted or spec.schedule == "lifts"
    soonest = min(cooled) if cooled else None
    # Unprompted looks wait out a cooldown; a mention never does.
    if soonest and not lifted and l.cooldown_until is not None and soonest < l.cooldown_until:
        soonest = l.cooldown_until
    for at in free:
        soonest = at if soonest is None else min(soonest, at)
    return soonest


# -- kinds that keep their due time in a listener's marks -------------------------------------


def marked(kind: str):
    """A ``due_at`` hook for a kind that keeps no column of its own: the time its organ
    set with :func:`poller.store.cycle.mark`."""
    def due_at(l, owed, now: dt.datetime) -> Optional[dt.datetime]:
        found = cycle.marks_of(l).get(kind)
        return found[0] if found else None
    return due_at


def unmark(kind: str):
    """An ``after_wake`` / ``after_skip`` hook that takes the kind's mark off the listener."""
    def done(ctx, s, l, _done, now: dt.datetime) -> None:
        l.marks = cycle.with_mark(l, kind, None)
    return done
