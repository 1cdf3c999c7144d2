"""Wakes composed from posts for the injection tests: a fixed clock, a real token counter,
and the tags a wake's text holds."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from poller import tokens
from poller.config import WakeConfig
from poller.wake import compose, lines, summarize


NOW = datetime(2026, 3, 2, 12, 0, tzinfo=timezone.utc)


COUNTER = tokens.counter()


CONFIG = WakeConfig(etiquette_url="https://wiki.test/E", todo_pattern="https://wiki.test/{slug}/todo")


def folded(text: str) -> str:
    """*text* as a reader takes it: NFKC, case and lookalikes folded, invisibles dropped."""
    return "".join(lines.fold(c) for c in text)


def tags(text: str) -> tuple[int, int]:
    f = folded(text)
    return (len(re.findall(r"<\s*mood-wake", f)), len(re.findall(r"<\s*/\s*mood-wake", f)))


def post(i: int, text: str, sender: str = "ada") -> compose.WakePost:
    return compose.WakePost(id=i, sender=sender, created_at=NOW - timedelta(minutes=100 - i),
                            text=text)


def wake(kind: str = "mention", **kw) -> str:
    base = dict(kind=kind, mood="lobby", mood_title="The lobby", agent="helper", now=NOW,
                tools="full", woke=[] if kind == "quiet" else [post(90, "@helper hi")],
                history=[post(i, f"message {i}") for i in range(1, 5)],
                arrival=compose.Arrival("ada", "Ada", "full") if kind == "arrival" else None)
    base.update(kw)
    return compose.compose(compose.WakeRequest(**base), config=CONFIG, counter=COUNTER,
                           summarizer=summarize.ExtractiveSummarizer(COUNTER)).text
