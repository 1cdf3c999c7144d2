"""Posts for the catch-up budget: a fixed clock and a real token counter."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from poller import tokens
from poller.wake.lines import WakePost


NOW = datetime(2025, 5, 1, 12, 0, tzinfo=timezone.utc)


COUNTER = tokens.counter()


def post(i: int, text: str, *, sender: str = "alice", agent: bool = False, stored: bool = True) -> WakePost:
    return WakePost(id=i, sender=sender, sender_is_agent=agent, text=text,
                    created_at=NOW - timedelta(minutes=10_000 - i),
                    tokens=COUNTER.count(text) if stored else -1)
