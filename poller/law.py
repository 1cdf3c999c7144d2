"""The scheduling law: one pure ``decide`` for every kind of wake.

Given the facts about one (agent, Mood, kind) at one instant, ``decide``
answers wake, hold, defer or skip, with a reason code an operator can read
(``woke``, ``held:busy``, ``skipped:discretion-reserved``,
``deferred:cooldown-until-2026-11-30T12:00:00Z``) and, when it can know,
when the question is worth asking again.  No database, no clock of its own.

Holds are for mentions only (a mention is owed and must be answered when the
block ends); the unprompted kinds are deferred or skipped instead.

Dollar budgets: an agent that has spent its ``max_usd_per_day`` in a Mood, or
its ``max_usd_per_day_all_moods`` in every Mood together, since midnight in
the Mood's ``timezone`` (facts passed in: ``spent_here``, ``spent_all``) has
its mentions ``held:over-budget`` until the next midnight there and its
unprompted wakes ``skipped:over-budget``.  A person's slash command (kind
``command``) is not conversation: listening, budgets, cooldowns and the floor
do not apply to it, only one turn at a time and the agent's caps.

One floor per Mood: of the agents that could speak unasked in a Mood at once
(a consider, quiet look or arrival), one takes the floor by :func:`initiative`
order and the others are ``deferred:floor-taken-by-<agent>`` until its turn
ends.  Mentions are never subject to the floor.

Calm slows, pressure quickens (one law, :func:`slowed`, for quiet looks and
considers): each quiet look that ends silent doubles the agent's next quiet
wait, and once a Mood's last ``calm_after`` unprompted turns (anyone's) all
ended silent, each further silent one doubles the Mood's consider spacing
(an hour's budget spread evenly: 10 minutes at 6 an hour), never past the
12 h rest.  A quiet look's doubling resets when someone speaks; a Mood's calm
resets when an agent speaks there or a person names one.

Away: while an agent is out on an activity, one gate added by away and back
(:func:`poller.away.gate`, through :func:`add_rule`), right after the Mood's own
(listening, archived), weighs every wake.
Considers, quiet looks, arrivals and the rest are ``skipped:away``.  A
mention earns one *judgment* (it wakes as usual, and the wake asks whether
to come back) only from a person with trust ``full`` who has not had one this
absence, in the Mood the agent left from, while its activity is reachable;
any other mention is ``skipped:away-noted-<why>`` and kept for its return.
Each kind's traits (:class:`poller.kinds.KindSpec`: owed, unprompted, paced,
timed, holds, while_away...) are what the law weighs it by; only the core's
own kinds are named here, for the rules that are theirs alone.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Callable, Optional

from poller import clock, kinds
from poller.kinds import Outcome, WakeKind
from poller.text import iso

HOUR = dt.timedelta(hours=1)
READY_CAP_H = 12.0  # readiness stops growing after this many hours without speaking
REASON_MAX = 64  # the width of decisions.reason
REST = clock.REST  # the longest that calm ever slows a wait to
slowed = clock.slowed  # the law's one way to slow a wait, shared with the store's settling


@dataclass(frozen=True)
class Facts:
    """Everything ``decide`` needs to know about one candidate wake."""

    kind: str
    now: dt.datetime
    settings: dict  # resolved values for this (Mood, agent)
    archived: bool = False
    listening_until: Optional[dt.datetime] = None
    stopped: bool = False  # stopped in this Mood until lifted
    busy_here: bool = False  # a turn of this agent is pending or running in this Mood
    running_for_agent: int = 0  # its turns in flight anywhere
    wakes_last_hour: tuple[dt.datetime, ...] = ()  # this agent's wakes, any Mood
    considers_last_hour: tuple[dt.datetime, ...] = ()  # this agent's considers here
    cooldown_until: Optional[dt.datetime] = None
    bot_chain: int = 0  # agent posts since a person last spoke, up to the mention
    bot_chain_cap: int = 3
    # arrival
    arrival_is_self: bool = False  # the agent itself signed in
    arrival_untrusted: bool = False  # a person with trust none: their words wake nobody, nor their coming
    arrival_spoke_recently: bool = False
    arrival_greeted_recently: bool = False
    # quiet
    person_recent: bool = True
    # the floor: another agent's unprompted turn here, in flight or decided this cycle
    floor_holder: Optional[str] = None
    # calm: the Mood's unprompted turns that ended silent in a row (since an agent
    # last spoke there or a person named one), and when the newest of them ended
    calm_turns: int = 0
    calm_last: Optional[dt.datetime] = None
    typing_at: Optional[dt.datetime] = None  # the Mood's last "someone is typing" signal
    # dollars: what the agent spent since midnight in the Mood's zone, here and in every Mood
    spent_here: float = 0.0
    spent_all: float = 0.0
    # the agent is out: what the organ that sent it out says (poller.away.Away); None: it
    # is at the screen
    away: Optional[Any] = None


@dataclass(frozen=True)
class Decision:
    outcome: str  # wake | hold | defer | skip
    reason: str  # a short code: busy, hourly-cap, discretion-reserved, ...
    next_due: Optional[dt.datetime] = None

    @property
    def code(self) -> str:
        if self.outcome == Outcome.WAKE:
            return "woke"
        word = {"hold": "held", "defer": "deferred", "skip": "skipped"}[self.outcome]
        if self.outcome == Outcome.DEFER and self.next_due is not None:
            return f"{word}:{self.reason}-until-{iso(self.next_due)}"
        return f"{word}:{self.reason}"


WAKE = Decision(Outcome.WAKE, "woke")


# Rules organs add, weighed right after the Mood's own gates (listening, archived):
# away and back's gate (poller.away.gate) is one.  Each takes the Facts and returns a
# Decision, or None to let the next rule speak.
ORGAN_RULES: list[Callable[["Facts"], Optional["Decision"]]] = []


def add_rule(rule: Callable[["Facts"], Optional["Decision"]]) -> None:
    """Weigh *rule* after the Mood's gates (an organ calls this as it is loaded)."""
    if rule not in ORGAN_RULES:
        ORGAN_RULES.append(rule)


# Each reason a decision gives, as an operator reads it beside the code (`why`).
REASONS: dict[str, str] = {
    "woke": "it was woken",
    "archived": "the Mood is archived",
    "listening-off": "listening is off for it here",
    "listening-mentions": "it listens only for mentions here, and this was not one",
    "stopped": "it is stopped here until someone resumes it",
    "bot-loop": "agents kept mentioning each other with no person in between",
    "over-budget": "its dollar budget for the day is spent",
    "busy": "a turn of it is already running here",
    "busy-elsewhere": "it has as many turns running as parallel_turns allows",
    "no-free-slot": "it has as many turns running as parallel_turns allows",
    "hourly-cap": "it was woken max_wakes_per_hour times in the last hour",
    "cooldown": "its last turn here ended less than the cooldown ago",
    "consider-budget": "considers_per_hour is used up here for this hour",
    "considers-off": "considers_per_hour is 0 here",
    "calm": "people are still talking (consider_after has not passed since the newest post)",
    "typing": "someone is typing here",
    "idle-off": "idle_after is 0 here: no quiet looks",
    "no-person-recently": "no person has spoken here in the last 12 hours",
    "spoke-recently": "the person who arrived spoke here in the last 12 hours",
    "greeted-recently": "the person who arrived was greeted in the last 12 hours",
    "arrival-is-self": "the arrival was its own",
    "arrival-untrusted": "the person who arrived has trust none (greet_strangers is off)",
    "discretion-reserved": "its discretion here is reserved",
}


def add_reason(reason: str, sentence: str) -> None:
    """Say in words what an organ's reason code means (an organ calls this as it is loaded)."""
    REASONS[reason] = sentence


def explain(reason: str) -> str:
    """The sentence for *reason* ("" for one nobody explained)."""
    return REASONS.get(reason, "")


def decide(f: Facts) -> Decision:
    """Apply the law, first blocking rule wins."""
    for rule in (_gates, *ORGAN_RULES, _kind_rules, _budget, _capacity, _pacing, _floor):
        verdict = rule(f)
        if verdict is not None:
            return verdict
    return WAKE


def gate(kind: str, now: dt.datetime, settings: dict, archived: bool = False,
         listening_until: Optional[dt.datetime] = None,
         stopped: bool = False) -> Optional[Decision]:
    """The rules that need no facts beyond the settings and the Mood (listening,
    archived): what ``decide`` would say first, or None.  The loop asks this
    before it reads anything else, so a pair the settings rule out costs nothing."""
    return _gates(Facts(kind=kind, now=now, settings=settings, archived=archived,
                        listening_until=listening_until, stopped=stopped))


def _blocked(f: Facts, reason: str, next_due: Optional[dt.datetime] = None) -> Decision:
    """A mention is held (it stays owed); anything else (a cut-off's follow-up too) is deferred."""
    held = kinds.spec(f.kind).holds
    return Decision(Outcome.HOLD if held else Outcome.DEFER, reason, next_due)


def _gates(f: Facts) -> Optional[Decision]:
    k = kinds.spec(f.kind)
    if f.stopped:  # until lifted: mentions wait, the rest is remembered (see evaluate)
        if k.timed or not k.dials_apply:
            # a person's command waits for it too; what was asked for at a time is kept:
            # once lifted, one (late) wake for what came due
            return Decision(Outcome.DEFER, "stopped")
        return Decision(Outcome.HOLD if k.holds else Outcome.SKIP, "stopped")
    if k.timed:
        return None  # asked for at a time: kept whatever the listening and the Mood's state
    listening = f.settings["listening"]
    if not k.dials_apply:
        return None  # a person's command, not conversation: run whatever the Mood's dials
    if not k.owed and f.archived:
        return Decision(Outcome.SKIP, "archived")
    if listening == "off":
        if k.owed:
            return _blocked(f, "listening-off", f.listening_until)
        return Decision(Outcome.SKIP, "listening-off")
    if listening == "mentions" and not k.owed:
        return Decision(Outcome.SKIP, "listening-mentions")
    return None


def _kind_rules(f: Facts) -> Optional[Decision]:
    if f.kind == WakeKind.ARRIVAL:
        if f.arrival_is_self:
            return Decision(Outcome.SKIP, "arrival-is-self")
        if f.arrival_untrusted and f.settings.get("greet_strangers", "off") != "on":
            return Decision(Outcome.SKIP, "arrival-untrusted")
        if f.settings["discretion"] == "reserved":
            return Decision(Outcome.SKIP, "discretion-reserved")
        if f.arrival_spoke_recently:
            return Decision(Outcome.SKIP, "spoke-recently")
        if f.arrival_greeted_recently:
            return Decision(Outcome.SKIP, "greeted-recently")
    elif f.kind == WakeKind.QUIET:
        if f.settings["idle_after"] == 0:
            return Decision(Outcome.SKIP, "idle-off")
        if not f.person_recent:
            return Decision(Outcome.SKIP, "no-person-recently")
    elif f.kind == WakeKind.CONSIDER and f.settings["considers_per_hour"] == 0:
        return Decision(Outcome.SKIP, "considers-off")
    elif f.kind == WakeKind.MENTION and f.bot_chain >= f.bot_chain_cap:
        return Decision(Outcome.HOLD, "bot-loop")
    return None


def over_budget(f: Facts) -> bool:
    """Has the agent spent a daily budget (0: none) that applies here?"""
    here, everywhere = f.settings["max_usd_per_day"], f.settings["max_usd_per_day_all_moods"]
    return bool((here and f.spent_here >= here) or (everywhere and f.spent_all >= everywhere))


def _budget(f: Facts) -> Optional[Decision]:
    k = kinds.spec(f.kind)
    if not k.dials_apply or not over_budget(f):
        return None
    if k.unprompted:
        return Decision(Outcome.SKIP, "over-budget")
    # A mention is held (a cut-off's follow-up deferred) until the budgets start again.
    return _blocked(f, "over-budget", next_midnight(f.now, f.settings["timezone"]))


def _zone(name: str) -> dt.tzinfo:
    if name == "UTC":
        return dt.timezone.utc  # needs no zone data
    import zoneinfo

    return zoneinfo.ZoneInfo(name)


def day_start(now: dt.datetime, zone: str) -> dt.datetime:
    """The last midnight in *zone* (an IANA name) at or before *now*, in UTC."""
    tz = _zone(zone)
    local = now.astimezone(tz)
    return dt.datetime.combine(local.date(), dt.time(0), tz).astimezone(dt.timezone.utc)


def next_midnight(now: dt.datetime, zone: str) -> dt.datetime:
    """The next midnight in *zone* after *now*, in UTC: when daily budgets start again."""
    tz = _zone(zone)
    tomorrow = now.astimezone(tz).date() + dt.timedelta(days=1)
    return dt.datetime.combine(tomorrow, dt.time(0), tz).astimezone(dt.timezone.utc)


def _capacity(f: Facts) -> Optional[Decision]:
    if f.busy_here:
        return _blocked(f, "busy")
    if f.running_for_agent >= f.settings["parallel_turns"]:
        return _blocked(f, "no-free-slot")
    cap = f.settings["max_wakes_per_hour"]
    recent = sorted(t for t in f.wakes_last_hour if t > f.now - HOUR)
    if len(recent) >= cap:
        free_at = recent[len(recent) - cap] + HOUR if cap else None
        return _blocked(f, "hourly-cap", free_at)
    return None


def _pacing(f: Facts) -> Optional[Decision]:
    if not kinds.spec(f.kind).paced:
        # mentions, a cut-off's follow-up, commands, a return's pings and what was asked
        # for at a time are never cooled down
        return None
    if f.cooldown_until is not None and f.cooldown_until > f.now:
        return Decision(Outcome.DEFER, "cooldown", f.cooldown_until)
    if f.kind == WakeKind.CONSIDER and f.typing_at and f.typing_at + TYPING_HOLD > f.now:
        # Someone is still writing: weigh in once they have said it.
        return Decision(Outcome.DEFER, "typing", f.typing_at + TYPING_HOLD)
    if f.kind == WakeKind.CONSIDER and f.running_for_agent:
        # At work elsewhere: it would weigh in on talk here with its mind on other work.
        return Decision(Outcome.DEFER, "busy-elsewhere", f.now + BUSY_ELSEWHERE_RECHECK)
    if f.kind == WakeKind.CONSIDER:
        budget = f.settings["considers_per_hour"]
        recent = sorted(t for t in f.considers_last_hour if t > f.now - HOUR)
        if len(recent) >= budget:
            return Decision(Outcome.DEFER, "consider-budget", recent[len(recent) - budget] + HOUR)
        return _calm(f)
    return None


def _calm(f: Facts) -> Optional[Decision]:
    """A consider in a calm Mood waits out the Mood's slowed spacing since its last turn."""
    n = f.settings["calm_after"]
    if not n or f.calm_turns < n or f.calm_last is None:
        return None
    spacing = slowed(3600 / f.settings["considers_per_hour"], f.calm_turns - n + 1)
    if f.calm_last + spacing > f.now:
        return Decision(Outcome.DEFER, "calm", f.calm_last + spacing)
    return None


BUSY_ELSEWHERE_RECHECK = dt.timedelta(seconds=30)  # a consider waits out a turn elsewhere
TYPING_HOLD = dt.timedelta(seconds=15)  # a consider waits this long after a typing signal


def _floor(f: Facts) -> Optional[Decision]:
    """Last: only an agent that could otherwise speak unasked gives way to the floor."""
    if kinds.spec(f.kind).unprompted and f.floor_holder:
        return Decision(Outcome.DEFER, f"floor-taken-by-{f.floor_holder}"[:REASON_MAX])
    return None


# -- Initiative ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Contender:
    """One agent that could take the floor in a Mood, as :func:`initiative` weighs it."""

    agent_id: int
    handle: str
    speed: float = 1.0  # the initiative_speed setting
    heat: float = 0.0  # the heat setting for this Mood
    last_spoke: Optional[dt.datetime] = None  # its newest post here
    load: int = 0  # its turns in flight anywhere


@dataclass(frozen=True)
class Standing:
    """A contender's place: its score and what it was made of."""

    agent_id: int
    handle: str
    score: float
    readiness_h: float
    speed: float
    heat: float
    load: int


def readiness(last_spoke: Optional[dt.datetime], now: dt.datetime) -> float:
    """Hours since it last spoke here, up to :data:`READY_CAP_H` (never spoke: the cap)."""
    if last_spoke is None:
        return READY_CAP_H
    return min(max((now - last_spoke).total_seconds() / 3600, 0.0), READY_CAP_H)


def initiative(contenders, now: dt.datetime) -> list[Standing]:
    """The initiative order, first to take the floor first.

    score = heat + speed x readiness - load: an agent that has not spoken here
    for a while, runs fast or hot, and is not busy elsewhere goes first; equal
    scores go to the lower agent id, so the order never depends on the caller's.
    """
    out = []
    for c in contenders:
        ready = readiness(c.last_spoke, now)
        score = round(c.heat + c.speed * ready - c.load, 3)
        out.append(Standing(c.agent_id, c.handle, score, round(ready, 3), c.speed, c.heat, c.load))
    return sorted(out, key=lambda s: (-s.score, s.agent_id))
