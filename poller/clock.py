"""The one source of "now".

Every command and every part of the loop asks a :class:`Clock` for the time
instead of reading the wall clock itself, so a test (or an operator replaying
a day with ``--now``) sets time in one place.  A clock is either *fixed* at
one instant or the wall clock *shifted* by an offset; the poller hands its
offset to the runners it starts (``MOOD_POLLER_CLOCK_OFFSET``) so a turn
settles on the same timeline the cycle that woke it ran on.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Optional

CLOCK_OFFSET_ENV = "MOOD_POLLER_CLOCK_OFFSET"
NOW_ENV = "MOOD_POLLER_NOW"
REST = dt.timedelta(hours=12)  # the longest that calm ever slows a wait to


def slowed(base_s: float, doublings: int) -> dt.timedelta:
    """*base_s* seconds doubled *doublings* times, up to :data:`REST`: how calm slows a wait
    (:mod:`poller.law` for considers, settling for quiet looks that found nothing)."""
    if doublings <= 0:
        return dt.timedelta(seconds=base_s)
    return min(dt.timedelta(seconds=base_s * 2 ** min(doublings, 32)), REST)


def wall() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class Clock:
    """Call it for the current time: fixed at one instant, or the wall clock plus an offset."""

    def __init__(self, fixed: Optional[dt.datetime] = None,
                 offset: dt.timedelta = dt.timedelta(0)) -> None:
        self.fixed = fixed
        self.offset = offset

    def __call__(self) -> dt.datetime:
        if self.fixed is not None:
            return self.fixed
        return wall() + self.offset

    def __repr__(self) -> str:
        return f"Clock(fixed={self.fixed!r})" if self.fixed else f"Clock(offset={self.offset!r})"

    @classmethod
    def at(cls, instant: dt.datetime) -> "Clock":
        return cls(fixed=instant)

    @classmethod
    def starting_at(cls, instant: dt.datetime) -> "Clock":
        """A running clock that reads *instant* now and moves on with the wall clock."""
        return cls(offset=instant - wall())

    @classmethod
    def from_env(cls, environ=None) -> "Clock":
        """The runner's clock: the wall clock shifted by the offset its poller passed on."""
        environ = os.environ if environ is None else environ
        raw = environ.get(CLOCK_OFFSET_ENV, "") or "0"
        try:
            seconds = float(raw)
        except ValueError:
            seconds = 0.0
        if seconds != seconds or abs(seconds) > 1e10:  # nan or absurd: ignore it
            seconds = 0.0
        return cls(offset=dt.timedelta(seconds=seconds))


SYSTEM = Clock()
