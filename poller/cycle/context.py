"""What every step of a cycle shares: the store, the knobs, the settings, the report."""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field
from typing import Callable, Optional

from poller import law

from poller.config import Config, PollerConfig
from poller.store import Store
from poller.store.cycle import SettingsCache
from poller.values import AgentInfo
from wiki_rules.fallback import BUILT_IN, DialWords

log = logging.getLogger("poller.loop")


@dataclass
class Planned:
    """A wake recorded this cycle (or, in a dry run, one that would be)."""

    wake_id: Optional[int]
    agent: str
    mood: str
    kind: str
    tools: str
    text: str
    answers: list[int]


@dataclass
class TickReport:
    started: bool = True  # False: another poller holds the lease
    holder: str = ""
    scram: bool = False
    posts_read: int = 0
    signins_read: int = 0
    due: int = 0
    wakes: list[Planned] = field(default_factory=list)
    decisions: list[tuple[str, str, str, str]] = field(default_factory=list)  # agent, mood, kind, code
    recovered: int = 0
    abandoned: int = 0  # wakes composed but not recorded: the listener changed meanwhile
    quarantined: int = 0  # listeners set aside this cycle because evaluating them raised
    screen_tokens: int = 0  # what asking the screen cost this cycle
    returned: int = 0  # agents back from an activity this cycle


@dataclass(frozen=True)
class Step:
    """What a step of the cycle is handed besides the context: the cycle's own
    transactions (a dry run's savepoints, in ``preview`` and ``tick --dry-run``), the
    Moods this poller serves (None: every one), and this poller."""

    writing: Callable  # () -> a context manager yielding a write session
    reading: Callable  # () -> one yielding a read session
    served: Optional[frozenset[int]] = None
    holder: str = ""  # this poller, as its claims name it
    booted_at: Optional[dt.datetime] = None  # when `run` started (None: a single tick)
    start: Optional[Callable] = None  # (wake_id, now): start a recorded wake's turn; None: dry
    transient: tuple = ()  # the database errors that retry the whole cycle


@dataclass
class Context:
    """One poller's shared state across the steps of its cycles."""

    store: Store
    config: Config
    settings: SettingsCache = field(default_factory=SettingsCache)
    summarizer: object = None
    screen: object = None  # poller.screen.Screen, when one is configured
    dials: DialWords = BUILT_IN  # this cycle's dial wording, read before any transaction
    agents: dict[int, AgentInfo] = field(default_factory=dict)  # this cycle's agents

    @property
    def cfg(self) -> PollerConfig:
        return self.config.poller

    @property
    def counter(self):
        return self.store.counter


def log_decision(agent: str, mood: str, kind: str, d: law.Decision, new: bool) -> None:
    level = logging.INFO if new else logging.DEBUG
    log.log(level, "%s in %s: %s %s", agent, mood, kind, d.code,
            extra={"action": "decision", "agent": agent, "mood": mood, "kind": kind,
                   "outcome": d.outcome, "reason": d.reason, "code": d.code})


