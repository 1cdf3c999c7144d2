"""The service's vocabularies, each defined once.

They are ``StrEnum``s: a member *is* its string, so it is stored, compared,
printed and put in JSON as the plain word, and a value read back from the
database compares equal to the member.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Callable, Optional


class WakeKind(StrEnum):
    """Why an agent is woken, in the order the loop weighs them."""

    MENTION = "mention"
    ARRIVAL = "arrival"
    CONSIDER = "consider"
    QUIET = "quiet"
    CUT_OFF = "cut-off"  # a look-only follow-up after a turn was cut off with no reply
    COMMAND = "command"  # a person's slash command (/compact...) run in the agent's session
    RETURN = "return"  # back from an activity: the pings missed while out
    NUDGE = "nudge"  # the Mood it last spoke in has been quiet: an activity is on offer
    # Scheduled: due at a time, not by what was said (poller.schedules.scheduled decides them,
    # never the listeners' loop in poller.cycle.evaluate).
    ALARM = "alarm"  # someone asked for a wake at a time
    CHECKIN_MISSED = "checkin-missed"  # a person missed a check-in they promised
    CHECKIN_CONTACT = "checkin-contact"  # grace ran out: the agent may write once to the contact


@dataclass(frozen=True)
class KindSpec:
    """One kind of wake, declared once by the part of the service that owns it.

    The traits are what :func:`poller.law.decide` weighs it by; the hooks are
    how the listeners' loop finds it due and what a wake of it reads and
    leaves behind (:mod:`poller.cycle.evaluate`, :mod:`poller.cycle.drafts`);
    the frames are what ``preview --frames`` prints of it.  Hooks take plain
    arguments; a kind that leaves one out gets the plain behaviour.
    """

    name: str
    order: int  # the order the kinds due on one listener are weighed in
    # -- the law
    owed: bool = False  # answers posts owed to someone: a gate holds it, never drops it
    unprompted: bool = False  # nobody asked: one floor a Mood, skipped when over budget
    paced: bool = True  # waits out the cooldown (and a consider's own pacing)
    timed: bool = False  # asked for at a time: kept whatever the listening and the Mood's state
    dials_apply: bool = True  # False: a person's command, run whatever the dials and budgets
    holds: bool = False  # what blocks it holds it (it stays owed, with a notice) instead of deferring
    # While the agent is out: skip | judge (a trusted ping may call it back) | wait (until it
    # is back) | pass (weighed as if it were at the screen).
    while_away: str = "skip"
    # -- the listeners' loop
    listened: bool = True  # False: it keeps a schedule of its own (poller.schedules)
    due_at: Optional[Callable] = None  # (listener, owed: its posts or whether any, now) -> when due
    schedule: str = "cooled"  # its part of next_due: cooled (waits out a cooldown) | free | lifts
    after_skip: Optional[Callable] = None  # (ctx, s, listener, decision, now): a skip's mark
    after_wake: Optional[Callable] = None  # (ctx, s, listener, draft, now): what a wake takes
    gather: Optional[Callable] = None  # what it shows; see poller.cycle.drafts.Material
    # -- the wake
    composed: bool = True  # False: the wake is the person's command as typed
    delta: bool = True  # into a live session, carries only what is new to it
    tools_by_senders: bool = False  # full tools when every sender is a fully trusted person
    template: str = ""  # its template, "<name>.j2" unless given
    templates: str = ""  # a folder holding its template (a kind outside the service's own)
    frames: tuple[tuple[str, str], ...] = (("look", ""),)  # (tools, variant) for preview
    placeholders: Optional[Callable] = None  # () -> extra template context for its frames

    @property
    def template_name(self) -> str:
        return self.template or f"{self.name}.j2"


_KINDS: dict[str, KindSpec] = {}


def register(spec: KindSpec) -> KindSpec:
    """Declare a kind of wake; declaring the same name again replaces it (a reload)."""
    if spec.while_away not in ("skip", "judge", "wait", "pass"):
        raise ValueError(f"{spec.name}: while_away must be skip, judge, wait or pass")
    if spec.schedule not in ("cooled", "free", "lifts"):
        raise ValueError(f"{spec.name}: schedule must be cooled, free or lifts")
    if spec.listened and spec.composed and spec.due_at is None:
        raise ValueError(f"{spec.name}: a listened kind says when it is due (due_at)")
    _KINDS[spec.name] = spec
    return spec


def withdraw(name: str) -> None:
    """Forget a declared kind (an organ unloaded; tests that declare one of their own)."""
    _KINDS.pop(name, None)


def spec(name: str) -> KindSpec:
    found = _KINDS.get(name)
    if found is None:
        raise KeyError(f"no wake kind {name!r} is declared (poller.cycle.organs.load() "
                       f"declares the service's own)")
    return found


def asked_for(name: str) -> bool:
    """Whether someone asked for a wake of this kind (a mention, a command, an alarm...),
    so that a turn of it that ends without a reply is told to the Mood.  Considers, quiet
    looks and arrivals (``unprompted``) were asked by nobody: theirs fail quietly (the
    wake's record, ``why`` and the log say it).  A kind not declared here counts as asked."""
    found = _KINDS.get(name)
    return found is None or not found.unprompted


def declared() -> tuple[KindSpec, ...]:
    """Every declared kind, in the order they are weighed."""
    return tuple(sorted(_KINDS.values(), key=lambda k: (k.order, k.name)))


def listened() -> tuple[KindSpec, ...]:
    """The kinds the listeners' loop weighs, in order."""
    return tuple(k for k in declared() if k.listened)


class WakeStatus(StrEnum):
    """pending -> running -> one of the finished statuses."""

    PENDING = "pending"
    RUNNING = "running"
    REPLIED = "replied"
    SILENT = "silent"
    FAILED = "failed"
    CUT_OFF = "cut_off"


IN_FLIGHT = (WakeStatus.PENDING, WakeStatus.RUNNING)
FINISHED = (WakeStatus.REPLIED, WakeStatus.SILENT, WakeStatus.FAILED, WakeStatus.CUT_OFF)
ANSWERED = (WakeStatus.REPLIED, WakeStatus.SILENT)  # the agent had its say (or chose silence)


class Tools(StrEnum):
    """What a turn may do: everything its waker allows, or only look."""

    FULL = "full"
    LOOK = "look"


class Trust(StrEnum):
    """How far a person's mention reaches: full-tool turns, look-only turns, or nothing."""

    FULL = "full"
    LOOK = "look"
    NONE = "none"


class ParticipantKind(StrEnum):
    PERSON = "person"
    AGENT = "agent"


class PostKind(StrEnum):
    """Conversation (post, an agent's silence) and the service's own notes."""

    POST = "post"
    SILENT = "silent"
    SYSTEM = "system"
    HANDOFF = "handoff"
    RETURN = "return"  # an agent back from an activity, telling of it in its own words


class AbsenceStatus(StrEnum):
    """An activity row: out until it returns, then how the absence ended."""

    AWAY = "away"
    COMPLETED = "completed"
    CUT_SHORT = "cut_short"


class PingKind(StrEnum):
    """A mention that reached an agent while it was out."""

    JUDGMENT = "judgment"  # woke it for a judgment: come back now, or stay out
    NOTED = "noted"  # noted by the gate, for the return
    FOUND = "found"  # found at the return by scanning the posts made while it was out


class Outcome(StrEnum):
    """What ``law.decide`` says about one candidate wake."""

    WAKE = "wake"
    HOLD = "hold"
    DEFER = "defer"
    SKIP = "skip"


class AgreementStatus(StrEnum):
    """A check-in agreement: active until paused, cancelled, replaced or (once) completed."""

    ACTIVE = "active"
    PAUSED = "paused"
    CANCELLED = "cancelled"
    REPLACED = "replaced"
    COMPLETED = "completed"


LIVE_AGREEMENTS = (AgreementStatus.ACTIVE, AgreementStatus.PAUSED)


class ContactState(StrEnum):
    """A missed streak's contact stage: not opened, offered to the agent, and how it ended."""

    NONE = ""
    OFFERED = "offered"  # the checkin-contact wake is out
    SENT = "sent"  # the agent wrote; the message is in the outbox
    DECLINED = "declined"  # the agent chose not to write (or wrote nothing)
    LATE = "late"  # the grace wake came past the lateness cutoff: nobody is contacted
    OFF = "off"  # at grace's end the stage was disarmed, or the contact had not consented
    REFUSED = "refused"  # its one message was refused (recipient, timing, length)


def names(enum) -> tuple[str, ...]:
    return tuple(m.value for m in enum)


class Bridge(StrEnum):
    """Where the outbox delivers: a chat a bridge speaks for, or webhook subscribers."""

    MATRIX = "matrix"
    WEBHOOK = "webhook"


class OutboxStatus(StrEnum):
    """pending -> sent, or failed once its attempts run out (``outbox retry``: pending again)."""

    PENDING = "pending"
    SENT = "sent"
    FAILED = "failed"


class OutboxEvent(StrEnum):
    """What an outbox item carries."""

    POST = "post"  # a person's post (webhooks)
    REPLY = "reply"  # an agent's reply
    SILENT = "silent"  # an agent stayed silent (webhooks; nothing is shown in a chat)
    NOTICE = "notice"  # the service's own note: a hold, a failure, a refused block
    TURN_STARTED = "turn_started"
    TURN_ENDED = "turn_ended"
