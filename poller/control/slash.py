"""A person's slash command to an agent's session: ``@agent /compact`` in a Mood.

A post that is nothing but an agent's handle and a slash command asks the
poller to run that command in the agent's session for the Mood (Claude
Code's) and post what it printed.  Four commands pass (:data:`COMMANDS`):
they look at or tidy the session and change nothing else.  Only a person
with trust ``full`` may ask, only of an agent whose waker takes commands,
one command at a time per agent and Mood; anything else is refused with a
one-line note in the Mood (:func:`refusal`), a system note: the agent is
never woken by it.

Everything here is pure but for the wakers' capabilities, read from their
registry: text in, values out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from poller.kinds import ParticipantKind, Trust
from poller.turns import registry

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

    *waker* is the name of the agent's waker; *waiting* is the command already
    waiting to run for this agent here, if any.
    """
    if sender_kind != ParticipantKind.PERSON or sender_trust != Trust.FULL:
        return (f"{asked.shown} was not run: only a person with trust full may run a command "
                f"in @{agent}'s session.")
    if not registry.capabilities(waker).takes_commands:
        return f"{asked.shown} was not run: {no_commands(agent)}"
    if asked.word not in COMMANDS:
        known = ", ".join(f"/{c}" for c in COMMANDS)
        return f"{asked.shown} was not run: the commands a session takes from here are {known}."
    if asked.extra:
        return f"{asked.shown} was not run: a command runs alone, with nothing after it."
    if waiting:
        return (f"{asked.shown} was not run: /{waiting} is still waiting to run in "
                f"@{agent}'s session here; one command at a time.")
    return ""


def no_commands(agent: str) -> str:
    """Why an agent whose waker takes no commands runs none, naming the wakers that do."""
    takers = " or ".join(cls.title for cls in registry.every() if cls.takes_commands)
    if not takers:
        return f"@{agent}'s waker takes no commands, and no waker here does."
    return f"@{agent} is not a {takers} agent, and only {takers} agents take commands."


def output_note(word: str, agent: str, output: str, limit: int) -> str:
    """The system note carrying a command's output into the Mood, within *limit* characters."""
    head = f"/{word} in @{agent}'s session here:\n"
    body = output.strip() or "(it printed nothing)"
    if len(head) + len(body) > limit:
        cut = "\n[output cut]"
        body = body[:max(0, limit - len(head) - len(cut))] + cut
    return head + body
