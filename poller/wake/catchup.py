"""The catch-up: which of a Mood's recent posts an agent reads word for word.

A wake shows posts as lines, ``[sender, time] text`` (the format and its
escaping live in :mod:`poller.wake.lines`).  This module owns the arithmetic of
fitting those lines into the Mood's ``catch_up_tokens``: newest first, whole
posts, counted exactly.

Counting exactly without re-encoding ~10,000 tokens on every wake relies on
two facts about the cl100k pre-tokenizer (the regex that splits text into
chunks before BPE; no token ever spans two chunks):

* a newline followed by a non-space character always ends a chunk, so the
  catch-up is the sum of its lines when each line ends with ``\\n`` and the
  next starts with ``[``;
* an ASCII letter followed by an ASCII non-letter, or an ASCII digit followed
  by an ASCII non-digit, always ends a chunk too ("sync points").

So a line costs the post's stored token count, corrected only at its two ends:
re-count the text before the first sync point together with the prefix, and
the text after the last one together with the newline.  Lines whose text had
to change (escaped, indented, clipped) are counted in full.  Other encodings
take the full count every time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Sequence

from poller.wake.lines import WakePost, prefix, quote

if TYPE_CHECKING:
    from poller.tokens import Counter

FILL_TARGET = 0.95  # below this share of the budget, the boundary post is clipped to fill
MIN_PARTIAL_TOKENS = 8  # a clipped boundary post shorter than this is not worth showing

# Sync points, ASCII only so they hold in every Unicode version (see above).
_SYNC = re.compile(r"[A-Za-z](?=[\x00-\x40\x5b-\x60\x7b-\x7f])|[0-9](?=[\x00-\x2f\x3a-\x7f])|\n(?=[!-~])")
# The same pairs, read right to left (the match is the character after the point).
_SYNC_REVERSED = re.compile(r"[\x00-\x40\x5b-\x60\x7b-\x7f](?=[A-Za-z])|[\x00-\x2f\x3a-\x7f](?=[0-9])|[!-~](?=\n)")
# The cl100k split patterns (tiktoken's current and older spelling).
_CL100K = {
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
}


# --- exact costs ----------------------------------------------------------------


class Coster:
    """Exact token cost of a catch-up line, mostly from counts stored at ingest.

    Short pieces (a line's head without its last space, its first and last
    words) repeat from line to line and from wake to wake: their counts are
    remembered per encoding for the life of the process (a count is a pure
    function of the text, so a remembered one is never stale).
    """

    MEMO_CHARS = 40  # pieces up to this long are remembered
    MEMO_ENTRIES = 50_000  # the memo starts over past this (under 10 MB)
    _memos: dict[str, dict[str, int]] = {}

    def __init__(self, counter: Counter):
        from poller import tokens

        self.counter = counter
        self.fast = tokens.encoding(counter.name)._pat_str in _CL100K
        self._memo = self._memos.setdefault(counter.name, {})

    def count(self, text: str) -> int:
        if len(text) > self.MEMO_CHARS:
            return self.counter.count(text)
        return _remembered(self._memo, text, self.MEMO_ENTRIES, self.counter.count, text)

    def line(self, head: str, text: str, display: str, stored: int) -> int:
        """Tokens of ``head + display + "\\n"``; *stored* counts *text* (-1: unknown)."""
        if not self.fast or stored < 0 or display is not text and display != text:
            return self.counter.count(head + display + "\n")
        first = _SYNC.search(text)
        if first is None:
            return self.counter.count(head + text + "\n")
        j, r = first.end(), _last_sync(text)
        count = self.count
        middle = stored - count(text[:j]) - count(text[r:])
        # head ends in "] ": punctuation before a space ends a chunk too, so
        # the bracket part and " " + the first word are counted apart.
        return middle + count(head[:-1]) + count(" " + text[:j]) + count(text[r:] + "\n")

    def joined(self, left: str, left_tokens: int, right: str) -> int:
        """Tokens of ``left + right`` when *left* counts *left_tokens*: only the
        join is counted afresh, and *right* (a frame's tail, the same wake after
        wake) is remembered whole."""
        first = _SYNC.search(right) if self.fast else None
        if first is None or _SYNC.search(left) is None:
            return self.counter.count(left + right)
        r, k = _last_sync(left), first.end()
        count = self.count
        return (left_tokens - count(left[r:]) + count(left[r:] + right[:k])
                + self.frame(right) - count(right[:k]))

    FRAME_ENTRIES = 512
    _frames: dict[tuple[str, str], int] = {}

    def frame(self, text: str) -> int:
        """The count of a long text that recurs (a frame's tail), remembered."""
        return _remembered(self._frames, (self.counter.name, text), self.FRAME_ENTRIES,
                           self.counter.count, text)


def _remembered(memo: dict, key, limit: int, count, text: str) -> int:
    """``count(text)`` from *memo* under *key*; the memo starts over past *limit* entries."""
    found = memo.get(key)
    if found is None:
        if len(memo) >= limit:
            memo.clear()
        found = memo[key] = count(text)
    return found


def _last_sync(text: str) -> int:
    """The last sync point of *text* (one exists), found on the reversed tail."""
    for size in (64, 1024, len(text)):
        found = _SYNC_REVERSED.search(text[-size:][::-1])
        if found is not None:
            return len(text) - 1 - found.start()
    raise AssertionError("unreachable: the caller found a sync point")


# --- the catch-up ---------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """One rendered catch-up line (ends with a newline) and its exact cost."""

    post_id: int
    text: str
    tokens: int


@dataclass(frozen=True)
class CatchUp:
    """The word-for-word part of a wake, oldest first, and what did not fit."""

    units: tuple[Unit, ...] = ()
    budget: int = 0
    older: tuple = ()  # posts that did not fit, oldest first (for the summary)
    clipped_to_fit: bool = False  # the oldest shown post was cut to fill the budget
    tokens: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tokens", sum(u.tokens for u in self.units))

    @property
    def text(self) -> str:
        return "".join(u.text for u in self.units)

    @property
    def shown(self) -> int:
        return len(self.units)

    def drop_oldest(self, max_chars: int, history: Sequence[WakePost]) -> CatchUp:
        """The same catch-up without its oldest lines, to fit *max_chars*."""
        units = list(self.units)
        size = sum(len(u.text) for u in units)
        while units and size > max_chars:
            size -= len(units.pop(0).text)
        keep = {u.post_id for u in units}
        older = tuple(p for p in history if p.id not in keep)
        return CatchUp(tuple(units), self.budget, older, self.clipped_to_fit and bool(units))


def build(
    history: Sequence[WakePost],
    *,
    budget: int,
    now: datetime,
    counter: Counter,
    post_cap: int,
    new_after_id: int | None = None,
) -> CatchUp:
    """Fill *budget* tokens newest-first with *history* (given oldest first)."""
    coster = Coster(counter)
    memo = _LINES.setdefault(counter.name, _LineMemo())
    picked: list[Unit] = []
    used, cut, clipped = 0, 0, False  # history[:cut] did not fit
    today = now.date()
    for index in range(len(history) - 1, -1, -1):
        post = history[index]
        new = new_after_id is not None and post.id > new_after_id
        key = _LineMemo.key(post, new, today, post_cap)
        unit = memo.get(key)
        if unit is None:
            unit = memo.put(key, _whole(post, prefix(post, now, new=new), coster, post_cap))
        if used + unit.tokens <= budget:
            picked.append(unit)
            used += unit.tokens
            continue
        cut = index + 1
        # Stopping here could waste most of the budget on one long post; show
        # its beginning instead, so the agent reads as much as it was promised.
        if used < FILL_TARGET * budget:
            part = _clipped(post, prefix(post, now, new=new), coster, limit=budget - used)
            if part is not None:
                picked.append(part)
                cut, clipped = index, True
        break
    picked.reverse()
    return CatchUp(tuple(picked), budget, tuple(history[:cut]), clipped)


class _LineMemo:
    """Whole catch-up lines already costed, per encoding, for the life of the process.

    A Mood's recent posts go into wake after wake, and a line is a pure
    function of the post, whether it is tagged new, whether it is from today
    (which decides how its time is shown) and the per-post cap: so its text
    and exact cost are kept, keyed on all of those (the post's text included:
    two stores may reuse an id).  Bounded by characters kept; past the bound
    it starts over.
    """

    MAX_CHARS = 2_000_000  # characters of post text and lines kept (a few MB)

    def __init__(self) -> None:
        self.units: dict[tuple, Unit] = {}
        self.chars = 0

    @staticmethod
    def key(post: WakePost, new: bool, today, post_cap: int) -> tuple:
        at = post.created_at
        return (post.id, post.text, post.tokens, post.sender, post.sender_is_agent, post.kind,
                at, at.utcoffset(), at.date() == today, new, post_cap)

    def get(self, key: tuple) -> Unit | None:
        return self.units.get(key)

    def put(self, key: tuple, unit: Unit) -> Unit:
        size = len(unit.text) + len(key[1])
        if self.chars + size > self.MAX_CHARS:
            self.units.clear()
            self.chars = 0
        self.units[key] = unit
        self.chars += size
        return unit


_LINES: dict[str, _LineMemo] = {}


def _whole(post: WakePost, head: str, coster: Coster, post_cap: int) -> Unit:
    """The post's line, clipped with a marker past the per-post cap."""
    display = quote(post.text)
    stored = post.tokens if post.tokens >= 0 else coster.counter.count(post.text)
    if stored > post_cap:
        return _clipped(post, head, coster, body_max=post_cap)
    return Unit(post.id, head + display + "\n", coster.line(head, post.text, display, stored))


def _clipped(post: WakePost, head: str, coster: Coster, *,
             limit: int | None = None, body_max: int | None = None) -> Unit | None:
    """The post's line cut with a marker: its body to *body_max* tokens, or the
    whole line to *limit* tokens (None when not even a stub fits)."""
    count = coster.counter.count
    display = quote(post.text)
    full = post.tokens if post.tokens >= 0 else count(post.text)
    marker = f" […cut here; {full:,} tokens in full]"
    if body_max is not None:
        text = head + coster.counter.clip(display, body_max) + marker + "\n"
        return Unit(post.id, text, count(text))
    room = limit - count(head + marker + "\n")
    while room >= MIN_PARTIAL_TOKENS:
        text = head + coster.counter.clip(display, room) + marker + "\n"
        tokens = count(text)
        if tokens <= limit:
            return Unit(post.id, text, tokens)
        room -= tokens - limit  # tokens merged differently at the joins; try smaller
    return None
