"""A person's slash command to a Claude Code agent: ``@agent /compact`` in a Mood.

A post that is nothing but an agent's handle and a slash command asks the
poller to run that command in the agent's Claude Code session for the Mood
and post what it printed.  Four commands pass (:data:`COMMANDS`): they look
at or tidy the session and change nothing else.  Only a person with trust
``full`` may ask, only of a Claude Code agent, one command at a time per
agent and Mood; anything else is refused with a one-line note in the Mood
(:func:`refusal`), a system note: the agent is never woken by it.

Everything here is pure: text in, values out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from poller.kinds import ParticipantKind, Trust, Waker

COMMANDS = ("compact", "context", "usage", "cost")
# "@handle /word", and whatever follows the word (a command runs alone: nothing may).
ASK_RE = re.compile(r"\s*@(?P<handle>[A-Za-z0-9][A-Za-z0-9_-]*)\s+"
                    r"/(?P<word>[A-Za-z][A-Za-z0-9_-]{0,31})(?P<rest>(?:\s.*)?)", re.DOTALL)


@dataclass(frozen=True)
class Asked:
    """A post read as a command: to whom, which, and whether anything followed it."""

    handle: str
    word: str  # lower-cased, without the slash
    extra: bool  # something followed the command

    @property
    def shown(self) -> str:
        return f"/{self.word}"


def parse(text: str) -> Optional[Asked]:
    """The command a post asks for, or None if it is not one (``@a /etc/hosts is down`` is
    not: a command word ends at a space or the end of the post)."""
    m = ASK_RE.fullmatch(text or "")
    if m is None:
        return None
    return Asked(m.group("handle"), m.group("word").lower(), bool(m.group("rest").strip()))


def refusal(asked: Asked, agent: str, waker: str, sender_kind: str, sender_trust: str,
            waiting: str = "") -> str:
    """Why the command is not run, as one line for the Mood; "" if it may run.

    *waiting* is the command already waiting to run for this agent here, if any.
    """
    if sender_kind != ParticipantKind.PERSON or sender_trust != Trust.FULL:
        return (f"{asked.shown} was not run: only a person with trust full may run a command "
                f"in @{agent}'s session.")
    if waker != Waker.CLAUDE_CODE:
        return (f"{asked.shown} was not run: @{agent} is not a Claude Code agent, and only "
                "Claude Code agents take commands.")
    if asked.word not in COMMANDS:
        known = ", ".join(f"/{c}" for c in COMMANDS)
        return f"{asked.shown} was not run: the commands a session takes from here are {known}."
    if asked.extra:
        return f"{asked.shown} was not run: a command runs alone, with nothing after it."
    if waiting:
        return (f"{asked.shown} was not run: /{waiting} is still waiting to run in "
                f"@{agent}'s session here; one command at a time.")
    return ""


def output_note(word: str, agent: str, output: str, limit: int) -> str:
    """The system note carrying a command's output into the Mood, within *limit* characters."""
    head = f"/{word} in @{agent}'s session here:\n"
    body = output.strip() or "(it printed nothing)"
    if len(head) + len(body) > limit:
        cut = "\n[output cut]"
        body = body[:max(0, limit - len(head) - len(cut))] + cut
    return head + body
