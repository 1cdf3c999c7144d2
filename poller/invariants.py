"""No mention is ever lost: the check of :mod:`poller.store.invariants`, with the control
organ's rule for which posts are commands (``@agent stop``, ``@agent /compact``) that nobody
owes an answer."""

from __future__ import annotations

from poller.kinds import ParticipantKind, Trust
from poller.store import invariants as _store
from poller.store.invariants import Lost

__all__ = ["Lost", "lost_mentions", "must_answer", "unanswered"]


def is_command(r, handles: dict[int, str], named: set[int]) -> bool:
    """A post the service carries out, for this agent: nobody owes it an answer."""
    from poller.control import commands, slash

    if r.kind == ParticipantKind.PERSON and r.trust == Trust.NONE:
        return False
    asked = slash.parse(r.text)
    if asked is not None and any(handles.get(a, "").lower() == asked.handle.lower()
                                 for a in named):
        return True  # a command to one of the agents it names: conversation for none
    said = commands.parse(r.text) if r.kind == ParticipantKind.PERSON else None
    return said is not None and handles.get(r.participant_id, "").lower() == said[0]


def must_answer(s) -> list[tuple[int, int, int]]:
    return _store.must_answer(s, is_command)


def lost_mentions(s) -> list[Lost]:
    return _store.lost_mentions(s, is_command)


def unanswered(s) -> list[tuple[int, int]]:
    return _store.unanswered(s, is_command)
