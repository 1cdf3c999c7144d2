"""The schedules' kinds of wake: an alarm, a missed check-in, the contact stage.

They keep schedules of their own (:mod:`poller.schedules.scheduled` finds
them due), never the listeners' loop; asked for at a time, they are kept
whatever the Mood's listening, pass through an absence, and are never
cooled down.  Declared with :func:`poller.kinds.register` (see
:mod:`poller.cycle.organs`).
"""

from __future__ import annotations

from poller import kinds
from poller.kinds import KindSpec, WakeKind

for order, name in ((90, WakeKind.ALARM), (91, WakeKind.CHECKIN_MISSED),
                    (92, WakeKind.CHECKIN_CONTACT)):
    kinds.register(KindSpec(name, order, paced=False, timed=True, while_away="pass",
                            listened=False))
