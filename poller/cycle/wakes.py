"""The core's own kinds of wake: what was said, and who came.

A mention (posts owed to the agent), an arrival (someone signed in), a
consider (people talked without naming it), a quiet look (the Mood went
quiet) and a cut-off's follow-up (a turn ended with no reply), each declared
once with :func:`poller.kinds.register`: its traits for the law, when it is
due on a listener, what its wake shows, and what a wake or a skip of it
leaves on the listener.  The organs declare theirs the same way, in their
own ``organ`` module (:mod:`poller.cycle.organs` loads them all).
"""

from __future__ import annotations

from poller import kinds
from poller.cycle import drafts
from poller.kinds import KindSpec, WakeKind
from poller.store import cycle, reads
from poller.wake import compose

LISTENING_GATES = ("listening-mentions", "listening-off", "stopped")  # a consider waits them out


# -- mention ---------------------------------------------------------------------------------


def called(g: drafts.Gathering) -> drafts.Material:
    """The posts that called it and what was said since it last spoke (for a session,
    since its last wake there: what came after, even while that turn ran, is new to it).

    What a cut-off turn here left unanswered calls it too: this wake answers those
    posts in that turn's place (its follow-up is then not needed)."""
    left = reads.left_unanswered(g.s, g.agent.id, g.mood.id, g.l.followup_of)
    calling = sorted(set(g.owed).union(*left.values()))
    m = posts_and_since(g, calling, answers=calling)
    m.took_over = tuple(left)
    return m


def posts_and_since(g: drafts.Gathering, post_ids, answers=()) -> drafts.Material:
    """The posts *post_ids* and the catch-up after them: since its session's last wake
    here, or, without a session, since it last spoke."""
    woke = reads.posts_by_id(g.s, post_ids)
    after = g.since if g.held else max(g.since, reads.last_spoke_id(g.s, g.agent.id, g.mood.id))
    hist, earlier = g.history(after, {p.id for p in woke})
    return drafts.Material(hist, woke=woke, answers=list(answers), earlier=earlier)


def mention_taken(ctx, s, l, draft, now) -> None:
    if l.consider_from_id and l.consider_from_id <= draft.seen_id:
        l.consider_from_id, l.consider_due_at = 0, None


MENTION = kinds.register(KindSpec(
    WakeKind.MENTION, 10, owed=True, paced=False, holds=True, while_away="judge",
    due_at=lambda l, owed, now: now if owed else None, schedule="lifts",
    gather=called, after_wake=mention_taken, tools_by_senders=True,
    frames=(("full", ""), ("look", ""), ("full", "judgment"))))


# -- arrival ---------------------------------------------------------------------------------


def arrived(g: drafts.Gathering) -> drafts.Material:
    m = drafts.lately(g)
    who = cycle.signin(g.s, g.l.arrival_signin_id)
    m.about_id = who.participant_id
    m.parts = {"arrival": compose.Arrival(who.handle, who.label or who.handle, who.trust,
                                          cycle.last_said_at(g.s, who.participant_id, g.mood.id))}
    return m


def next_arrival(ctx, s, l, _done, now) -> None:
    """The sign-in after the one just dealt with (woken for or skipped), if any."""
    l.arrival_signin_id = drafts.next_arrival(ctx, s, l, now)


ARRIVAL = kinds.register(KindSpec(
    WakeKind.ARRIVAL, 20, unprompted=True,
    due_at=lambda l, owed, now: now if l.arrival_signin_id else None,
    gather=arrived, after_wake=next_arrival, after_skip=next_arrival))


# -- consider --------------------------------------------------------------------------------


def considered(g: drafts.Gathering) -> drafts.Material:
    """The people's posts since it last looked are what woke it; the rest is the Mood lately."""
    m = drafts.lately(g, keep_from=g.l.consider_from_id)
    m.woke = [p for p in m.history if p.id >= g.l.consider_from_id and not p.sender_is_agent
              and p.kind == "post"]
    chosen = {p.id for p in m.woke}
    m.history = [p for p in m.history if p.id not in chosen]
    return m


def consider_skipped(ctx, s, l, decision, now) -> None:
    if decision.reason in LISTENING_GATES:
        # Not now, but what was said meanwhile stays to consider: when listening is
        # back on, a consider of it comes due (see evaluate.remembered_consider).
        l.consider_due_at = None
    else:
        l.consider_from_id, l.consider_due_at = 0, None


CONSIDER = kinds.register(KindSpec(
    WakeKind.CONSIDER, 30, unprompted=True,
    due_at=lambda l, owed, now: l.consider_due_at if l.consider_from_id else None,
    gather=considered, after_wake=mention_taken, after_skip=consider_skipped,
    frames=(("look", ""), ("look", "session"))))


# -- quiet -----------------------------------------------------------------------------------


def quiet_done(ctx, s, l, _done, now) -> None:
    l.quiet_due_at = None  # set again when someone speaks, or when the look settles


QUIET = kinds.register(KindSpec(
    WakeKind.QUIET, 40, unprompted=True, due_at=lambda l, owed, now: l.quiet_due_at,
    after_wake=quiet_done, after_skip=quiet_done))


# -- a cut-off's follow-up -------------------------------------------------------------------


def left_unanswered(g: drafts.Gathering) -> drafts.Material:
    """The posts cut-off turns here left unanswered, and what came since: the follow-up
    answers them in their place."""
    left = reads.left_unanswered(g.s, g.agent.id, g.mood.id, g.l.followup_of)
    posts = sorted(set().union(*left.values()))
    m = posts_and_since(g, posts, answers=posts)
    m.took_over = tuple(left)
    return m


def followed_up(ctx, s, l, _done, now) -> None:
    l.followup_of, l.followup_due_at = 0, None  # one follow-up per cut-off turn


def follow_up_waits(ctx, s, l, _decision, now) -> None:
    """Not now (stopped, listening down, away...): the posts stay left unanswered, shown
    as owed, and the follow-up comes when listening is on here again, unless a mention
    answers them first (see evaluate.remembered_follow_up)."""
    l.followup_due_at = None


CUT_OFF = kinds.register(KindSpec(
    WakeKind.CUT_OFF, 50, paced=False,
    due_at=lambda l, owed, now: l.followup_due_at if l.followup_of else None, schedule="free",
    gather=left_unanswered, after_wake=followed_up, after_skip=follow_up_waits))
