"""Turns recorded straight into the store, on the days a test names (the pictures' data)."""

from __future__ import annotations

import datetime as dt
from typing import Optional


def turn_on(store, agent: str, mood: str, at: dt.datetime, tokens: int,
            usd: Optional[float]) -> int:
    """A finished turn of *agent* in *mood* at *at*: *tokens* sent, *usd* spent (None: not
    reported); its wake's id."""
    from poller.models import Turn, Wake

    with store.writing() as s:
        wake = Wake(agent_id=store.agent(agent).id, mood_id=store.mood(mood).id,
                    kind="mention", tools="full", status="replied", created_at=at,
                    started_at=at, finished_at=at, text="", prompt_tokens=tokens)
        s.add(wake)
        s.flush()
        s.add(Turn(wake_id=wake.id, cost_usd=usd))
        return wake.id
