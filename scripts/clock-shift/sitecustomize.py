"""Moves this Python process's wall clock by CLOCK_SHIFT_SECONDS (time-machine).

Used by ``scripts/test-shifted-clock.sh``: every Python process of a test run
(pytest, the pollers and runners it starts) imports this at start-up and
shifts ``time.time()`` and ``datetime.now()`` by the same offset, so they
share one timeline that runs on, say, two years ahead.  Monotonic clocks are
left alone, so timeouts and waits behave as usual.
"""

import os

_shift = os.environ.get("CLOCK_SHIFT_SECONDS")
if _shift:
    import time

    import time_machine

    _traveller = time_machine.travel(time.time() + float(_shift), tick=True)
    _traveller.start()
