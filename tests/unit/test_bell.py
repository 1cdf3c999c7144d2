"""A commit wakes the loop at once: in process, across processes on SQLite and PostgreSQL.

Here, the pure part (no database, no process); the rest sits under the same name
in the other layers.
"""

from __future__ import annotations

import threading
from support.bell import bell  # noqa: F401  (fixtures)



def test_a_rung_bell_ends_the_next_sleep_once(bell):
    bell.ring()
    assert bell.sleep(60) is True  # would sleep a minute if the ring were lost
    assert bell.sleep(0) is False  # one ring, one early wake-up


def test_a_sleep_ends_when_another_thread_rings(bell):
    threading.Timer(0.05, bell.ring).start()
    assert bell.sleep(120) is True


