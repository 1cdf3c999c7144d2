"""Posts as wake lines, and the escaping that keeps post text from forging any.

A wake shows posts as lines, ``[sender, time] text``.  This module owns that
line format, the :class:`WakePost` it is made from, and the escaping of
everything a person or agent wrote: no post can open or close
``<mood-wake>``, and every line printed from a post starts either with its
``[sender, time]`` prefix or with :data:`INDENT`, so none can pass for one of
the wake's own lines or for another person's post.

It imports nothing from the rest of the package: the catch-up, the
summarizers and the composer all build on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

INDENT = "  "  # continuation lines of a post: never confusable with our own lines

# "<" before a tag-ish "m" (optionally "/" and spaces between) is escaped, so no
# post can open or close <mood-wake>, in any case or spacing.
_TAG = re.compile(r"<(?=[\s/]*m)", re.IGNORECASE)
# Characters Python (and readers) treat as line breaks or that are invisible
# controls; \n and \t are kept, \r is normalised separately.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x85\u2028\u2029]")
_BLANKS = re.compile(r"\s+")


@dataclass(frozen=True, kw_only=True)
class WakePost:
    """One post as the composer sees it.  ``tokens`` is the ``encode_ordinary``
    count of ``text`` stored at ingest (-1 if unknown: it is then counted)."""

    id: int
    sender: str
    created_at: datetime  # aware, UTC
    text: str
    tokens: int = -1
    sender_is_agent: bool = False
    kind: str = "post"  # post | silent | system | handoff
    reply_to: int | None = None


# --- escaping -------------------------------------------------------------------


def neutralise(text: str) -> str:
    """*text* with anything that could open or close a wake tag escaped."""
    return _TAG.sub("&lt;", text) if "<" in text else text


def one_line(text: str, limit: int = 200) -> str:
    """A short field (a handle, a title, a value) as one safe line."""
    flat = _BLANKS.sub(" ", _CONTROL.sub(" ", str(text))).strip()
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return neutralise(flat)


def quote(text: str) -> str:
    """Post text as it appears in a wake: escaped, continuation lines indented.

    Every line we print from a post starts either with its ``[sender, time]``
    prefix or with the indent, so no post line can equal one of our own lines
    (a footer line, a heading) or pass for another person's post.
    """
    if "<" not in text and "\n" not in text and "\r" not in text and text.isprintable():
        return text  # the common case: nothing to do, and the stored count holds
    text = _CONTROL.sub(" ", text).replace("\r\n", "\n").replace("\r", "\n")
    return neutralise(text).replace("\n", "\n" + INDENT)


# --- lines ----------------------------------------------------------------------


def stamp(at: datetime, now: datetime) -> str:
    """``14:02`` today, ``2025-03-01 14:02`` on other days (both UTC)."""
    if at.date() == now.date():
        return at.strftime("%H:%M")
    return at.strftime("%Y-%m-%d %H:%M")


def prefix(post: WakePost, now: datetime, *, new: bool = False, mood: str | None = None) -> str:
    """``[sender, time] `` with tags for agents, non-post kinds and new posts."""
    who = one_line(post.sender, 80) or "?"
    if post.sender_is_agent:
        who += " (agent)"
    tags = [stamp(post.created_at, now)]
    if post.kind != "post":
        tags.append(one_line(post.kind, 20))
    if mood:
        tags.append("in " + one_line(mood, 80))
    if new:
        tags.append("new")
    return f"[{who}, {', '.join(tags)}] "


def clip_chars(text: str, limit: int) -> str:
    """*text* cut to *limit* characters, with a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    marker = f" […cut here; {len(text):,} characters in full]"
    return text[: max(0, limit - len(marker))] + marker


def line(post: WakePost, now: datetime, *, max_chars: int, mood: str | None = None) -> str:
    """One post as a wake line (no newline), clipped to *max_chars* with a marker."""
    head = prefix(post, now, mood=mood)
    return head + clip_chars(quote(post.text), max(0, max_chars - len(head)))
