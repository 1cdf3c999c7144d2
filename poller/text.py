"""Pure parsing of what people type: handles, slugs, mentions, timestamps, whole
numbers, JSON, and the one check every text passes before the store keeps it."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any, Optional

from poller import errors

MAX_POST_CHARS = 65_536  # a post longer than this is refused at ingest
MAX_ID = 2**63 - 1  # the largest id (and count) a database column holds
MAX_JSON_DEPTH = 64  # arrays and objects nested deeper than this are refused
HANDLE_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_-]{0,30}[A-Za-z0-9])?")
SLUG_RE = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")
# '@' not preceded by a word character or another '@' (so e-mail addresses
# and '@@x' are not mentions); the handle runs to the first character that
# cannot be part of one.
MENTION_RE = re.compile(r"(?<![\w@])@([A-Za-z0-9][A-Za-z0-9_-]*)")


def check_handle(handle: str) -> str:
    if not HANDLE_RE.fullmatch(handle or ""):
        raise errors.UserError(
            f"invalid handle {handle!r}: use 1-32 letters, digits, '-' or '_', "
            "starting and ending with a letter or digit"
        )
    return handle


def check_slug(slug: str) -> str:
    if not SLUG_RE.fullmatch(slug or ""):
        raise errors.UserError(
            f"invalid Mood slug {slug!r}: use 1-64 lower-case letters, digits or '-', "
            "starting and ending with a letter or digit"
        )
    return slug


def mentioned_keys(text: str) -> set[str]:
    """Lower-cased handles written as ``@handle`` in *text*."""
    return {m.group(1).rstrip("-_").lower() for m in MENTION_RE.finditer(text)}


def check_post_text(text: str) -> str:
    """*text* unchanged if it may be posted, else UserError with the reason.  The store
    calls it once per post, as the post comes in (:func:`poller.store.core.admit`), and
    once per edit a bridge brings."""
    if not text or not text.strip():
        raise errors.UserError("empty post: give the text to post")
    if len(text) > MAX_POST_CHARS:
        raise errors.PostTooLong(
            f"post too long: {len(text):,} characters (the limit is {MAX_POST_CHARS:,})"
        )
    return check_text(text, "the post text")


def check_text(value: str, what: str, limit: Optional[int] = None) -> str:
    """*value* unchanged if the store may keep it, else UserError naming *what*: no NUL
    (PostgreSQL cannot hold one), no surrogate (not UTF-8), at most *limit* characters.
    Every text from outside passes here before it is written or looked up."""
    if not isinstance(value, str):
        raise errors.UserError(f"{what} must be a text")
    if "\x00" in value:
        raise errors.UserError(f"{what} contains a NUL character")
    check_utf8(value, what)
    if limit is not None and len(value) > limit:
        raise errors.UserError(f"{what} too long: {len(value):,} characters (the limit is "
                               f"{limit:,})")
    return value


_WHOLE = re.compile(r"[+-]?[0-9]{1,30}")  # ASCII digits only: int() takes far more


def parse_whole(raw: str, what: str, lowest: int = 0, highest: int = MAX_ID) -> int:
    """A whole number written in ASCII digits, from *lowest* to *highest* (at most what a
    database column holds), else UserError naming *what*.  The one parser for ids, limits
    and counts from outside: ``str.isdigit`` says yes to "²" and "١", ``int`` to "1_000"."""
    text = raw.strip() if isinstance(raw, str) else ""
    if not _WHOLE.fullmatch(text):
        raise errors.UserError(f"{what} {raw!r:.40} is not a whole number")
    number = int(text)
    if not lowest <= number <= highest:
        raise errors.UserError(f"{what} {raw!r:.40} is out of range: give a whole number from "
                               f"{lowest} to {highest}")
    return number


def parse_json(raw: bytes | str, what: str = "the body") -> Any:
    """JSON text to a value, else UserError: not JSON, not UTF-8, or arrays and objects
    nested deeper than :data:`MAX_JSON_DEPTH` (looked at before parsing, so no depth
    reaches the parser's recursion)."""
    try:
        source = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise errors.UserError(f"{what}: not UTF-8 (byte {exc.start})") from None
    if json_depth(source) > MAX_JSON_DEPTH:
        raise errors.UserError(f"{what}: nests arrays or objects deeper than {MAX_JSON_DEPTH}")
    try:
        return json.loads(source)
    except json.JSONDecodeError as exc:
        raise errors.UserError(f"{what}: not JSON ({exc.msg}, character {exc.pos})") from None
    except (ValueError, RecursionError) as exc:  # a number too long; depth is checked above
        raise errors.UserError(f"{what}: not JSON ({exc})") from None


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?', re.S)
_BRACKET = re.compile(r"[\[\]{}]")


def json_depth(source: str) -> int:
    """How deep the arrays and objects of JSON *source* nest (brackets in strings aside)."""
    depth = deepest = 0
    for m in _BRACKET.finditer(_JSON_STRING.sub("", source)):
        if m.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


# Every time the product accepts lies in this fixed window, so arithmetic the
# loop does on it (a cooldown, a week of idling) never leaves datetime's range.
EARLIEST = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
LATEST = dt.datetime(2200, 12, 31, 23, 59, 59, 999_999, tzinfo=dt.timezone.utc)


def parse_time(raw: str, what: str = "time") -> dt.datetime:
    """ISO 8601 to an aware UTC datetime; a time with no offset is taken as UTC.

    The time must fall between :data:`EARLIEST` and :data:`LATEST` (years
    1970 to 2200).
    """
    check_utf8(raw or "", what)
    try:
        value = dt.datetime.fromisoformat(raw.strip().replace("Z", "+00:00") if raw else "")
    except ValueError:
        raise errors.UserError(f"invalid {what} {raw!r}: use ISO 8601, e.g. 2026-11-30T14:05:00Z") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    try:
        value = value.astimezone(dt.timezone.utc)
    except OverflowError:
        value = None
    if value is None or not EARLIEST <= value <= LATEST:
        raise errors.UserError(f"{what} {raw!r} is out of range: give a time in the years "
                               f"{EARLIEST.year} to {LATEST.year}")
    return value


def check_utf8(value: str, what: str) -> str:
    """*value* unchanged, or UserError if it holds bytes that were not UTF-8.

    Python hands undecodable bytes of the command line over as lone
    surrogates (U+DC80..U+DCFF); no text the product stores may hold any
    surrogate.
    """
    if value and _SURROGATE.search(value):
        raise errors.UserError(f"invalid UTF-8 in {what}")
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def iso(value: dt.datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")


def when(value: dt.datetime | str | None) -> str:
    """A time as a person reads it, everywhere (pages, CLI, ``why``): ``2026-12-02 01:10
    UTC``; an ISO string is read first; nothing for None."""
    if not value:
        return ""
    if isinstance(value, str):
        value = parse_time(value)
    return f"{value.astimezone(dt.timezone.utc):%Y-%m-%d %H:%M} UTC"


def ago(value: dt.datetime | str | None, now: dt.datetime) -> str:
    """How long before *now* *value* was, in the largest unit that fits: ``just now``,
    ``3 min ago``, ``5 h ago``, ``2 days ago``; a time after *now* ``in 3 min``."""
    if not value:
        return ""
    if isinstance(value, str):
        value = parse_time(value)
    seconds = (now - value).total_seconds()
    gap = abs(seconds)
    if gap < 60:
        return "just now"
    for size, unit in ((86_400, "day"), (3_600, "h"), (60, "min")):
        if gap >= size:
            count = int(gap // size)
            said = f"{count} {unit}{'s' if unit == 'day' and count != 1 else ''}"
            return f"{said} ago" if seconds > 0 else f"in {said}"
    raise AssertionError("unreachable")


def money(usd: float) -> str:
    """US dollars as a person reads them: ``$0.03``, ``$1,204.50``; under a cent but not
    nothing, ``<$0.01`` (never ``$0.0000``)."""
    if 0 < usd < 0.005:
        return "<$0.01"
    return f"${usd:,.2f}"
