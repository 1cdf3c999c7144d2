"""Wakes composed from posts for the injection tests: a fixed clock, a real token counter,
and the tags a wake's text holds."""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime, timedelta, timezone

from poller import tokens
from poller.config import WakeConfig
from poller.wake import compose, lines, summarize


NOW = datetime(2026, 3, 2, 12, 0, tzinfo=timezone.utc)


COUNTER = tokens.counter()


CONFIG = WakeConfig(etiquette_url="https://wiki.test/E", todo_pattern="https://wiki.test/{slug}/todo")


# Characters a reader can take for the tag's "<" or ">": brackets, quotation marks,
# math and other symbols.  Judged by Unicode category, so this list of kinds is the
# test's own reading, not the code's.
BRACKET_CATEGORIES = ("Ps", "Pe", "Pi", "Pf", "Sm", "Sk", "So")
BLANK_CATEGORIES = ("Zs", "Zl", "Zp", "Cc", "Cf", "Mn", "Me")


_SHOWN = re.compile(r"⟨U\+[0-9A-F]{4,6}⟩")


def folded(text: str) -> str:
    """*text* as a reader takes it: NFKC, case and lookalikes folded, invisibles dropped."""
    return "".join(lines.fold(c) for c in text)


def reader_view(text: str) -> str:
    """*text* folded, blank-like characters dropped, and every bracket-like one as "<"
    (closing brackets and quotation marks as ">").

    A ``⟨U+200B⟩`` shown for an invisible character counts as the blank it stands for.
    """
    out = []
    for c in _SHOWN.sub(" ", text):
        if c.isspace() or unicodedata.category(c) in BLANK_CATEGORIES or c == "\u2800":
            continue
        f = lines.fold(c)
        if f.strip() == "":
            continue
        cats = {unicodedata.category(x) for x in c + f}
        bracket = not f.isalnum() and bool(cats & set(BRACKET_CATEGORIES))
        # A closing bracket or quotation mark ("]", "»") closes; it opens no tag after it
        # (the wake's own "[ada, 10:21] " before a post's text is no "<").
        closing = bracket and cats <= {"Pe", "Pf"}
        out.append(">" if closing else "<" if bracket else f)
    return "".join(out)


def tags(text: str) -> tuple[int, int]:
    """How many opening and closing wake tags a reader sees in *text*."""
    f = reader_view(text)
    return (len(re.findall(r"<mood-wake", f)), len(re.findall(r"</mood-wake", f)))


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
