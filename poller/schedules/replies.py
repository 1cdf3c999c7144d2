"""The reply blocks the schedules organ accepts, and what settling does for them.

An ``alarm`` block (full-tool turns) asks for a wake at a time; a ``checkin``
block counts a person's own words as their check-in; in a checkin-contact
wake a ``contact`` block is the one message to the person's contact, or why
not (a reply with no valid one declines).  A posted reply to a missed
check-in's notice confirms the notice.  The verbs are
:mod:`poller.schedules.agreements`; :mod:`poller.schedules.organ` declares these
to the registry of :mod:`poller.turns.blocks`.
"""

from __future__ import annotations

import datetime as dt
import unicodedata
from dataclasses import dataclass
from typing import Optional

from poller import errors
from poller.kinds import WakeKind
from poller.schedules import agreements, timing
from poller.store import cycle
from poller.turns import blocks

MAX_SUBJECT_CHARS = 150


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


def alarm_block(body: list[str]) -> AlarmBlock:
    """``at:`` / ``daily:`` / ``cron:`` (exactly one), ``tz:`` (required), ``note:``."""
    head = blocks.keyed(body, "alarm", ("at", "daily", "cron", "tz", "note"))
    whens = [k for k in ("at", "daily", "cron") if k in head]
    if len(whens) != 1:
        raise blocks.Refuse("an alarm block needs exactly one of at:, daily: or cron:")
    if not head.get("tz"):
        raise blocks.Refuse("an alarm block needs tz: (an IANA zone such as Europe/Berlin)")
    note = head.get("note", "")
    if len(note) > blocks.MAX_NOTE_CHARS:
        raise blocks.Refuse(f"note is {len(note)} characters; the limit is {blocks.MAX_NOTE_CHARS}")
    try:
        spec = timing.Spec.make(whens[0], head[whens[0]], head["tz"])
    except errors.UserError as exc:
        raise blocks.Refuse(str(exc).replace("--", "")) from None
    return AlarmBlock(spec.kind, spec.text, spec.tz, note)


def checkin_block(body: list[str]) -> CheckinBlock:
    """``quote:`` the person's words (required), ``for:`` whose agreement."""
    head = blocks.keyed(body, "checkin", ("quote", "for"))
    quote = head.get("quote", "").strip().strip('"“”').strip()
    if len(quote) < 2:
        raise blocks.Refuse("a checkin block needs quote: with the person's own words from their post")
    person = head.get("for", "").strip().lstrip("@") or None
    return CheckinBlock(quote, person)


def contact_block(body: list[str]) -> ContactBlock:
    """``decline:`` and why; or ``subject:``, a ``---`` line, and the message."""
    sep = next((i for i, line in enumerate(body) if blocks.SEPARATOR_RE.match(line)), None)
    head = blocks.keyed(body if sep is None else body[:sep], "contact", ("subject", "decline"))
    if "decline" in head:
        if sep is not None or "subject" in head:
            raise blocks.Refuse("a contact block either declines or writes a message, not both")
        return ContactBlock(decline=head["decline"].strip() or "no reason given")
    message = "\n".join(body[sep + 1:]).strip() if sep is not None else ""
    subject = head.get("subject", "").strip()
    if not subject or not message:
        raise blocks.Refuse("a contact block needs subject:, a --- line and the message after it "
                      "(or decline: and why)")
    if len(subject) > MAX_SUBJECT_CHARS:
        raise blocks.Refuse(f"subject: is {len(subject)} characters; the limit is {MAX_SUBJECT_CHARS}")
    if not one_line(subject):
        raise blocks.Refuse("subject: holds a line break or a control character; it must be "
                            "one line of text")
    return ContactBlock(subject, message)


def one_line(value: str) -> bool:
    """No line break of any kind (what ``str.splitlines`` and mail headers break at:
    U+2028 as much as LF) and no control character."""
    return len(value.splitlines()) <= 1 and not any(
        unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp") for c in value)


def noting(verb):
    """An applier from one of the agreements' verbs: what it notes goes into the Mood."""
    def apply(s, counter, turn, block, now: dt.datetime) -> str:
        notes: list[str] = []
        why = verb(s, turn, block, notes, now)
        for body in notes:
            cycle.add_system_post(s, turn.mood_id, turn.agent_id, body, now, counter.count(body))
        return why
    return apply


def confirm_notice(s, counter, turn, posted: bool, now: dt.datetime) -> None:
    if posted and turn.kind == WakeKind.CHECKIN_MISSED:
        agreements.confirm_notice(s, turn, now)
