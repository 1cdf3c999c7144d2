"""The tests' own clock: one fixed timeline, never the wall clock's date.

Commands read ``at(seconds)`` (``--now``, ``--at``); :class:`TimelineCli`
gives every command the global ``--now`` so that even the ones a test does
not time (``set``, ``agent add``, ``why``...) stamp and judge on the same
timeline whatever day the suite runs.
"""

from __future__ import annotations

import datetime as dt

from support.cli import Cli

T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


def at(seconds: float) -> str:
    """The instant *seconds* after T0, as the CLI reads it."""
    return (T0 + dt.timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def since_t0(iso: str) -> float:
    """Seconds after T0 of an instant the CLI printed."""
    return (dt.datetime.fromisoformat(iso.replace("Z", "+00:00")) - T0).total_seconds()


def after_settled(wake: dict, at_least: float) -> float:
    """A moment past both *at_least* and the end of *wake*'s turn.

    A turn that ran in its own runner settles on the runner's clock: the
    cycle's ``--now`` moved on by the wall time the turn took, which a slow
    machine stretches.  What settling makes due is due from then on.
    """
    return max(at_least, since_t0(wake["finished_at"]) + 1)


class TimelineCli(Cli):
    """A CLI whose every command runs at ``at(self.now)`` (T0 unless moved).

    A command's own ``--now`` or ``--at`` still wins over the global one.
    """

    def __init__(self, db_url: str | None = None, config: str | None = None, now: float = 0.0):
        super().__init__(db_url, config)
        self.now = now

    def __call__(self, *args: str, input: str | bytes | None = None, ok: bool = True):
        return super().__call__("--now", at(self.now), *args, input=input, ok=ok)


def two_moods(c: TimelineCli) -> TimelineCli:
    """The lobby and the attic, ada (trust full) to talk in them, no cooldown."""
    c("mood", "add", "lobby")
    c("mood", "add", "attic")
    c("person", "add", "ada", "--trust", "full")
    c("set", "cooldown", "0")
    return c
