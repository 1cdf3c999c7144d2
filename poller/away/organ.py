"""Away and back's kinds of wake: the return (the pings missed while out) and the idle nudge.

Declared with :func:`poller.kinds.register`, as the core declares its own
(:mod:`poller.cycle.wakes`); the cycle finds them through
:mod:`poller.cycle.organs`.
"""

from __future__ import annotations

from poller import kinds
from poller.cycle import draft as drafts
from poller.kinds import KindSpec, WakeKind
from poller.store import away as absences, gather
from poller.wake import compose

AROUND_PING = 2  # posts on each side of a missed ping a return wake shows (about five in all)


def returned(g: drafts.Gathering) -> drafts.Material:
    """A return wake's material: what it is back from, the pings it missed (the newest
    few not in the catch-up with the posts around them), the catch-up since it left."""
    s, activity_id = g.s, g.l.return_of
    absence = absences.get(s, activity_id)
    missed = absences.missed(s, activity_id)
    answers = [m.post_id for m in missed]
    posts = {p.id: p for p in gather.posts_by_id(s, answers)}
    hist, earlier = g.history(max(g.since, absence.departure_post_id))
    in_hist = {p.id for p in hist}
    newest = {m.post_id for m in [m for m in missed if m.post_id not in in_hist][-compose.EXCERPTS:]}
    pings = tuple(compose.MissedPing(m.mood, posts[m.post_id],
                                     gather.around(s, m.post_id, AROUND_PING)
                                     if m.post_id in newest else ())
                  for m in missed if m.post_id in posts)
    out_for = ((absence.returned_at or absence.due_at) - absence.departed_at).total_seconds()
    back = compose.Back(absence.label, out_for, absence.cut_short_by is not None,
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
