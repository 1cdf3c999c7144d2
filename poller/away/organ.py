"""Away and back in the cycle: its kinds of wake, its gate in the law, and its presence.

Its kinds, the return (the pings missed while out) and the idle nudge, are
declared with :func:`poller.kinds.register`, as the core declares its own
(:mod:`poller.cycle.wakes`); its gate (:func:`poller.away.gate`) is added to
the law; and its :class:`poller.cycle.presence.Presence` tells the cycle what an
absence means for one wake: the law's ``away`` fact, the pings kept for the
return, a judgment's state line, the activities on offer, fresh eyes.  Its
reply block, ``away``, and the call back on a judgment's reply
(:mod:`poller.away.replies`) are declared to :mod:`poller.turns.blocks`, its tool
``go_away`` to :mod:`poller.tools` (:mod:`poller.away.tools`).  The
cycle finds all of it through :mod:`poller.cycle.organs`.
"""

from __future__ import annotations

import datetime as dt

from poller import away, kinds, law
from poller.away import catalog, replies, tools  # noqa: F401  (declares go_away)
from poller.away.absence import NUDGE_EVERY, come_back, nudges
from poller.cycle import drafts, presence, stages
from poller.kinds import KindSpec, WakeKind
from poller.store import absences, reads
from poller.turns import blocks
from poller.wake import compose

AROUND_PING = 2  # posts on each side of a missed ping a return wake shows (about five in all)


def returned(g: drafts.Gathering) -> drafts.Material:
    """A return wake's material: what it is back from, the pings it missed (the newest
    few not in the catch-up with the posts around them), the catch-up since it left."""
    s, activity_id = g.s, g.l.return_of
    absence = absences.get(s, activity_id)
    missed = absences.missed(s, activity_id)
    answers = [m.post_id for m in missed]
    posts = {p.id: p for p in reads.posts_by_id(s, answers)}
    hist, earlier = g.history(max(g.since, absence.departure_post_id))
    in_hist = {p.id for p in hist}
    newest = {m.post_id for m in [m for m in missed if m.post_id not in in_hist][-compose.EXCERPTS:]}
    pings = tuple(compose.MissedPing(m.mood, posts[m.post_id],
                                     reads.around(s, m.post_id, AROUND_PING)
                                     if m.post_id in newest else ())
                  for m in missed if m.post_id in posts)
    out_for = ((absence.returned_at or absence.due_at) - absence.departed_at).total_seconds()
    back = compose.Back(away.phrase(absence.label), out_for, absence.cut_short_by is not None,
                        absence.fresh_eyes, pings)

    def carried(s, wake_id: int, answers: list[int], now) -> None:
        absences.carried(s, activity_id, wake_id, answers)

    return drafts.Material(hist, answers=answers, earlier=earlier, parts={"back": back},
                           on_record=(carried,))


def back_done(ctx, s, l, _draft, now) -> None:
    l.return_of = 0


def nudge_done(ctx, s, l, _done, now) -> None:
    l.nudge_due_at = None  # the next check offers one again when it is due


RETURN = kinds.register(KindSpec(
    WakeKind.RETURN, 70, owed=True, paced=False, while_away="wait",
    due_at=lambda l, owed, now: now if l.return_of else None, schedule="free",
    gather=returned, after_wake=back_done, tools_by_senders=True, frames=(("full", ""),)))

NUDGE = kinds.register(KindSpec(
    WakeKind.NUDGE, 80, due_at=lambda l, owed, now: l.nudge_due_at, schedule="free",
    after_wake=nudge_done, after_skip=nudge_done))


# -- the law's gate and the cycle's presence ---------------------------------------------------

NOTED = "away-noted"  # the reason codes of mentions kept for an agent's return


def judged_here(kind: str) -> bool:
    """A kind a trusted ping may turn into a judgment (a mention)."""
    return kinds.spec(kind).while_away == "judge"


def fact(s, absence: absences.Absence, l, kind: str, owed: list[int]) -> away.Away:
    """What the away gate weighs for one wake of an agent that is out; for a mention,
    who sent the owed posts and who has had their judgment this absence."""
    pingers = ()
    if judged_here(kind):
        judged = absences.judged(s, absence.id)
        pingers = tuple(away.Pinger(p.handle, p.full_person, p.sender_id in judged)
                        for p in absences.pings(s, owed))
    return away.Away(absence.departed_at, absence.due_at, absence.reachable,
                     absence.mood_id == l.mood_id, pingers)


def noted(s, absence: absences.Absence, l, agent, owed: list[int], values: dict,
          decision: law.Decision, notes: list[str], now: dt.datetime) -> None:
    """Mentions the gate kept for the return: noted; the first time in a Mood this
    absence, said there (once, like a hold)."""
    if not decision.reason.startswith(NOTED):
        return
    if absences.note(s, absence, l.agent_id, l.mood_id, owed, now):
        where = away.presence(absence.label, absence.due_at, values["timezone"])
        notes.append(f"@{agent.handle} is away from the screen ({where}): mentions of it "
                     f"are kept for when it is back.")
    l.hold_reason, l.hold_since = None, None


def parts(agent, absence, kind: str, judges: tuple[str, ...], now: dt.datetime) -> dict:
    """The away how-to's activities (an agent with a catalog, at the screen), or a
    judgment's state line (a mention while it is out); nothing for any other agent."""
    if absence is not None:
        if not judged_here(kind):
            return {}
        return {"judgment": compose.Judgment(absence.label,
                                             (now - absence.departed_at).total_seconds(), judges)}
    cat = catalog.of(agent)
    if cat is None:
        return {}
    return {"activities": tuple(compose.ActivityOffer(e.id, e.label, *e.duration, e.reachable)
                                for e in cat.entries)}


def recorded(s, draft, wake_id: int, now: dt.datetime) -> None:
    """A mention wake while the agent is out is a judgment: its pingers have had theirs."""
    if judged_here(draft.kind):
        absences.mark_judgment(s, draft.absence.id, wake_id, draft.answers, now)


law.add_rule(away.gate)
for _reason, _sentence in (
        ("away", "it is away on an activity"),
        ("away-noted-other-mood", "it is away from another Mood: the mention waits for its return"),
        ("away-noted-unreachable", "it is away where it cannot be reached: the mention waits "
                                   "for its return"),
        ("away-noted-judged", "it is away and judged this can wait for its return"),
        ("away-noted-trust", "it is away, and only a fully trusted person may call it back")):
    law.add_reason(_reason, _sentence)
presence.register(presence.Presence(
    fact=fact, judges=lambda f: f.judges(), noted=noted, parts=parts,
    window=absences.window, recorded=recorded))
# Called back before any block is applied, so an away block in the same reply
# starts a new absence rather than finding the old one still on.
blocks.register_hook(blocks.ReplyHook("called-back", replies.come_back_if_called, rank=0))
blocks.register(blocks.Kind("away", replies.away_block, replies.apply_away, rank=60))


# -- its part in every cycle ---------------------------------------------------------------

_NUDGED: dict[str, dt.datetime] = {}  # when each poller here last weighed idle nudges


def check_catalogs(ctx, agents: dict) -> None:
    """Every agent's activities catalog, read once as a poller starts: one that is
    present but invalid stops it (ConfigError, exit 78) rather than being ignored."""
    for agent in agents.values():
        catalog.of(agent, strict=True)


def come_back_and_nudge(ctx, step, now: dt.datetime, report) -> None:
    """Bring back the agents whose absence is up; offer idle nudges (once a minute)."""
    floor = (step.booted_at + dt.timedelta(seconds=ctx.config.poller.return_floor)
             if step.booted_at is not None else None)
    report.returned = come_back(ctx, step.holder, now, floor, step.booted_at)
    last = _NUDGED.get(step.holder)
    if last is None or now - last >= NUDGE_EVERY:
        _NUDGED[step.holder] = now
        nudges(ctx, now)


stages.add(stages.Stage("away", order=10, check=check_catalogs, before=come_back_and_nudge,
                        live_only=True))
