"""Whether an agent is at the screen: the hooks an organ that takes agents away fills.

The core weighs, gathers and records every wake the same way whether or not
an agent can be away; an organ that sends agents out (away and back,
:mod:`poller.away.organ`) registers one :class:`Presence`, and the cycle asks it
what it knows.  With none registered, every agent is always at the screen.
The absences themselves are read by the store with the batch's facts
(``facts.Batch.away``); to the core they are opaque values handed back here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


def _nothing(*_args, **_kw):
    return None


@dataclass(frozen=True)
class Presence:
    """What the cycle asks about an agent that may be out.

    *fact* ``(s, absence, listener, kind, owed)``: the law's ``away`` fact for one
    candidate wake (None: at the screen).  *judges* ``(fact)``: the handles whose
    pings make a wake a judgment.  *noted* ``(s, absence, listener, agent, owed,
    values, decision, notes, now)``: after a decision not to wake.  *parts*
    ``(agent, absence, kind, judges, now)``: the wake's fields it fills.  *window*
    ``(s, agent_id, mood_id)``: where the agent's catch-up may start (None: anywhere).
    *recorded* ``(s, draft, wake_id, now)``: written with a recorded wake.
    """

    fact: Callable = _nothing
    judges: Callable = lambda fact: ()
    noted: Callable = _nothing
    parts: Callable = lambda *_: {}
    window: Callable = _nothing
    recorded: Callable = _nothing


_PRESENCE = [Presence()]


def register(presence: Presence) -> Presence:
    _PRESENCE[0] = presence
    return presence


def current() -> Presence:
    return _PRESENCE[0]
