"""Waiting for a condition in tests, never for a fixed time.

A test that starts something in the background (a runner, a poller, an agent
process) waits for the state it expects with :func:`wait_for`.  The deadline
is a hang guard only: it is generous (two minutes) so that a slow, shared
machine never fails a test that would pass given time, and no test asserts
how long anything took.
"""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")

HANG_GUARD_S = 120.0  # how long a test waits before it calls something stuck


def wait_for(predicate: Callable[[], T], timeout: float = HANG_GUARD_S,
             what: str = "the condition", interval: float = 0.05) -> T:
    """Call *predicate* until it returns something truthy, and return that.

    Raises AssertionError naming *what* if it is still falsy after *timeout*
    seconds.  The predicate is always called once more at the deadline, so a
    condition that became true while the machine was busy is never missed.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"still waiting for {what} after {timeout:g} s")
        time.sleep(interval)
