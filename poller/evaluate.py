"""Decide: for one due listener, weigh each kind that is due with ``law.decide``.

Runs inside one short write transaction that claims the listener.  Every
decision is recorded with its reason code; skips, holds and deferrals update
the listener here.  A decision to wake stops the weighing and returns a
:class:`poller.draft.Draft`, gathered in the same transaction, for the
cycle to compose and record (:mod:`poller.draft`).
"""

from __future__ import annotations

import datetime as dt
from typing import Optional

from poller import draft as drafts, law
from poller.context import Context, TickReport, log_decision
from poller.kinds import Outcome, ParticipantKind, WakeKind
from poller.models import Listener
from poller.store import cycle
from poller.text import iso
from poller.values import AgentInfo, MoodInfo

HOLD_WORDS = {
    "busy": "it is in the middle of a turn here and will answer when that ends",
    "no-free-slot": "all its turn slots are in use; it will answer when one frees up",
    "hourly-cap": "it has reached its wakes-per-hour limit; it will answer when that allows",
    "listening-off": "its listening is off here; it will answer when listening is back on",
    "bot-loop": ("agents have been mentioning each other with no person in between; "
                 "it will answer once a person posts"),
}


def due_kinds(l: Listener, owed: list[int], now: dt.datetime) -> list[str]:
    """The kinds due on this listener, in the order they are weighed."""
    kinds = []
    if owed:
        kinds.append(WakeKind.MENTION)
    if l.arrival_signin_id:
        kinds.append(WakeKind.ARRIVAL)
    if l.consider_from_id and l.consider_due_at and l.consider_due_at <= now:
        kinds.append(WakeKind.CONSIDER)
    if l.quiet_due_at and l.quiet_due_at <= now:
        kinds.append(WakeKind.QUIET)
    if l.followup_of and l.followup_due_at and l.followup_due_at <= now:
        kinds.append(WakeKind.CUT_OFF)
    return kinds


def evaluate(ctx: Context, s, agent_id: int, mood_id: int, now: dt.datetime,
             report: TickReport) -> Optional[drafts.Draft]:
    """Weigh what is due on (agent, Mood); a Draft if the agent is to be woken."""
    l = cycle.claim_listener(s, agent_id, mood_id)
    if l is None or l.due_at is None or l.due_at > now:
        return None  # another poller took it, or it is no longer due
    cycle.lock_agent(s, agent_id)
    agent, mood = ctx.agents[agent_id], cycle.mood(s, mood_id)
    resolved = ctx.settings.resolve(mood_id, agent_id, now)
    values = {k: r.value for k, r in resolved.items()}
    owed = cycle.owed_posts(s, agent_id, mood_id)
    base: Optional[dict] = None  # read only when a kind gets past the settings' gates
    retry: list[Optional[dt.datetime]] = []
    for kind in due_kinds(l, owed, now):
        decision = law.gate(kind, now, values, mood.archived, resolved["listening"].until)
        if decision is None:
            base = base or base_facts(ctx, s, l, mood, resolved, values, now)
            decision = law.decide(law.Facts(kind=kind, **base,
                                            **kind_facts(ctx, s, kind, l, owed, now)))
        if decision.outcome == Outcome.WAKE:
            d = drafts.gather(ctx, s, kind, l, agent, mood, values, owed, now)
            d.fingerprint, d.decision = cycle.fingerprint(s, l, now), decision
            return d
        new = cycle.record_decision(s, agent_id, mood_id, kind, decision.outcome,
                                    decision.reason, decision.next_due, now)
        report.decisions.append((agent.handle, mood.slug, kind, decision.code))
        log_decision(agent.handle, mood.slug, kind, decision, new)
        retry.append(after(ctx, s, decision, kind, l, agent, mood, owed, now))
    if not owed and l.hold_reason:
        l.hold_reason, l.hold_since = None, None
    pending = [t for t in retry if t is not None]
    untried = cycle.next_due(l, False, now)
    if untried is not None:  # e.g. the next arrival, due now: looked at next cycle
        pending.append(max(untried, now))
    l.due_at = min(pending) if pending else None
    return None


def base_facts(ctx: Context, s, l: Listener, mood: MoodInfo, resolved: dict, values: dict,
               now: dt.datetime) -> dict:
    """The facts every kind shares: settings, the Mood, the agent's load and caps."""
    return dict(
        now=now, settings=values, archived=mood.archived,
        listening_until=resolved["listening"].until,
        busy_here=cycle.in_flight_here(s, l.agent_id, l.mood_id) is not None,
        running_for_agent=cycle.running_count(s, l.agent_id),
        wakes_last_hour=cycle.wake_times(s, l.agent_id, now - law.HOUR),
        cooldown_until=l.cooldown_until, bot_chain_cap=ctx.cfg.bot_chain_cap)


def kind_facts(ctx: Context, s, kind: str, l: Listener, owed: list[int],
               now: dt.datetime) -> dict:
    """The facts only one kind needs."""
    recent = now - dt.timedelta(seconds=ctx.cfg.person_recent)
    if kind == WakeKind.MENTION:
        return {"bot_chain": bot_chain(ctx, s, l, owed)}
    if kind == WakeKind.ARRIVAL:
        who = cycle.signin(s, l.arrival_signin_id)
        said = cycle.last_said_at(s, who.participant_id, l.mood_id)
        greet_since = now - dt.timedelta(seconds=ctx.cfg.greet_window)
        return {"arrival_is_self": who.participant_id == l.agent_id,
                "arrival_spoke_recently": said is not None and said > recent,
                "arrival_greeted_recently": cycle.greeted_since(
                    s, l.agent_id, l.mood_id, who.participant_id, greet_since)}
    if kind == WakeKind.CONSIDER:
        return {"considers_last_hour": cycle.wake_times(s, l.agent_id, now - law.HOUR,
                                                        l.mood_id, WakeKind.CONSIDER)}
    return {"person_recent": l.last_person_at is not None and l.last_person_at > recent}


def bot_chain(ctx: Context, s, l: Listener, owed: list[int]) -> int:
    """Agents' posts in a row up to the newest mention, when only agents mentioned it."""
    if not all(x.kind == ParticipantKind.AGENT for x in cycle.senders(s, owed)):
        return 0
    newest = max(owed)
    if l.last_person_id and l.last_person_id > newest:
        return 0  # a person spoke since: the loop is broken
    lo = l.last_person_id if l.last_person_id and l.last_person_id < newest else 0
    return cycle.agent_posts_between(s, l.mood_id, lo, newest, ctx.cfg.bot_chain_cap + 1) - 1


def after(ctx: Context, s, decision: law.Decision, kind: str, l: Listener, agent: AgentInfo,
          mood: MoodInfo, owed: list[int], now: dt.datetime) -> Optional[dt.datetime]:
    """Apply a decision not to wake; returns when to look again."""
    if decision.outcome == Outcome.SKIP:
        if kind == WakeKind.ARRIVAL:
            l.arrival_signin_id = drafts.next_arrival(ctx, s, l, now)
        elif kind == WakeKind.CONSIDER:
            l.consider_from_id, l.consider_due_at = 0, None
        elif kind == WakeKind.QUIET:
            l.quiet_due_at = None  # until someone speaks again
        elif kind == WakeKind.CUT_OFF:
            l.followup_of, l.followup_due_at = 0, None
        return None
    renew = now + dt.timedelta(seconds=ctx.cfg.hold_renew)
    if decision.outcome == Outcome.HOLD:
        if l.hold_reason != decision.reason:
            l.hold_reason, l.hold_since = decision.reason, now
            hold_note(ctx, s, agent, mood, decision, len(owed), now)
        if decision.reason == "no-free-slot":
            return now  # a slot frees when any of its turns ends: look each cycle
    return decision.next_due or renew


def hold_note(ctx: Context, s, agent: AgentInfo, mood: MoodInfo, decision: law.Decision,
              count: int, now: dt.datetime) -> None:
    """Say once, in the Mood, that the agent is holding its mentions and why."""
    words = HOLD_WORDS.get(decision.reason, decision.reason)
    when = f" (until {iso(decision.next_due)})" if decision.next_due else ""
    plural = "mention" if count == 1 else "mentions"
    body = f"@{agent.handle} is holding {count} {plural}: {words}{when}."
    cycle.add_system_post(s, mood.id, agent.id, body, now, ctx.counter.count(body))
