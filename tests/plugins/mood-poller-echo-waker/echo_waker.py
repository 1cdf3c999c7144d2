"""A waker from outside the poller: it answers each wake itself, in process.

Its reply is a fixed function of the wake it was handed: the option
``prefix``, the wake's kind, how many words it had and the start of its
SHA-256, so whoever reads the reply can tell the whole wake arrived.  It
registers under the entry-point group ``mood_poller.wakers`` (see
``pyproject.toml``), as any outside waker does.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Callable

from poller.turns import wakers


def answer(prefix: str, kind: str, text: str) -> str:
    """The reply to a wake of *kind* whose text is *text*."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return f"{prefix}{kind} wake of {len(text.split())} words, sha256 {digest}"


class EchoWaker(wakers.Waker):
    """Answers in process with :func:`answer`; it keeps no session and reports nothing."""

    name = "echo"
    title = "echo"
    accepts = ("prefix",)

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix

    @classmethod
    def from_agent(cls, agent) -> "EchoWaker":
        return cls((agent.options or {}).get("prefix", ""))

    @classmethod
    def summary(cls, options: dict) -> str:
        return f"echo, prefix {options['prefix']!r}" if options.get("prefix") else "echo"

    def run(self, turn: wakers.TurnRequest, on_start: Callable[[int], None],
            cancel: threading.Event) -> wakers.TurnResult:
        if cancel.is_set():
            return wakers.stopped()
        return wakers.TurnResult("replied", reply=answer(self.prefix, turn.kind, turn.text))
