"""What settling does with a slash command's turn: its output goes into the Mood.

A command wake's reply is what the command printed in the agent's session,
not the agent speaking: it is posted as a system note, and nothing else of a
turn follows (no cooldown, no blocks read, no silence).  Declared to the
registry of :mod:`poller.turns.blocks` as the output of command wakes, by
:mod:`poller.control.organ`.
"""

from __future__ import annotations

import datetime as dt

from poller.control import slash
from poller.store import turns
from poller.text import MAX_POST_CHARS


def command_done(s, counter, turn: turns.Ending, outcome, now: dt.datetime) -> str:
    """Post what the command printed as a system note; the wake's final status."""
    word = (turn.text or "/").lstrip("/")
    body = slash.output_note(word, turns.handle_of(s, turn.agent_id), outcome.reply,
                             MAX_POST_CHARS)
    return turns.record_command_output(s, counter, turn.id, body,
                                       outcome.note or outcome.error, now)

