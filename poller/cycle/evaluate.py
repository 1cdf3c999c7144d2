"""Decide: for a batch of due listeners, weigh each kind that is due with ``law.decide``.

Runs inside one short write transaction that claims the batch's listeners and
reads their facts with a handful of set queries (:mod:`poller.store.facts`).
Each pair is weighed in Python; every decision is recorded with its reason
code, and skips, holds and deferrals update the listener; the batch's
listeners and decisions are then written with one executemany each.  A
decision to wake stops the weighing of that pair and yields a
:class:`poller.cycle.drafts.Draft`, gathered in the same transaction, for the cycle
to compose and record (:mod:`poller.cycle.drafts`).  A pair whose weighing raises
is left out (its listener as it was) and returned to be set aside; the rest
of the batch goes on.

One floor per Mood: where several agents are due in one Mood, their pairs are
weighed in :func:`poller.law.initiative` order, and the first to be woken
unasked (a consider, quiet look or arrival) takes the floor; the law defers
the others' unprompted kinds (``deferred:floor-taken-by-<agent>``), and so
while that turn is in flight.  Its reply (or silence) makes them due again.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Optional

from poller import kinds, law
from poller.cycle import drafts
from poller.cycle import due, presence
from poller.cycle.context import Context, TickReport, log_decision
from poller.kinds import Outcome, ParticipantKind, Trust, WakeKind
from poller.store import cycle, facts, prefetch
from poller.store.facts import ListenerRow
from poller.text import iso
from poller.values import AgentInfo, MoodInfo

HOLD_WORDS = {
    "busy": "it is in the middle of a turn here and will answer when that ends",
    "no-free-slot": "all its turn slots are in use; it will answer when one frees up",
    "hourly-cap": "it has reached its wakes-per-hour limit; it will answer when that allows",
    "listening-off": "its listening is off here; it will answer when listening is back on",
    "stopped": "stopped here until `mood-poller stop --lift` (or a trusted person's "
               "\"@agent resume\")",
    "bot-loop": ("agents have been mentioning each other with no person in between; "
                 "it will answer once a person posts"),
    "over-budget": ("it has spent its daily budget; it will answer when the budget starts "
                    "again at midnight in this Mood's time zone"),
}


def remembered_consider(l, values: dict, archived: bool, now: dt.datetime,
                        since: Optional[dt.datetime] = None) -> None:
    """Posts missed while listening was ``mentions`` or ``off`` are considered once it is
    back on: ``consider_after`` from the switch (*since*, when listening took the value
    ``on``; else from when this pair is first looked at with it on), never later than
    ``consider_after`` from now (the settings' change makes every such pair due at
    once), within the usual budget."""
    if (l.consider_from_id and l.consider_due_at is None and values["listening"] == "on"
            and not archived and not l.stopped_at):
        after = dt.timedelta(seconds=values["consider_after"])
        l.consider_due_at = min(since, now) + after if since is not None else now + after


def remembered_follow_up(l, values: dict, archived: bool, now: dt.datetime) -> None:
    """A cut-off turn's follow-up that waited (it was skipped: stopped, listening down)
    comes due once this pair is looked at with listening on again."""
    if (l.followup_of and l.followup_due_at is None and values["listening"] == "on"
            and not archived and not l.stopped_at):
        l.followup_due_at = now


@dataclass
class Decided:
    """A batch weighed: the wakes to compose, what to report, the pairs to set aside."""

    drafts: list[drafts.Draft] = field(default_factory=list)
    said: list[tuple[str, str, str, law.Decision, bool]] = field(default_factory=list)
    bad: list[tuple[tuple[int, int], Exception]] = field(default_factory=list)

    def tell(self, report: TickReport) -> None:
        """Report and log the decisions, once the batch is committed."""
        for agent, mood, kind, decision, new in self.said:
            report.decisions.append((agent, mood, kind, decision.code))
            log_decision(agent, mood, kind, decision, new)


def evaluate(ctx: Context, s, pairs: list[tuple[int, int]], now: dt.datetime) -> Decided:
    """Claim and weigh the due (agent, Mood) *pairs*, in order; record what was decided.

    A database error is raised (the transaction may be unusable: the caller
    weighs the pairs again one by one); any other error sets its pair aside.
    """
    batch = facts.claim(s, pairs, now, screening=ctx.screen is not None)
    out = Decided()
    order = [p for p in by_initiative(ctx, batch, pairs, now) if p in batch.listeners]
    owed = {p: l.owed for p, l in batch.listeners.items()}
    # The wakes' reads in sets: each kind for all the pairs not weighed yet, at its first.
    with prefetch.batch(s, order, owed) as sets:
        for pair in order:
            sets.at(pair)
            weigh_one(ctx, s, batch, batch.listeners[pair], out, sets, now)
    facts.write(s, batch, skip=[pair for pair, _ in out.bad])
    return out


def weigh_one(ctx: Context, s, batch: facts.Batch, l: ListenerRow, out: Decided,
              sets: prefetch.Prefetch, now: dt.datetime) -> None:
    """Weigh one pair of the batch into *out*; a pair whose weighing raises is set aside."""
    mark, notes = len(batch.decisions), []
    try:
        draft, said = weigh(ctx, s, batch, l, notes, now)
    except cycle.DATABASE_ERRORS:
        raise
    except Exception as exc:  # this pair's data broke it: set it aside, go on
        l.restore()
        del batch.decisions[mark:]
        out.bad.append(((l.agent_id, l.mood_id), exc))
        return
    for body in notes:
        cycle.add_system_post(s, l.mood_id, l.agent_id, body, now, ctx.counter.count(body))
        sets.wrote_in(l.mood_id)
    out.said += said
    if draft is not None:
        out.drafts.append(draft)


def weigh(ctx: Context, s, batch: facts.Batch, l: ListenerRow, notes: list[str],
          now: dt.datetime) -> tuple[Optional[drafts.Draft], list]:
    """Weigh what is due on one pair; a Draft if the agent is to be woken, and what was said."""
    agent, mood = ctx.agents[l.agent_id], batch.moods[l.mood_id]
    resolved = ctx.settings.resolve(l.mood_id, l.agent_id, now)
    values = ctx.settings.values(l.mood_id, l.agent_id, now)
    owed, load = l.owed, batch.load[l.agent_id]
    absence = batch.away.get(l.agent_id)
    here = presence.current()
    base: Optional[dict] = None  # read only when a kind gets past the settings' gates
    retry: list[Optional[dt.datetime]] = []
    said = []
    remembered_consider(l, values, mood.archived, now, resolved["listening"].since)
    remembered_follow_up(l, values, mood.archived, now)
    for kind in due.due_kinds(l, owed, now):
        decision = law.gate(kind, now, values, mood.archived, resolved["listening"].until,
                            bool(l.stopped_at))
        weighed = None
        if decision is None:
            base = base or dict(base_facts(ctx, load, l, mood, resolved, values, now,
                                           batch.floor_holder(l.agent_id, l.mood_id)),
                                **budget_facts(s, l, values, now))
            extra = {**kind_facts(ctx, s, kind, l, owed, now), **mood_facts(batch, kind, l)}
            if absence is not None:
                extra["away"] = here.fact(s, absence, l, kind, owed)
            weighed = law.Facts(kind=kind, **{**base, **extra})
            decision = law.decide(weighed)
        if decision.outcome == Outcome.WAKE:
            judges = here.judges(weighed.away) if weighed and weighed.away else ()
            d = drafts.gather(ctx, s, kind, l, agent, mood, values, owed, now,
                              absence=absence, judges=judges)
            d.fingerprint, d.decision = batch.fingerprint(l, now), decision
            load.planned(l.mood_id, now)  # the pairs after this one see its wake
            if kinds.spec(kind).unprompted:
                batch.took_floor(l.agent_id, agent.handle, l.mood_id)  # and its floor
            return d, said
        new = batch.decide(l, kind, decision.outcome, decision.reason, decision.next_due)
        said.append((agent.handle, mood.slug, kind, decision, new))
        retry.append(after(ctx, s, decision, kind, l, agent, owed, notes, now))
        if absence is not None:
            here.noted(s, absence, l, agent, owed, values, decision, notes, now)
    if not owed and l.hold_reason:
        l.hold_reason, l.hold_since = None, None
    pending = [t for t in retry if t is not None]
    untried = due.next_due(l, False, now)
    if untried is not None:  # e.g. the next arrival, due now: looked at next cycle
        pending.append(max(untried, now))
    l.due_at = min(pending) if pending else None
    return None, said


def base_facts(ctx: Context, load: facts.Load, l: ListenerRow, mood: MoodInfo, resolved: dict,
               values: dict, now: dt.datetime, floor_holder: Optional[str] = None) -> dict:
    """The facts every kind shares: settings, the Mood, the agent's load and caps, the
    floor, and whether it is out."""
    return dict(
        now=now, settings=values, archived=mood.archived,
        listening_until=resolved["listening"].until, stopped=bool(l.stopped_at),
        busy_here=l.mood_id in load.here, running_for_agent=load.running,
        wakes_last_hour=tuple(load.woke),
        cooldown_until=l.cooldown_until, bot_chain_cap=ctx.cfg.bot_chain_cap,
        floor_holder=floor_holder)


def budget_facts(s, l: ListenerRow, values: dict, now: dt.datetime) -> dict:
    """What the agent spent today (since midnight in the Mood's zone), read only when a
    daily budget applies here."""
    if not (values["max_usd_per_day"] or values["max_usd_per_day_all_moods"]):
        return {}
    here, everywhere = cycle.spent_since(s, l.agent_id, l.mood_id,
                                         law.day_start(now, values["timezone"]))
    return {"spent_here": here, "spent_all": everywhere}


def by_initiative(ctx: Context, batch: facts.Batch, pairs: list[tuple[int, int]],
                  now: dt.datetime) -> list[tuple[int, int]]:
    """The pairs in the order they are weighed: as given, but where several agents are
    due in one Mood, theirs take that Mood's places in :func:`law.initiative` order (the
    first that may speak unasked takes the floor).  With one agent a Mood, as given."""
    crowds: dict[int, list[tuple[int, int]]] = {}
    for pair in pairs:
        if pair in batch.listeners:
            crowds.setdefault(pair[1], []).append(pair)
    ordered = {m: iter([(s.agent_id, m) for s in standings(ctx, batch, m, [a for a, _ in ps], now)])
               for m, ps in crowds.items() if len(ps) > 1}
    if not ordered:
        return pairs
    return [next(ordered[p[1]]) if p[1] in ordered and p in batch.listeners else p
            for p in pairs]


def standings(ctx: Context, batch: facts.Batch, mood_id: int, agent_ids: list[int],
              now: dt.datetime) -> list[law.Standing]:
    """The initiative order of these agents in the Mood, from the batch's facts."""
    contenders = []
    for a in agent_ids:
        values = ctx.settings.values(mood_id, a, now)
        contenders.append(law.Contender(a, ctx.agents[a].handle, values["initiative_speed"],
                                        values["heat"], batch.spoke.get((a, mood_id)),
                                        batch.load[a].running))
    return law.initiative(contenders, now)


def kind_facts(ctx: Context, s, kind: str, l: ListenerRow, owed: list[int],
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
                "arrival_untrusted": who.trust == Trust.NONE,
                "arrival_spoke_recently": said is not None and said > recent,
                "arrival_greeted_recently": cycle.greeted_since(
                    s, l.agent_id, l.mood_id, who.participant_id, greet_since)}
    if kind == WakeKind.CONSIDER:
        return {"considers_last_hour": l.considers}
    return {"person_recent": l.last_person_at is not None and l.last_person_at > recent}


def mood_facts(batch: facts.Batch, kind: str, l: ListenerRow) -> dict:
    """What the Mood says about a consider: its calm, and whether someone is typing."""
    if kind != WakeKind.CONSIDER:
        return {}
    calm, last = batch.calm.get(l.mood_id, (0, None))
    return {"calm_turns": calm, "calm_last": last, "typing_at": batch.moods[l.mood_id].typing_at}


def bot_chain(ctx: Context, s, l: ListenerRow, owed: list[int]) -> int:
    """Agents' posts in a row up to the newest mention, when only agents mentioned it."""
    if not all(kind == ParticipantKind.AGENT for kind in l.sender_kinds):
        return 0
    newest = max(owed)
    if l.last_person_id and l.last_person_id > newest:
        return 0  # a person spoke since: the loop is broken
    lo = l.last_person_id if l.last_person_id and l.last_person_id < newest else 0
    cap = ctx.cfg.bot_chain_cap
    here = cycle.agent_posts_between(s, l.mood_id, lo, newest, cap + 1) - 1
    # Agents may hand a question back and forth between Moods: the row goes on there.
    return max(here, cycle.turns_in_a_row(s, newest, cap + 1))


def after(ctx: Context, s, decision: law.Decision, kind: str, l: ListenerRow, agent: AgentInfo,
          owed: list[int], notes: list[str], now: dt.datetime) -> Optional[dt.datetime]:
    """Apply a decision not to wake; returns when to look again."""
    if decision.outcome == Outcome.SKIP:
        spec = kinds.spec(kind)
        if spec.after_skip:
            spec.after_skip(ctx, s, l, decision, now)
        return None
    renew = now + dt.timedelta(seconds=ctx.cfg.hold_renew)
    if decision.outcome == Outcome.HOLD:
        if l.hold_reason != decision.reason:
            l.hold_reason, l.hold_since = decision.reason, now
            notes.append(hold_note(agent, decision, len(owed)))
        if decision.reason == "no-free-slot":
            return now  # a slot frees when any of its turns ends: look each cycle
    return decision.next_due or renew


def hold_note(agent: AgentInfo, decision: law.Decision, count: int) -> str:
    """What to say once, in the Mood, when the agent holds its mentions: and why."""
    words = HOLD_WORDS.get(decision.reason, decision.reason)
    when = f" (until {iso(decision.next_due)})" if decision.next_due else ""
    plural = "mention" if count == 1 else "mentions"
    return f"@{agent.handle} is holding {count} {plural}: {words}{when}."
