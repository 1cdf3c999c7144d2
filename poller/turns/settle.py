"""Pure handling of what an agent sends back: silence, text, and its limits."""

from __future__ import annotations

import re
from dataclasses import dataclass

from poller.text import MAX_POST_CHARS

SILENT_RE = re.compile(r"<silent\s*/>|<silent>(?P<why>.*?)</silent>", re.DOTALL | re.IGNORECASE)
FENCE_RE = re.compile(r"^```[\w-]*\s*\n?(?P<body>.*?)\n?```$", re.DOTALL)
TRUNCATED = "\n[reply truncated: it was {n:,} characters; the limit is {limit:,}]"


@dataclass(frozen=True)
class Reply:
    kind: str  # post | silent
    text: str  # the post's text, or the silence's reason (never shown as text)
    note: str = ""  # what was changed on the way in (truncation, bad bytes)


def _unwrap(text: str) -> str:
    """Strip whitespace, one code fence and bold/italic markers around a reply."""
    text = text.strip()
    m = FENCE_RE.match(text)
    if m:
        text = m.group("body").strip()
    for mark in ("**", "__", "*", "_"):
        if len(text) > 2 * len(mark) and text.startswith(mark) and text.endswith(mark):
            text = text[len(mark):-len(mark)].strip()
    return text


def classify(raw: str) -> Reply:
    """A reply that is only ``<silent/>`` or ``<silent>why</silent>`` (or empty) is silent."""
    core = _unwrap(raw)
    if not core:
        return Reply("silent", "")
    m = SILENT_RE.fullmatch(core)
    if m:
        return Reply("silent", (m.group("why") or "").strip()[:500])
    text = raw.strip()
    if len(text) > MAX_POST_CHARS:
        marker = TRUNCATED.format(n=len(text), limit=MAX_POST_CHARS)
        return Reply("post", text[: MAX_POST_CHARS - len(marker)] + marker, "truncated")
    return Reply("post", text)


def decode(data: bytes) -> tuple[str, str]:
    """Bytes from an agent to text; invalid UTF-8 is replaced and noted."""
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError as exc:
        return data.decode("utf-8", errors="replace"), f"invalid UTF-8 at byte {exc.start} replaced"
