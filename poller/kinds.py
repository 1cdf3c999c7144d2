"""The service's vocabularies, each defined once.

They are ``StrEnum``s: a member *is* its string, so it is stored, compared,
printed and put in JSON as the plain word, and a value read back from the
database compares equal to the member.
"""

from __future__ import annotations

from enum import StrEnum


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


# kinds that pierce an absence
SCHEDULED = (WakeKind.ALARM, WakeKind.CHECKIN_MISSED, WakeKind.CHECKIN_CONTACT)
# the kinds the listeners' loop weighs (poller.cycle.evaluate, poller.store.cycle), in order
LISTENED = tuple(k for k in WakeKind if k not in SCHEDULED)


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
