"""The rules of a check-in agreement, pure: what a check-in answers, what is missed.

A person promises to check in by a deadline (``once``, or ``daily`` at a local
time, in an IANA zone: see :mod:`poller.schedules.timing`).  Deadlines up to
``answered_until`` are answered; up to ``processed_until`` a wake has looked
at them.  Only the person's explicit act answers a deadline:

* an **ordinary** check-in (their own post, quoted by the agent) counts for
  today's deadline while it is ahead, and closes anything already missed;
  it never answers a later day's deadline;
* a **dated** check-in names one deadline: the next one or the latest that
  passed, nothing else.

Repeats change nothing.  The store applies what these functions decide.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Optional

from poller import errors
from poller.schedules import timing
from poller.kinds import AgreementStatus, ContactState

GRACE_RANGE = (1, 1440)  # minutes
CUTOFF_RANGE = (15, 4320)  # minutes
CONTACT_BODY_LIMIT = 3_800  # characters the agent's message to a contact may have (a footer follows)
NOT_AN_EMERGENCY_SERVICE = (
    "This is not an emergency service: it watches one promise to check in, nothing "
    "more. Nothing happens while no poller runs or no agent or mail server answers, "
    "silence is not proof of danger, and a sent message is not proof anyone read it.")


@dataclass(frozen=True)
class Terms:
    """What the rules read of an agreement."""

    kind: str  # once | daily
    spec: str
    tz: str
    status: str
    answered_until: Optional[dt.datetime]
    processed_until: dt.datetime
    grace_minutes: int = 60
    cutoff_minutes: int = 120
    since: Optional[dt.datetime] = None  # set up then: no deadline before it is the agreement's

    @property
    def when(self) -> timing.Spec:
        return timing.Spec("at" if self.kind == "once" else "daily", self.spec, self.tz)

    @property
    def floor(self) -> dt.datetime:
        """Deadlines at or before this are answered or looked at already."""
        if self.answered_until is None:
            return self.processed_until
        return max(self.processed_until, self.answered_until)


@dataclass(frozen=True)
class Answer:
    """What a check-in did: the newest deadline it answered (None: nothing new)."""

    answered: Optional[dt.datetime]
    answered_until: Optional[dt.datetime]
    completes: bool = False  # a once agreement is done


def make_spec(kind: str, text: str, tz: str) -> timing.Spec:
    if kind not in ("once", "daily"):
        raise errors.UserError(f"unknown agreement kind {kind!r} (once or daily)")
    return timing.Spec.make("at" if kind == "once" else "daily", text, tz)


def check_minutes(value: int, what: str, bounds: tuple[int, int]) -> int:
    lo, hi = bounds
    if not lo <= value <= hi:
        raise errors.UserError(f"{what} must be {lo}–{hi} minutes, got {value}")
    return value


def _newer(t: Optional[dt.datetime], than: Optional[dt.datetime]) -> bool:
    return t is not None and (than is None or t > than)


def ordinary(terms: Terms, at: dt.datetime) -> Answer:
    """The person checked in at *at*: today's deadline while it is ahead, and what passed."""
    spec, until, answered = terms.when, terms.answered_until, None
    passed = _own(terms, spec.latest(at))
    if _newer(passed, until):
        answered = until = passed  # closes what was missed (or passed unprocessed)
    today = spec.on_date(at.astimezone(spec.zone).date())
    if today is not None and today > at and _newer(today, until):
        answered = until = today
    return Answer(answered, until, terms.kind == "once" and answered is not None)


def _own(terms: Terms, t: Optional[dt.datetime]) -> Optional[dt.datetime]:
    """*t* if it is one of the agreement's deadlines (after it was set up), else None."""
    return t if t is not None and (terms.since is None or t > terms.since) else None


def targets(terms: Terms, now: dt.datetime) -> tuple[Optional[dt.datetime], Optional[dt.datetime]]:
    """The deadlines a dated check-in may name now: (the next, the latest passed)."""
    spec = terms.when
    return spec.next(now, inclusive=True), _own(terms, spec.latest(now - dt.timedelta(microseconds=1)))


def dated(terms: Terms, target: dt.datetime, now: dt.datetime) -> Answer:
    """A check-in for one named deadline; UserError for any other."""
    if terms.status == AgreementStatus.PAUSED:
        raise errors.UserError("the agreement is paused: a dated check-in is refused until it "
                               "is resumed")
    nxt, latest = targets(terms, now)
    if target not in (nxt, latest):
        allowed = " or ".join(timing.shown(t, terms.tz) for t in (nxt, latest) if t is not None)
        raise errors.UserError(f"{timing.shown(target, terms.tz)} is not a deadline a check-in "
                               f"may name now (only {allowed or 'none'})")
    if not _newer(target, terms.answered_until):
        return Answer(None, terms.answered_until)
    return Answer(target, target, terms.kind == "once")


def missed(terms: Terms, now: dt.datetime) -> list[dt.datetime]:
    """Deadlines passed with no check-in and no wake yet, oldest first."""
    if terms.status != AgreementStatus.ACTIVE:
        return []
    return terms.when.between(terms.floor, now)


def late(oldest: dt.datetime, now: dt.datetime, cutoff_minutes: int) -> bool:
    """A wake this long after the oldest deadline it answers only says it noticed late."""
    return now - oldest > dt.timedelta(minutes=cutoff_minutes)


def next_check(terms: Terms, grace_until: Optional[dt.datetime] = None,
               contact_state: str = ContactState.NONE) -> Optional[dt.datetime]:
    """When the poller must look at the agreement next: its next deadline or a grace's end."""
    if terms.status != AgreementStatus.ACTIVE:
        return None
    times = [terms.when.next(terms.floor)]
    if grace_until is not None and contact_state == ContactState.NONE:
        times.append(grace_until)
    times = [t for t in times if t is not None]
    return min(times) if times else None
