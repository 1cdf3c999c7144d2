"""Compose and record: a decided wake becomes a draft, its text, then a recorded wake.

The three steps run in three places so nothing slow holds a write lock:

1. :func:`gather` reads what the wake is made of, inside the transaction that
   claimed the listener and made the decision, and takes a fingerprint of the
   listener and the agent's caps;
2. :func:`compose_text` renders it with no transaction open (the summarizer
   may call an LLM);
3. :func:`record_set` opens a short write transaction for the batch's wakes,
   claims their listeners again, and records each wake with the posts it
   answers only if its fingerprint is unchanged, all of them in a few
   statements; a wake whose fingerprint changed is dropped and its listener,
   still due, is looked at again next cycle.  :func:`record` does the same for
   one wake (a schedule's; or each of a batch that broke, to find the one).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Callable, Optional

from poller.wake import compose
from poller import kinds, law
from poller.cycle import due
from poller.cycle.context import Context, Planned, TickReport, log_decision
from poller.kinds import ParticipantKind, Tools, Trust
from poller.store.facts import ListenerRow
from poller.cycle import presence
from poller.store import cycle, facts, reads
from poller.turns import registry
from poller.values import AgentInfo, MoodInfo


@dataclass
class Draft:
    """A wake decided and gathered, not yet composed or recorded."""

    agent: AgentInfo
    mood: MoodInfo
    kind: str
    tools: str
    request: compose.WakeRequest
    answers: list[int]
    about_id: Optional[int]
    seen_id: int
    extras: reads.Extras
    fingerprint: tuple = ()
    decision: Optional[law.Decision] = None
    command: str = ""  # a person's slash command to run as it is (/compact): nothing composed
    absence: object = None  # the agent is out (what the store read of it), for the record
    # What its kind writes with the recorded wake: (s, wake_id, answers, now) each.
    on_record: tuple[Callable, ...] = ()
    # Whether it still stands when recorded, for a wake not decided on a listener's
    # state (a schedule's): (s, listener) -> bool, in place of the fingerprint.
    guard: Optional[Callable] = None
    # Cut-off wakes whose unanswered posts this one answers in their place.
    took_over: tuple[int, ...] = ()


@dataclass(frozen=True)
class Gathering:
    """What a kind's ``gather`` hook is handed: the pair, its settings, what it is owed,
    and where the agent's session here (if any) starts."""

    ctx: Context
    s: object
    l: ListenerRow
    agent: AgentInfo
    mood: MoodInfo
    values: dict
    owed: list[int]
    since: int  # the newest post the agent's live session here holds (0: none)
    held: bool  # it keeps a live session here
    fresh: object  # where its catch-up may start (after a long absence), or None
    now: dt.datetime

    def history(self, after: int, woke: set[int] = frozenset(), keep_from: int = 0):
        """Catch-up candidates after post *after*, fitted to the catch-up budget."""
        return reads.history(self.s, self.mood.id, after, set(woke),
                             self.values["catch_up_tokens"], keep_from=keep_from,
                             fresh=self.fresh)


@dataclass
class Material:
    """What one wake shows: the posts that woke it and the catch-up around them.

    *parts* are the :class:`poller.wake.compose.WakeRequest` fields only its kind
    fills (an arrival's who, a return's pings); a kind declared outside the
    service puts its own in ``parts["parts"]``, which its template reads as
    ``parts``."""

    history: list
    woke: list = field(default_factory=list)
    answers: list[int] = field(default_factory=list)
    earlier: int = 0  # older posts not passed (0 for "the Mood lately": owed to nobody)
    new_after: Optional[int] = None  # posts with a larger id are new to it
    about_id: Optional[int] = None
    parts: dict = field(default_factory=dict)
    on_record: tuple[Callable, ...] = ()
    took_over: tuple[int, ...] = ()  # cut-off wakes whose posts it answers in their place


def lately(g: Gathering, keep_from: int = 0) -> Material:
    """The plain material: the Mood lately, posts after its last look marked new."""
    hist, _ = g.history(g.since, keep_from=keep_from)
    return Material(hist, new_after=g.l.looked_id or 0)


def gather(ctx: Context, s, kind: str, l: ListenerRow, agent: AgentInfo, mood: MoodInfo,
           values: dict, owed: list[int], now: dt.datetime,
           force_tools: Optional[str] = None, absence: object = None,
           judges: tuple[str, ...] = ()) -> Draft:
    """Read everything the wake will say, inside the deciding transaction.

    An agent that keeps a session here (a Claude Code agent resumes one per
    Mood) was shown the Mood up to its last wake in that session: then the
    catch-up starts after that (``since``), and the posts that woke it are only
    those the session has not seen, but for owed mentions, which are always
    shown.  Agents without a session get the full catch-up every time.  What
    the wake shows is its kind's (:attr:`poller.kinds.KindSpec.gather`).

    An agent that may be out (*absence*, *judges*: see :mod:`poller.cycle.presence`)
    is shown what the organ that sent it out says: its activities while it is at
    the screen, a judgment's state line while it is out, a catch-up that starts
    where it left after a long absence.
    """
    spec = kinds.spec(kind)
    if not spec.composed:  # a person's command, run as typed: its kind makes the whole draft
        return spec.gather(Gathering(ctx, s, l, agent, mood, values, owed, 0, False, None, now))
    held = (reads.in_session(s, agent.id, mood.id, now, values.get("archive_after", 0))
            if spec.delta else None)
    since = held.seen_id if held else 0
    g = Gathering(ctx, s, l, agent, mood, values, owed, since, bool(held),
                  presence.current().window(s, agent.id, mood.id), now)
    m = spec.gather(g) if spec.gather else lately(g)
    hist = m.history
    if since:  # its own replies since are in the session already, as it wrote them
        # (notices in its name, such as a hold or a turn that ended without a reply,
        # it never saw: they stay)
        hist = [p for p in hist if not (p.sender_is_agent and p.sender == agent.handle
                                        and p.kind in ("post", "silent"))]
    tools = force_tools or tools_for(s, spec, m.answers)
    shown = {p.id for p in m.woke} | {p.id for p in hist}
    extras = reads.extras(s, agent.id, mood.id, m.woke, shown, now)
    request = compose.WakeRequest(
        kind=kind, mood=mood.slug, mood_title=mood.title, agent=agent.handle, now=now,
        tools=tools, woke=m.woke, history=hist, earlier_count=m.earlier,
        new_after_id=m.new_after,
        also_asked=reads.also_asked(s, m.answers, agent.id, set(ctx.agents)),
        cut_off=reads.cut_off(s, agent.id, mood.id),
        settings_changed=extras.settings_changed, handed=extras.handed,
        refusals=extras.refusals, linked=extras.linked,
        discretion=values["discretion"], verbosity=values["verbosity"],
        dials=ctx.dials, catch_up_tokens=values["catch_up_tokens"],
        timezone=values.get("timezone", "UTC"),
        session_until=held.seen_at if since else None,
        rules=rules_in_wake(agent, values, since, extras),
        checkins=reads.checkin_people(s, agent.id, mood.id),
        **letter(s, agent, mood, values, ctx.agents), **presence.current().parts(agent, absence, kind, judges, now),
        **m.parts)
    # What the session holds is still held: the next delta starts after all of it.
    draft = Draft(agent, mood, kind, tools, request, m.answers, m.about_id,
                  max(shown | {since}), extras, on_record=m.on_record, took_over=m.took_over)
    draft.absence = absence
    return draft


def letter(s, agent: AgentInfo, mood: MoodInfo, values: dict,
           agents: Optional[dict[int, AgentInfo]] = None) -> dict:
    """The letter and who has been here, on the agent's first turn in the Mood; else nothing.
    (*agents*: the others whose first turns a batch may read the people of at once.)"""
    keeps = registry.capabilities(agent.waker).keeps_session
    if not reads.first_turn(s, agent.id, mood.id, keeps_sessions=keeps):
        return {}
    others = agents or {}
    return {"letter": values.get("letter") or compose.kit_letter(),
            "people": reads.people(s, mood.id, agent.id, keeps=lambda a: a not in others or (
                registry.capabilities(others[a].waker).keeps_session))}


def rules_in_wake(agent: AgentInfo, values: dict, since: int, extras: reads.Extras) -> str:
    """The Mood's rules, when this wake carries them: for agents whose instructions come
    in the wake (not Claude Code's: --append-system-prompt), on a fresh start and
    whenever they changed."""
    if not registry.capabilities(agent.waker).instructions_in_wake or not values.get("rules"):
        return ""
    changed = any(c.key == "rules" for c in extras.settings_changed)
    return values["rules"] if not since or changed else ""


def tools_for(s, spec: kinds.KindSpec, answers: list[int]) -> str:
    """Full tools only for a kind that grants them by its senders (a mention, a return's
    missed pings) when every sender is a fully trusted person."""
    if not spec.tools_by_senders:
        return Tools.LOOK
    senders = reads.senders(s, answers)
    if senders and all(x.kind == ParticipantKind.PERSON and x.trust == Trust.FULL
                       for x in senders):
        return Tools.FULL
    return Tools.LOOK


def compose_text(ctx: Context, draft: Draft) -> compose.ComposedWake:
    """Render the wake: templates, catch-up and summary. Runs with no transaction open."""
    if draft.command:
        return compose.ComposedWake(draft.command, ctx.counter.count(draft.command), 0, 0, 0, 0, "none")
    return compose.compose(draft.request, config=ctx.config.wake, counter=ctx.counter,
                           summarizer=ctx.summarizer)


def record(ctx: Context, s, draft: Draft, wake: compose.ComposedWake, now: dt.datetime,
           report: TickReport) -> Optional[Planned]:
    """Record the wake if nothing changed since it was decided; None if something did."""
    pair = (draft.agent.id, draft.mood.id)
    if draft.guard is None:
        l = facts.claim_one(s, *pair)
        if l is None:
            return None  # another poller holds it now
    else:
        l = facts.listeners(s, {pair})[pair]  # a schedule's pair may have none yet
    cycle.lock_agent(s, draft.agent.id)
    if (cycle.flag(s, "scram") is not None  # an emergency stop came while it was composed
            or not cycle.agent_active(s, draft.agent.id)):  # removed while it was composed
        return None
    if draft.guard is not None:
        if not draft.guard(s, l):
            report.abandoned += 1
            return None
    elif (cycle.fingerprint(s, l, now) != draft.fingerprint
            or not reads.still_untaken(s, draft.extras)):
        return None
    row = cycle.add_wake(s, agent_id=draft.agent.id, mood_id=draft.mood.id, kind=draft.kind,
                         tools=draft.tools, text=wake.text, prompt_tokens=wake.prompt_tokens,
                         dial_source=wake.dial_source, now=now, answers=draft.answers,
                         about_id=draft.about_id, seen_id=draft.seen_id,
                         taking_over=draft.took_over)
    reads.taken(s, row.id, draft.extras)  # handed context and refusals go out once
    if draft.absence is not None:  # e.g. its pingers have had their judgment
        presence.current().recorded(s, draft, row.id, now)
    for write in draft.on_record:
        write(s, row.id, draft.answers, now)
    cycle.record_decision(s, draft.agent.id, draft.mood.id, draft.kind, "wake", "woke", None,
                          now, row.id)
    after_wake(ctx, s, l, draft, now)
    facts.save(s, [l])
    told(draft, report)
    return Planned(row.id, draft.agent.handle, draft.mood.slug, draft.kind, draft.tools,
                   wake.text, draft.answers)


def record_set(ctx: Context, s, composed: list[tuple[Draft, compose.ComposedWake]],
               now: dt.datetime, report: TickReport) -> list[Optional[Planned]]:
    """Record a batch's composed wakes at once (:func:`record` for each, in a handful of
    statements for the whole batch): each is recorded if nothing changed since it was
    decided, else None in its place.  The wakes before it in the batch count in its
    agent's load and its Mood's floor, as they did when it was decided.  Wakes not
    decided on a listener's fingerprint (a schedule's, with a guard) go to :func:`record`.
    """
    if any(d.guard is not None for d, _ in composed):
        raise ValueError("a wake with a guard is recorded with record(), on its own")
    if not composed:
        return []
    if cycle.flag(s, "scram") is not None:  # an emergency stop came while they were composed
        return [None] * len(composed)
    batch, active = facts.recheck(s, [(d.agent.id, d.mood.id) for d, _ in composed], now)
    kept: list[tuple[int, Draft, compose.ComposedWake, ListenerRow]] = []
    for at, (draft, wake) in enumerate(composed):
        l = batch.listeners.get((draft.agent.id, draft.mood.id))
        if (l is None  # another poller holds it now
                or draft.agent.id not in active  # removed while it was composed
                or batch.fingerprint(l, now) != draft.fingerprint
                or not reads.still_untaken(s, draft.extras)):
            continue
        batch.load[l.agent_id].planned(l.mood_id, now)  # the wakes after it see this one
        if kinds.spec(draft.kind).unprompted:
            batch.took_floor(l.agent_id, draft.agent.handle, l.mood_id)
        kept.append((at, draft, wake, l))
    new = [cycle.NewWake(d.agent.id, d.mood.id, d.kind, d.tools, w.text, w.prompt_tokens,
                         w.dial_source, d.about_id, d.seen_id, d.answers, d.took_over)
           for _, d, w, _ in kept]
    ids = cycle.add_wakes(s, new, now)
    reads.taken_all(s, [(i, d.extras) for i, (_, d, _, _) in zip(ids, kept)])
    for wake_id, (_, draft, _, _) in zip(ids, kept):
        if draft.absence is not None:  # e.g. its pingers have had their judgment
            presence.current().recorded(s, draft, wake_id, now)
        for write in draft.on_record:
            write(s, wake_id, draft.answers, now)
    cycle.add_woke(s, list(zip(new, ids)), now)
    for _, draft, _, l in kept:
        after_wake(ctx, s, l, draft, now)
    facts.save(s, [l for _, _, _, l in kept])
    out: list[Optional[Planned]] = [None] * len(composed)
    for wake_id, (at, draft, wake, _) in zip(ids, kept):
        out[at] = Planned(wake_id, draft.agent.handle, draft.mood.slug, draft.kind, draft.tools,
                          wake.text, draft.answers)
    return out


def told(draft: Draft, report: TickReport) -> None:
    """Report and log a recorded wake's decision (once its transaction stands)."""
    report.decisions.append((draft.agent.handle, draft.mood.slug, draft.kind, "woke"))
    log_decision(draft.agent.handle, draft.mood.slug, draft.kind,
                 draft.decision or law.Decision("wake", "", None), True)


def screen_out(ctx: Context, s, draft: Draft, reason: str, now: dt.datetime,
               report: TickReport) -> bool:
    """The screen said the consider's posts do not need the agent: record that and spend
    the consider, if nothing changed since it was decided (else False: weighed again)."""
    l = facts.claim_one(s, draft.agent.id, draft.mood.id)
    if l is None or cycle.fingerprint(s, l, now) != draft.fingerprint:
        return False
    code = law.Decision("skip", "screened-out")
    cycle.record_decision(s, draft.agent.id, draft.mood.id, draft.kind, code.outcome,
                          code.reason, None, now, detail=reason[:200], merge=False)
    if l.consider_from_id and l.consider_from_id <= draft.seen_id:
        l.consider_from_id, l.consider_due_at = 0, None
    # Paced as a turn would have been: the screen is asked no more often than it would wake.
    cooldown = ctx.settings.values(draft.mood.id, draft.agent.id, now)["cooldown"]
    l.cooldown_until = now + dt.timedelta(seconds=cooldown)
    l.due_at = due.next_due(l, False, now)
    facts.save(s, [l])
    report.decisions.append((draft.agent.handle, draft.mood.slug, draft.kind, code.code))
    log_decision(draft.agent.handle, draft.mood.slug, draft.kind, code, True)
    return True


def after_wake(ctx: Context, s, l: ListenerRow, draft: Draft, now: dt.datetime) -> None:
    """The listener once the wake is recorded: what it saw, what is taken care of."""
    spec = kinds.spec(draft.kind)
    l.looked_id = max(l.looked_id or 0, draft.seen_id)
    if not spec.listened:  # a schedule's wake: the listener's own timers are not its to touch
        return
    if not spec.composed:  # a command: its own mark only
        spec.after_wake(ctx, s, l, draft, now)
        l.due_at = None  # the turn's settling makes it due again
        return
    l.hold_reason, l.hold_since = None, None
    if spec.after_wake:
        spec.after_wake(ctx, s, l, draft, now)
    if draft.took_over:
        # What cut-off turns left unanswered is this wake's to answer now: no follow-up
        # for them, nothing held for an operator any more.
        if l.followup_of in draft.took_over:
            l.followup_of, l.followup_due_at = 0, None
        cycle.release_cut_offs(s, draft.took_over)
    l.due_at = None  # the turn's settling makes it due again


def next_arrival(ctx: Context, s, l: ListenerRow, now: dt.datetime) -> int:
    """The sign-in after the one just dealt with, still fresh and not the agent's own."""
    since = now - dt.timedelta(seconds=ctx.cfg.arrival_window)
    return cycle.next_signin(s, l.mood_id, l.arrival_signin_id, l.agent_id, since)
