"""What organs add to every cycle: a check as a poller starts, steps around the
listeners' loop, and a last look at the wakes composed before they are recorded.

The cycle (:mod:`poller.cycle.loop`) runs them in their order and names none:
away and back brings agents back before the listeners are weighed, the
schedules weigh what a clock says then and send their mail after, the screen
looks at composed considers.  Each is registered from its organ's ``organ``
module with :func:`add`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional


@dataclass(frozen=True)
class Stage:
    """One organ's part in the cycle; each hook optional.

    *setup* ``(ctx)``: as a poller is made (e.g. a client for a model).  *check*
    ``(ctx, agents)``: once, before the first cycle; raise
    :class:`poller.errors.ConfigError` to stop the poller.  *before* and *after*
    ``(ctx, step, now, report)``: after the scan and before the listeners are
    weighed, and after them.  *composed* ``(ctx, step, composed, now, report)``:
    the composed ``(draft, wake)`` pairs to record, of those given.
    *live_only*: its *before* and *after* run only when turns are started (not
    in a dry run such as ``preview``).
    """

    name: str
    order: int = 50
    setup: Optional[Callable] = None
    check: Optional[Callable] = None
    before: Optional[Callable] = None
    after: Optional[Callable] = None
    composed: Optional[Callable] = None
    live_only: bool = False


_STAGES: dict[str, Stage] = {}


def add(stage: Stage) -> Stage:
    _STAGES[stage.name] = stage
    return stage


def ordered() -> list[Stage]:
    return sorted(_STAGES.values(), key=lambda st: (st.order, st.name))
