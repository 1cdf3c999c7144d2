"""Posts as wake lines, and the escaping that keeps post text from forging any.

A wake shows posts as lines, ``[sender, time] text``.  This module owns that
line format, made from :class:`WakePost`, and the escaping of
everything a person or agent wrote: no post can open or close
``<mood-wake>``, nor write a lookalike of it (fullwidth or Cyrillic letters,
invisible characters inside); invisible and bidirectional control characters
are shown as ``⟨U+200B⟩``; and every line printed from a post starts either
with its ``[sender, time]`` prefix or with :data:`INDENT`, so none can pass
for one of the wake's own lines or for another person's post.

It imports nothing from the rest of the package but the :class:`WakePost`
the store hands out (:mod:`poller.values`): the catch-up, the summarizers and
the composer all build on it.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from datetime import datetime

from poller.values import WakePost

INDENT = "  "  # continuation lines of a post: never confusable with our own lines

# "<" before a tag-ish "m" (optionally "/" and spaces between) is escaped, so no
# post can open or close <mood-wake>, in any case or spacing.
_TAG = re.compile(r"<(?=[\s/]*m)", re.IGNORECASE)

# Lookalikes of the tag are escaped the same way: a character that reads as
# "<" (fullwidth, small, angle brackets), then spaces, slashes or invisible
# characters, then one that reads as "m" once NFKC, case and the confusables
# below are folded.  The "<" lookalike itself is what gets escaped.
_LT_LIKE = "<\ufe64\uff1c\u2039\u276e\u02c2\u1438\u16b2\u2329\u3008\u27e8\u29fc"
_LT_CANDIDATE = re.compile(f"[{_LT_LIKE}]")
# Cyrillic, Greek and other letters that pass for the letters of "mood-wake",
# and dashes and slashes that pass for "-" and "/".
CONFUSABLES = {
    **dict.fromkeys("\u043c\u03bc\u1d0d\u217f", "m"),
    **dict.fromkeys("\u043e\u03bf\u0585\u1d0f\u03c3\u2c9f", "o"),
    **dict.fromkeys("\u0501\u217e\u13e7", "d"),
    **dict.fromkeys("\u051d\u0461\u03c9\u1d21\u0561", "w"),
    **dict.fromkeys("\u0430\u03b1\u0251", "a"),
    **dict.fromkeys("\u043a\u03ba\u0138\u1d0b", "k"),
    **dict.fromkeys("\u0435\u03b5\u04bd\u0454", "e"),
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u02d7\u2043\u1806\ufe58", "-"),
    **dict.fromkeys("\u2044\u2215\u29f8\u2571\u30ce\u27cb", "/"),
    **dict.fromkeys(_LT_LIKE, "<"),
}
# Invisible characters a reader's eye skips: they are dropped when looking for a
# tag, and shown as ⟨U+XXXX⟩ in people's text (see visible()).  Zero-width
# (non-)joiners and variation selectors are left alone: real scripts and emoji
# need them.
_INVISIBLE = re.compile(
    "[\x80-\x84\x86-\x9f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e"
    "\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0"
    "\ufff9-\ufffb\U0001d173-\U0001d17a\U000e0000-\U000e007f]")
# What makes quote() change a printable text.
_NEEDS_WORK = re.compile("[\n\r" + _LT_LIKE + _INVISIBLE.pattern[1:])
# A subdivision flag (England, Scotland, Wales: U+1F3F4 and a few tag letters)
# is an emoji, not hidden text; it is kept.
_FLAG = re.compile("\U0001f3f4[\U000e0020-\U000e007e]{1,7}\U000e007f")
# Characters Python (and readers) treat as line breaks or that are invisible
# controls; \n and \t are kept, \r is normalised separately.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x85\u2028\u2029]")
_BLANKS = re.compile(r"\s+")

# The tag as a reader takes it is its name, "mood-wake", after a slash or after
# something that looks like a bracket; which brackets, quotation marks or symbols
# stand around it is open-ended, so they are judged by Unicode category, never by
# a list.  Blank-looking characters anywhere in the shape are skipped: the braille
# blank and the Hangul fillers show nothing but are not whitespace to Python.
_BRACKET_CATEGORIES = frozenset(("Ps", "Pe", "Pi", "Pf", "Sm", "Sk", "So"))
_BLANK_CATEGORIES = frozenset(("Zs", "Zl", "Zp", "Cc", "Cf", "Cn", "Co", "Cs", "Mn", "Me"))
_BLANK_GLYPHS = frozenset("\u2800\u3164\u115f\u1160\uffa0\u17b4\u17b5")
_SHAPE_BLANK, _SHAPE_BRACKET = " ", "\x01"  # in a skeleton (see _skeleton_piece)
_SHOWN = re.compile(r"⟨U\+[0-9A-F]{4,6}⟩")
_NAME = re.compile(r"(/[ /]*)?m *o *o *d[ _-]*w *a *k *e")


# --- escaping -------------------------------------------------------------------


def neutralise(text: str) -> str:
    """*text* with anything that could open or close a wake tag escaped.

    ``<mood-wake>`` and ``</mood-wake>`` in any case or spacing, and their
    lookalikes (fullwidth or Cyrillic letters, invisible or blank characters
    inside, any bracket, quotation mark or symbol for the "<" and ">"): the
    character passing for "<" becomes ``&lt;``, the one passing for ">" after the
    name ``&gt;``.
    """
    text = _unbracket_names(text)
    if "<" in text:
        text = _TAG.sub("&lt;", text)
    if text.isascii() or not _LT_CANDIDATE.search(text):
        return text
    return _LT_CANDIDATE.sub(lambda m: "&lt;" if _opens_tag(text, m.start()) else m.group(), text)


def fold(c: str) -> str:
    """The character *c* reads as, for matching the tag: NFKC, lower case and
    :data:`CONFUSABLES`; "" for invisible characters and combining marks."""
    if c in CONFUSABLES:
        return CONFUSABLES[c]
    if _INVISIBLE.match(c) or c in "\u200c\u200d" or unicodedata.category(c) in ("Cf", "Mn", "Me"):
        return ""
    folded = unicodedata.normalize("NFKC", c).lower()
    folded = "".join(ch for ch in unicodedata.normalize("NFD", folded)
                     if unicodedata.category(ch) not in ("Mn", "Me"))
    return "".join(CONFUSABLES.get(ch, ch) for ch in folded)


def _unbracket_names(text: str) -> str:
    """*text* with the brackets around each tag-shaped "mood-wake" escaped."""
    escaped = _tag_brackets(text)
    if not escaped:
        return text
    return "".join(escaped.get(i, c) for i, c in enumerate(text))


def _tag_brackets(text: str) -> dict[int, str]:
    """Where the brackets around a tag-shaped "mood-wake" stand in *text*, and
    what each becomes.

    A shape is the name with a bracket-like character before it, or a slash
    before it and a bracket-like character on either side (blank-looking
    characters between are skipped).  The one before becomes ``&lt;``, the one
    after ``&gt;``: no bracket is left next to the name.
    """
    if text.isascii():
        skeleton = text.translate(_ASCII_SKELETON)
        owner = None
    else:
        pieces = [_skeleton_piece(c) for c in text]
        for shown in _SHOWN.finditer(text):  # a ⟨U+200B⟩ of visible() stands for a blank
            pieces[shown.start():shown.end()] = [_SHAPE_BLANK] * (shown.end() - shown.start())
        skeleton = "".join(pieces)
        owner = None if len(skeleton) == len(text) else [
            i for i, piece in enumerate(pieces) for _ in piece]
    escaped: dict[int, str] = {}
    for match in _NAME.finditer(skeleton):
        before = _next_shown(skeleton, match.start() - 1, -1)
        after = _next_shown(skeleton, match.end(), 1)
        if before is not None:
            escaped.setdefault(before if owner is None else owner[before], "&lt;")
        if after is not None and (before is not None or match.group(1)):
            escaped.setdefault(after if owner is None else owner[after], "&gt;")
    return escaped


def _next_shown(skeleton: str, i: int, step: int) -> int | None:
    """Where the first character from *i* (going by *step*) that is not blank
    stands, if it is a bracket-like one."""
    while 0 <= i < len(skeleton) and skeleton[i] == _SHAPE_BLANK:
        i += step
    return i if 0 <= i < len(skeleton) and skeleton[i] == _SHAPE_BRACKET else None


@functools.lru_cache(maxsize=4096)
def _skeleton_piece(c: str) -> str:
    """What *c* is, for finding the tag's shape: a blank, a bracket, a slash, or
    the letters it reads as (:func:`fold`)."""
    folded = fold(c)
    if (not folded.strip() or c in _BLANK_GLYPHS or c.isspace()
            or unicodedata.category(c) in _BLANK_CATEGORIES):
        return _SHAPE_BLANK
    if folded.isalnum():
        return folded
    if folded in ("/", "\\"):
        return "/"
    if any(unicodedata.category(x) in _BRACKET_CATEGORIES for x in c + folded):
        return _SHAPE_BRACKET
    return folded


_ASCII_SKELETON = str.maketrans({chr(i): _skeleton_piece(chr(i)) for i in range(128)})


def _opens_tag(text: str, at: int) -> bool:
    """Whether the "<" lookalike at *at* reads as the start of a tag beginning with "m"."""
    for i in range(at + 1, len(text)):  # stops at the first character that shows
        folded = fold(text[i])
        if folded == "" or folded.isspace() or folded == "/":
            continue
        return folded.startswith("m")
    return False


def visible(text: str) -> str:
    """*text* with invisible and bidirectional control characters shown as ``⟨U+200B⟩``."""
    if text.isascii() or not _INVISIBLE.search(text):
        return text
    flags = [(m.start(), m.end()) for m in _FLAG.finditer(text)]
    if not flags:
        return _INVISIBLE.sub(_show, text)
    out, last = [], 0
    for start, end in flags:
        out.append(_INVISIBLE.sub(_show, text[last:start]))
        out.append(text[start:end])
        last = end
    out.append(_INVISIBLE.sub(_show, text[last:]))
    return "".join(out)


def _show(match: re.Match) -> str:
    return f"⟨U+{ord(match.group()):04X}⟩"  # the shape _SHOWN finds


def one_line(text: str, limit: int = 200) -> str:
    """A short field (a handle, a title, a value) as one safe line."""
    flat = _BLANKS.sub(" ", _CONTROL.sub(" ", str(text))).strip()
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return visible(neutralise(flat))


def quote(text: str) -> str:
    """Post text as it appears in a wake: escaped, continuation lines indented.

    Every line we print from a post starts either with its ``[sender, time]``
    prefix or with the indent, so no post line can equal one of our own lines
    (a footer line, a heading) or pass for another person's post.
    """
    if text.isprintable() and not _NEEDS_WORK.search(text) and not _tag_brackets(text):
        return text  # the common case: nothing to do, and the stored count holds
    text = _CONTROL.sub(" ", text).replace("\r\n", "\n").replace("\r", "\n")
    return visible(neutralise(text)).replace("\n", "\n" + INDENT)


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
