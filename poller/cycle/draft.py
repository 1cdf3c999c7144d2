"""Compose and record: a decided wake becomes a draft, its text, then a recorded wake.

The three steps run in three places so nothing slow holds a write lock:

1. :func:`gather` reads what the wake is made of, inside the transaction that
   claimed the listener and made the decision, and takes a fingerprint of the
   listener and the agent's caps;
2. :func:`compose_text` renders it with no transaction open (the summarizer
   may call an LLM);
3. :func:`record` opens a short write transaction, claims the listener again,
   and records the wake with the posts it answers only if the fingerprint is
   unchanged; otherwise the draft is dropped and the listener, still due, is
   looked at again next cycle.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Optional

from poller.away import catalog as catalogs
from poller.wake import compose
from poller import law
from poller.control import slash
from poller.cycle.context import Context, Planned, TickReport, log_decision
from poller.kinds import SCHEDULED, ParticipantKind, Tools, Trust, WakeKind
from poller.models import Listener
from poller.store import away as absences, cycle, gather as reads
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
    judgment_of: Optional[int] = None  # the absence this mention wake is a judgment of
    return_of: Optional[int] = None  # the absence whose missed pings this return wake carries


# Wakes of these kinds into an agent's live session carry only what is new to
# it (reads.in_session).  Every kind, in the product; the token bench narrows it
# to measure the levers apart (considers alone, the other kinds alone).
DELTA_KINDS = frozenset({WakeKind.MENTION, WakeKind.CONSIDER, WakeKind.QUIET, WakeKind.ARRIVAL,
                         WakeKind.CUT_OFF, WakeKind.RETURN, WakeKind.NUDGE, *SCHEDULED})
AROUND_PING = 2  # posts on each side of a missed ping a return wake shows (about five in all)


def gather(ctx: Context, s, kind: str, l: Listener, agent: AgentInfo, mood: MoodInfo,
           values: dict, owed: list[int], now: dt.datetime,
           force_tools: Optional[str] = None, absence: Optional[absences.Absence] = None,
           judges: tuple[str, ...] = ()) -> Draft:
    """Read everything the wake will say, inside the deciding transaction.

    An agent that keeps a session here (a Claude Code agent resumes one per
    Mood) was shown the Mood up to its last wake in that session: then the
    catch-up starts after that (``since``), and the posts that woke it are only
    those the session has not seen, but for owed mentions, which are always
    shown.  Agents without a session get the full catch-up every time.

    Away and back: an agent with an activities catalog is offered its
    activities while it is at the screen; a mention while it is out (*absence*)
    is a judgment (*judges* pinged it); after a long absence its catch-up
    starts where it left, without the backlog it missed.
    """
    woke: list[compose.WakePost] = []
    arrival, about_id, answers, back = None, None, [], None
    held = (reads.in_session(s, agent.id, mood.id, now, values.get("archive_after", 0))
            if kind in DELTA_KINDS else None)
    since = held.seen_id if held else 0
    fresh = absences.window(s, agent.id, mood.id)
    if kind == WakeKind.RETURN:
        back, answers, hist, earlier = returned(s, l.return_of, mood, since, values, fresh)
        new_after = None
    elif kind in (WakeKind.MENTION, WakeKind.CUT_OFF):
        # The posts that called it (for a cut-off's follow-up: those its cut-off
        # turn was woken for, still unanswered) and what was said since it last spoke.
        if kind == WakeKind.MENTION:
            woke, answers = reads.posts_by_id(s, owed), list(owed)
        else:
            woke = reads.posts_by_id(s, cycle.answers(s, l.followup_of))
        # A session saw the Mood up to its last wake: what came after, even while
        # that turn ran (before its reply), is new to it.  Without one, what was
        # said since the agent last spoke.
        after = since if held else max(since, cycle.last_spoke_id(s, agent.id, mood.id))
        hist, earlier = reads.history(s, mood.id, after, {p.id for p in woke},
                                      values["catch_up_tokens"], fresh=fresh)
        new_after = None
    else:
        hist, _ = reads.history(s, mood.id, since, set(), values["catch_up_tokens"],
                                keep_from=l.consider_from_id if kind == WakeKind.CONSIDER else 0,
                                fresh=fresh)
        earlier = 0  # "the Mood lately": older posts are not owed to anyone
        new_after = l.looked_id or 0
        if kind == WakeKind.CONSIDER:
            woke = [p for p in hist if p.id >= l.consider_from_id and not p.sender_is_agent
                    and p.kind == "post"]
            chosen = {p.id for p in woke}
            hist = [p for p in hist if p.id not in chosen]
        elif kind == WakeKind.ARRIVAL:
            who = cycle.signin(s, l.arrival_signin_id)
            about_id = who.participant_id
            arrival = compose.Arrival(who.handle, who.label or who.handle, who.trust,
                                      cycle.last_said_at(s, who.participant_id, mood.id))
    if since:  # its own replies since are in the session already, as it wrote them
        # (notices in its name, such as a hold or a turn that ended without a reply,
        # it never saw: they stay)
        hist = [p for p in hist if not (p.sender_is_agent and p.sender == agent.handle
                                        and p.kind in ("post", "silent"))]
    tools = force_tools or tools_for(s, kind, answers if kind == WakeKind.RETURN else owed)
    shown = {p.id for p in woke} | {p.id for p in hist}
    extras = reads.extras(s, agent.id, mood.id, woke, shown, now)
    request = compose.WakeRequest(
        kind=kind, mood=mood.slug, mood_title=mood.title, agent=agent.handle, now=now,
        tools=tools, woke=woke, history=hist, earlier_count=earlier, new_after_id=new_after,
        arrival=arrival, also_asked=reads.also_asked(s, answers, agent.id, set(ctx.agents)),
        cut_off=reads.cut_off(s, agent.id, mood.id),
        settings_changed=extras.settings_changed, handed=extras.handed,
        refusals=extras.refusals, linked=extras.linked,
        discretion=values["discretion"], verbosity=values["verbosity"],
        dials=ctx.dials, catch_up_tokens=values["catch_up_tokens"],
        timezone=values.get("timezone", "UTC"),
        session_until=held.seen_at if since else None,
        rules=rules_in_wake(agent, values, since, extras),
        checkins=reads.checkin_people(s, agent.id, mood.id),
        **letter(s, agent, mood, values), **away_parts(agent, absence, kind, judges, now),
        back=back)
    # What the session holds is still held: the next delta starts after all of it.
    draft = Draft(agent, mood, kind, tools, request, answers, about_id, max(shown | {since}),
                  extras)
    if kind == WakeKind.MENTION and absence is not None:
        draft.judgment_of = absence.id
    if kind == WakeKind.RETURN:
        draft.return_of = l.return_of
    return draft


def away_parts(agent: AgentInfo, absence: Optional[absences.Absence], kind: str,
               judges: tuple[str, ...], now: dt.datetime) -> dict:
    """The away how-to's activities (an agent with a catalog, at the screen), or a
    judgment's state line (a mention while it is out); nothing for any other agent."""
    if absence is not None:
        if kind != WakeKind.MENTION:
            return {}
        return {"judgment": compose.Judgment(absence.label,
                                             (now - absence.departed_at).total_seconds(), judges)}
    cat = catalogs.of(agent)
    if cat is None:
        return {}
    return {"activities": tuple(compose.Activity(e.id, e.label, *e.duration, e.reachable)
                                for e in cat.entries)}


def returned(s, activity_id: int, mood: MoodInfo, since: int, values: dict,
             fresh: Optional[absences.Window]) -> tuple:
    """A return wake's material: what it is back from, the pings it missed (the newest
    few not in the catch-up with the posts around them), the catch-up since it left."""
    absence = absences.get(s, activity_id)
    missed = absences.missed(s, activity_id)
    answers = [m.post_id for m in missed]
    posts = {p.id: p for p in reads.posts_by_id(s, answers)}
    hist, earlier = reads.history(s, mood.id, max(since, absence.departure_post_id), set(),
                                  values["catch_up_tokens"], fresh=fresh)
    in_hist = {p.id for p in hist}
    newest = {m.post_id for m in [m for m in missed if m.post_id not in in_hist][-compose.EXCERPTS:]}
    pings = tuple(compose.MissedPing(m.mood, posts[m.post_id],
                                     reads.around(s, m.post_id, AROUND_PING)
                                     if m.post_id in newest else ())
                  for m in missed if m.post_id in posts)
    out_for = ((absence.returned_at or absence.due_at) - absence.departed_at).total_seconds()
    back = compose.Back(absence.label, out_for, absence.cut_short_by is not None,
                        absence.fresh_eyes, pings)
    return back, answers, hist, earlier


def gather_command(ctx: Context, s, l: Listener, agent: AgentInfo, mood: MoodInfo,
                   now: dt.datetime) -> Draft:
    """A person's slash command, due to run in the agent's session here: the wake is the
    command alone (``/compact``), never the rest of the post, and answers that post."""
    asked = slash.parse(cycle.post_texts(s, [l.command_post_id]).get(l.command_post_id, ""))
    word = asked.word if asked else ""
    return Draft(agent, mood, WakeKind.COMMAND, Tools.LOOK, None, [l.command_post_id], None, 0,
                 reads.command_extras(s, agent.id, mood.id), command=f"/{word}")


def letter(s, agent: AgentInfo, mood: MoodInfo, values: dict) -> dict:
    """The letter and who has been here, on the agent's first turn in the Mood; else nothing."""
    keeps = registry.capabilities(agent.waker).keeps_session
    if not reads.first_turn(s, agent.id, mood.id, keeps_sessions=keeps):
        return {}
    return {"letter": values.get("letter") or compose.kit_letter(),
            "people": reads.people(s, mood.id, agent.id)}


def rules_in_wake(agent: AgentInfo, values: dict, since: int, extras: reads.Extras) -> str:
    """The Mood's rules, when this wake carries them: for agents whose instructions come
    in the wake (not Claude Code's: --append-system-prompt), on a fresh start and
    whenever they changed."""
    if not registry.capabilities(agent.waker).instructions_in_wake or not values.get("rules"):
        return ""
    changed = any(c.key == "rules" for c in extras.settings_changed)
    return values["rules"] if not since or changed else ""


def tools_for(s, kind: str, owed: list[int]) -> str:
    """Full tools only for a mention (or a return's missed pings) every one of whose
    senders is a fully trusted person."""
    if kind not in (WakeKind.MENTION, WakeKind.RETURN):
        return Tools.LOOK
    senders = cycle.senders(s, owed)
    if senders and all(x.kind == ParticipantKind.PERSON and x.trust == Trust.FULL
                       for x in senders):
        return Tools.FULL
    return Tools.LOOK


def compose_text(ctx: Context, draft: Draft) -> compose.Wake:
    """Render the wake: templates, catch-up and summary. Runs with no transaction open."""
    if draft.command:
        return compose.Wake(draft.command, ctx.counter.count(draft.command), 0, 0, 0, 0, "none")
    return compose.compose(draft.request, config=ctx.config.wake, counter=ctx.counter,
                           summarizer=ctx.summarizer)


def record(ctx: Context, s, draft: Draft, wake: compose.Wake, now: dt.datetime,
           report: TickReport) -> Optional[Planned]:
    """Record the wake if nothing changed since it was decided; None if something did."""
    l = cycle.claim_listener(s, draft.agent.id, draft.mood.id)
    if l is None:
        return None  # another poller holds it now
    cycle.lock_agent(s, draft.agent.id)
    if (cycle.flag(s, "scram") is not None  # an emergency stop came while it was composed
            or not cycle.agent_active(s, draft.agent.id)  # removed while it was composed
            or cycle.fingerprint(s, l, now) != draft.fingerprint
            or not reads.still_untaken(s, draft.extras)):
        return None
    row = cycle.add_wake(s, agent_id=draft.agent.id, mood_id=draft.mood.id, kind=draft.kind,
                         tools=draft.tools, text=wake.text, prompt_tokens=wake.prompt_tokens,
                         dial_source=wake.dial_source, now=now, answers=draft.answers,
                         about_id=draft.about_id, seen_id=draft.seen_id)
    reads.taken(s, row.id, draft.extras)  # handed context and refusals go out once
    if draft.judgment_of is not None:  # its pingers have had their judgment
        absences.mark_judgment(s, draft.judgment_of, row.id, draft.answers, now)
    if draft.return_of:
        absences.carried(s, draft.return_of, row.id, draft.answers)
    cycle.record_decision(s, draft.agent.id, draft.mood.id, draft.kind, "wake", "woke", None,
                          now, row.id)
    after_wake(ctx, s, l, draft, now)
    report.decisions.append((draft.agent.handle, draft.mood.slug, draft.kind, "woke"))
    log_decision(draft.agent.handle, draft.mood.slug, draft.kind,
                 draft.decision or law.Decision("wake", "", None), True)
    return Planned(row.id, draft.agent.handle, draft.mood.slug, draft.kind, draft.tools,
                   wake.text, draft.answers)


def screen_out(ctx: Context, s, draft: Draft, reason: str, now: dt.datetime,
               report: TickReport) -> bool:
    """The screen said the consider's posts do not need the agent: record that and spend
    the consider, if nothing changed since it was decided (else False: weighed again)."""
    l = cycle.claim_listener(s, draft.agent.id, draft.mood.id)
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
    l.due_at = cycle.next_due(l, False, now)
    report.decisions.append((draft.agent.handle, draft.mood.slug, draft.kind, code.code))
    log_decision(draft.agent.handle, draft.mood.slug, draft.kind, code, True)
    return True


def after_wake(ctx: Context, s, l: Listener, draft: Draft, now: dt.datetime) -> None:
    """The listener once the wake is recorded: what it saw, what is taken care of."""
    l.looked_id = max(l.looked_id or 0, draft.seen_id)
    if draft.kind == WakeKind.COMMAND:
        l.command_post_id, l.due_at = 0, None  # the turn's settling makes it due again
        return
    l.hold_reason, l.hold_since = None, None
    if draft.kind in (WakeKind.MENTION, WakeKind.CONSIDER):
        if l.consider_from_id and l.consider_from_id <= draft.seen_id:
            l.consider_from_id, l.consider_due_at = 0, None
    if draft.kind == WakeKind.ARRIVAL:
        l.arrival_signin_id = next_arrival(ctx, s, l, now)
    if draft.kind == WakeKind.QUIET:
        l.quiet_due_at = None  # set again when the look settles
    if draft.kind == WakeKind.RETURN:
        l.return_of = 0
    if draft.kind == WakeKind.NUDGE:
        l.nudge_due_at = None
    if draft.kind == WakeKind.CUT_OFF or (
            l.followup_of and draft.seen_id >= max(cycle.answers(s, l.followup_of), default=0)):
        # One follow-up per cut-off turn, and none once a wake has shown the agent
        # what that turn left unanswered.
        l.followup_of, l.followup_due_at = 0, None
    l.due_at = None  # the turn's settling makes it due again


def next_arrival(ctx: Context, s, l: Listener, now: dt.datetime) -> int:
    """The sign-in after the one just dealt with, still fresh and not the agent's own."""
    since = now - dt.timedelta(seconds=ctx.cfg.arrival_window)
    return cycle.next_signin(s, l.mood_id, l.arrival_signin_id, l.agent_id, since)
