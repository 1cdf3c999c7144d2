"""Pure parsing of the blocks an agent may write in its reply.

An agent's reply may carry, anywhere in it, one ```` ```handoff ```` block
(carry context to or from another Mood), one ```` ```checkin ```` block (count a
person's own words as their check-in), in a checkin-contact wake one
```` ```contact ```` block (the one message to a person's contact, or why not),
on full-tool turns one ```` ```settings ```` block (change this Mood's dials for
itself) and one ```` ```alarm ```` block (ask for a wake at a time), and, when
it has an activities catalog, one ```` ```away ```` block (step out after this
reply, for one of its activities).  ``parse``
takes the reply text and the turn's tools and returns the reply with the
blocks taken out, each block checked as far as text alone allows, and the
refusals: a block is either wholly valid or refused with a reason, never half
read.  What needs the store (does the Mood exist, is it archived, is the
agent real) is checked by the runner when it applies them.

A fenced block of any other kind (```` ```python ````, say) is ordinary text:
a handoff example quoted inside one is not a handoff.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from poller.away import catalog
from poller import errors, settings, text

KINDS = ("handoff", "settings", "away", "alarm", "checkin", "contact")
MAX_ABOUT_CHARS = 100
MAX_CONTEXT_CHARS = 8_000
MAX_NOTE_CHARS = 500
HANDOFF_KEYS = ("to", "from", "about", "for")
AWAY_KEYS = ("activity", "note")

FENCE_RE = re.compile(r"^[ \t]{0,3}```[ \t]*(?P<info>[^\s`]*)[^`]*$")
LINE_RE = re.compile(r"^(?P<key>[A-Za-z_][\w-]*)[ \t]*:[ \t]*(?P<value>.*)$")
SEPARATOR_RE = re.compile(r"^[ \t]*---+[ \t]*$")


@dataclass(frozen=True)
class Handoff:
    direction: str  # to: context goes from this Mood to `mood`; from: from `mood` into this one
    mood: str
    about: str
    context: str
    for_agent: Optional[str] = None


@dataclass(frozen=True)
class Settings:
    changes: dict[str, str]  # key -> value as written (already validated)
    note: str = ""


@dataclass(frozen=True)
class AlarmBlock:
    kind: str  # at | daily | cron
    when: str
    tz: str
    note: str = ""


@dataclass(frozen=True)
class CheckinBlock:
    quote: str  # the person's words, from the post the turn answers
    person: Optional[str] = None  # whose agreement (default: the one person with one here)


@dataclass(frozen=True)
class ContactBlock:
    subject: str = ""
    body: str = ""
    decline: str = ""  # the agent chose not to write, and why


@dataclass(frozen=True)
class Away:
    activity: str  # an id of the agent's catalog (checked when applied)
    note: str = ""  # why it goes: seeds its account when it is back


@dataclass(frozen=True)
class Refused:
    block: str  # handoff | settings | away | alarm | checkin | contact
    reason: str


@dataclass(frozen=True)
class Parsed:
    text: str  # the reply without its blocks
    handoff: Optional[Handoff] = None
    settings: Optional[Settings] = None
    refused: tuple[Refused, ...] = ()
    away: Optional[Away] = None
    found: tuple[str, ...] = field(default=())  # kinds of block seen, valid or not
    alarm: Optional[AlarmBlock] = None
    checkin: Optional[CheckinBlock] = None
    contact: Optional[ContactBlock] = None


@dataclass
class _Block:
    kind: str
    body: list[str]
    closed: bool


def _split(reply: str) -> tuple[list[str], list[_Block]]:
    """The reply's lines outside our blocks, and our blocks."""
    lines = reply.split("\n")
    kept: list[str] = []
    blocks: list[_Block] = []
    i = 0
    while i < len(lines):
        m = FENCE_RE.match(lines[i])
        if m is None:
            kept.append(lines[i])
            i += 1
            continue
        info = m.group("info").lower()
        end, depth = i + 1, 0
        while end < len(lines):
            inner = FENCE_RE.match(lines[end])
            if inner is not None and info in KINDS:
                if inner.group("info"):
                    depth += 1  # a code fence inside the context
                elif depth:
                    depth -= 1
                else:
                    break
            elif inner is not None and not inner.group("info"):
                break
            end += 1
        if info in KINDS:
            blocks.append(_Block(info, lines[i + 1:end], end < len(lines)))
        else:
            kept.extend(lines[i:end + 1])  # someone else's code block: plain text
        i = end + 1
    return kept, blocks


def parse(reply: str, *, tools: str) -> Parsed:
    """Take the handoff and settings blocks out of *reply* and check each."""
    kept, blocks = _split(reply)
    if not blocks:
        return Parsed(reply)
    remaining = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
    refused: list[Refused] = []
    found: dict[str, Optional[object]] = {}
    for kind in KINDS:
        mine = [b for b in blocks if b.kind == kind]
        if not mine:
            continue
        if len(mine) > 1:
            refused.append(Refused(kind, f"{len(mine)} {kind} blocks in one reply; only one is "
                                         "allowed, so none of them was applied"))
            found[kind] = None
            continue
        try:
            found[kind] = _check(mine[0], tools)
        except _Refuse as exc:
            refused.append(Refused(kind, str(exc)))
            found[kind] = None
    return Parsed(remaining, found.get("handoff"), found.get("settings"), tuple(refused),
                  away=found.get("away"), found=tuple(found), alarm=found.get("alarm"),
                  checkin=found.get("checkin"), contact=found.get("contact"))


class _Refuse(Exception):
    pass


def _check(block: _Block, tools: str):
    if not block.closed:
        raise _Refuse(f"the {block.kind} block has no closing ``` line")
    if block.kind == "handoff":
        return handoff(block.body)
    if block.kind == "checkin":
        return checkin_block(block.body)
    if block.kind == "contact":
        return contact_block(block.body)
    if block.kind == "away":
        return away_block(block.body)
    if tools != "full":
        raise _Refuse(f"a {block.kind} block is only honoured on a full-tool turn; "
                      "this turn was look-only")
    if block.kind == "alarm":
        return alarm_block(block.body)
    return settings_block(block.body)


def _pairs(lines: list[str], kind: str) -> list[tuple[str, str]]:
    out = []
    for raw in lines:
        if not raw.strip():
            continue
        m = LINE_RE.match(raw.strip())
        if m is None:
            raise _Refuse(f"line {raw.strip()[:60]!r} in the {kind} block is not 'key: value'")
        out.append((m.group("key").lower(), m.group("value").strip()))
    return out


def handoff(body: list[str]) -> Handoff:
    """A handoff block's lines: header, a ``---`` line, then the context."""
    sep = next((i for i, line in enumerate(body) if SEPARATOR_RE.match(line)), None)
    if sep is None:
        raise _Refuse("the handoff block has no --- line between its header and the context")
    head: dict[str, str] = {}
    for key, value in _pairs(body[:sep], "handoff"):
        if key not in HANDOFF_KEYS:
            raise _Refuse(f"unknown line {key + ':'!r} in the handoff block "
                          "(expected to:, from:, about:, for:)")
        if key in head:
            raise _Refuse(f"{key}: is given twice in the handoff block")
        head[key] = value
    if ("to" in head) == ("from" in head):
        raise _Refuse("a handoff block needs exactly one of to: or from:")
    direction = "to" if "to" in head else "from"
    slug = head[direction].strip().lower()
    try:
        text.check_slug(slug)
    except errors.UserError as exc:
        raise _Refuse(str(exc)) from None
    about = head.get("about", "").strip()
    if not about:
        raise _Refuse("a handoff block needs about: (a few words on what it is about)")
    if len(about) > MAX_ABOUT_CHARS:
        raise _Refuse(f"about: is {len(about)} characters; the limit is {MAX_ABOUT_CHARS}")
    for_agent = head.get("for", "").strip().lstrip("@") or None
    if for_agent is not None:
        try:
            text.check_handle(for_agent)
        except errors.UserError as exc:
            raise _Refuse(f"for: {exc}") from None
    context = "\n".join(body[sep + 1:]).strip()
    if not context:
        raise _Refuse("the handoff block has no context after its --- line")
    if len(context) > MAX_CONTEXT_CHARS:
        raise _Refuse(f"the handoff context is {len(context):,} characters; "
                      f"the limit is {MAX_CONTEXT_CHARS:,}")
    return Handoff(direction, slug, about, context, for_agent)


def settings_block(body: list[str]) -> Settings:
    """A settings block's ``key: value`` lines, checked as a whole."""
    changes: dict[str, str] = {}
    note = ""
    problems: list[str] = []
    for key, value in _pairs(body, "settings"):
        if key == "note":
            note = value
            continue
        if key in changes:
            problems.append(f"{key} is given twice")
            continue
        changes[key] = value
        allowed = ", ".join(settings.AGENT_SETTABLE)
        if key not in settings.KEYS:
            problems.append(f"unknown setting {key!r} (a reply may set: {allowed})")
            continue
        if key not in settings.AGENT_SETTABLE:
            problems.append(f"{key} cannot be changed from a reply (a reply may set: {allowed})")
            continue
        try:
            settings.validate(key, value)
        except errors.InvalidSetting as exc:
            problems.append(str(exc))
    if not changes and not problems:
        problems.append("the settings block sets nothing")
    if len(note) > MAX_NOTE_CHARS:
        problems.append(f"note is {len(note)} characters; the limit is {MAX_NOTE_CHARS}")
    if problems:
        raise _Refuse("; ".join(problems))
    return Settings(changes, note)


def _keyed(body: list[str], kind: str, allowed: tuple[str, ...]) -> dict[str, str]:
    head: dict[str, str] = {}
    for key, value in _pairs(body, kind):
        if key not in allowed:
            raise _Refuse(f"unknown line {key + ':'!r} in the {kind} block (expected "
                          f"{', '.join(k + ':' for k in allowed)})")
        if key in head:
            raise _Refuse(f"{key}: is given twice in the {kind} block")
        head[key] = value
    return head


def alarm_block(body: list[str]) -> AlarmBlock:
    """``at:`` / ``daily:`` / ``cron:`` (exactly one), ``tz:`` (required), ``note:``."""
    from poller.schedules import timing

    head = _keyed(body, "alarm", ("at", "daily", "cron", "tz", "note"))
    whens = [k for k in ("at", "daily", "cron") if k in head]
    if len(whens) != 1:
        raise _Refuse("an alarm block needs exactly one of at:, daily: or cron:")
    if not head.get("tz"):
        raise _Refuse("an alarm block needs tz: (an IANA zone such as Europe/Berlin)")
    note = head.get("note", "")
    if len(note) > MAX_NOTE_CHARS:
        raise _Refuse(f"note is {len(note)} characters; the limit is {MAX_NOTE_CHARS}")
    try:
        spec = timing.Spec.make(whens[0], head[whens[0]], head["tz"])
    except errors.UserError as exc:
        raise _Refuse(str(exc).replace("--", "")) from None
    return AlarmBlock(spec.kind, spec.text, spec.tz, note)


def checkin_block(body: list[str]) -> CheckinBlock:
    """``quote:`` the person's words (required), ``for:`` whose agreement."""
    head = _keyed(body, "checkin", ("quote", "for"))
    quote = head.get("quote", "").strip().strip('"“”').strip()
    if len(quote) < 2:
        raise _Refuse("a checkin block needs quote: with the person's own words from their post")
    person = head.get("for", "").strip().lstrip("@") or None
    return CheckinBlock(quote, person)


MAX_SUBJECT_CHARS = 150


def contact_block(body: list[str]) -> ContactBlock:
    """``decline:`` and why; or ``subject:``, a ``---`` line, and the message."""
    sep = next((i for i, line in enumerate(body) if SEPARATOR_RE.match(line)), None)
    head = _keyed(body if sep is None else body[:sep], "contact", ("subject", "decline"))
    if "decline" in head:
        if sep is not None or "subject" in head:
            raise _Refuse("a contact block either declines or writes a message, not both")
        return ContactBlock(decline=head["decline"].strip() or "no reason given")
    message = "\n".join(body[sep + 1:]).strip() if sep is not None else ""
    subject = head.get("subject", "").strip()
    if not subject or not message:
        raise _Refuse("a contact block needs subject:, a --- line and the message after it "
                      "(or decline: and why)")
    if len(subject) > MAX_SUBJECT_CHARS:
        raise _Refuse(f"subject: is {len(subject)} characters; the limit is {MAX_SUBJECT_CHARS}")
    return ContactBlock(subject, message)


def away_block(body: list[str]) -> Away:
    """An away block's ``activity:`` (required) and ``note:`` (optional) lines."""
    head: dict[str, str] = {}
    for key, value in _pairs(body, "away"):
        if key not in AWAY_KEYS:
            raise _Refuse(f"unknown line {key + ':'!r} in the away block (expected activity:, note:)")
        if key in head:
            raise _Refuse(f"{key}: is given twice in the away block")
        head[key] = value
    activity = head.get("activity", "").strip()
    if not activity:
        raise _Refuse("an away block needs activity: (one of your activities' ids)")
    if not catalog.ID_RE.fullmatch(activity):
        raise _Refuse(f"activity: {activity[:60]!r} is not an activity id")
    note = head.get("note", "").strip()
    if len(note) > MAX_NOTE_CHARS:
        raise _Refuse(f"note is {len(note)} characters; the limit is {MAX_NOTE_CHARS}")
    return Away(activity, note)
