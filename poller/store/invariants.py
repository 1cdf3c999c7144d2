"""No mention is ever lost: the promise, stated as a check a store can be put to.

A mention an agent must answer is, at every moment, in exactly one of these places:

* **owed** — an ``owed`` row: ``why`` counts it, ``status`` counts it (and names the
  hold if one keeps it waiting);
* **held by a wake** — the posts a pending or running wake answers (``wakes``, ``status``
  in flight);
* **left unanswered** — the posts of a turn cut off with no reply, while a follow-up is
  owed for it or it is held for an operator (``why``/``status`` ``left_unanswered``);
* **kept for a return** — noted while the agent was out (an activity's pings), woken for
  when it comes back;
* **answered** — the posts of a wake that ended: with a reply or a chosen silence, or
  with the notice in the Mood that its turn failed.

:func:`lost_mentions` lists the mentions that are in none of them.  Which posts are
owed an answer at all is the cycle's own rule (:mod:`poller.cycle.scan`): a post (not a
system note) naming an agent that has not been removed, read by the cycle after it first
ran here, from anyone but the agent itself and not from a person with trust ``none``,
that is not a command the service carries out (``@agent stop``, ``@agent /compact``:
nobody owes those an answer).  Some mentions are dropped on purpose, and say so: a post
redacted in its bridge, a turn someone stopped (an operator, an emergency stop, a
trusted person's ``@agent stop``): those are not lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import sqlalchemy as sa
from sqlalchemy.orm import Session

from poller.kinds import FINISHED, IN_FLIGHT, ParticipantKind, PostKind, Trust, WakeStatus
from poller.models import (Activity, ActivityPing, Agent, Cursor, Listener, Mention, Owed,
                           Participant, Post, Wake, WakeAnswer)
from poller.store import cycle

# The reasons :func:`poller.cycle.recover.stop_turn` is given: a turn someone meant to end
# (no follow-up is owed for it, so its posts are not left unanswered).
STOPPED_ON_PURPOSE = ("the emergency stop ended it", "stopped in ", "stopped by ")


@dataclass(frozen=True, order=True)
class Lost:
    """A mention owed an answer that no part of the service holds any more."""

    post_id: int
    agent_id: int
    mood_id: int
    why: str  # where it was last seen


def must_answer(s: Session, is_command: Callable) -> list[tuple[int, int, int]]:
    """Every mention the cycle has read that an agent owes an answer to, answered or
    not, as ``(post_id, agent_id, mood_id)``, oldest first.  *is_command(row, handles,
    named)* says which posts are commands the service carries out (the control organ's
    rule, :mod:`poller.invariants`)."""
    first = cycle.history_before(s)
    if first is None:
        return []  # the cycle has never run: nothing has been read
    read_to = s.scalar(sa.select(Cursor.value).where(Cursor.name == "posts")) or 0
    sender = sa.orm.aliased(Participant)
    q = (sa.select(Post.id, Mention.participant_id, Post.mood_id, Post.text, sender.kind,
                   sender.trust)
         .join(Mention, Mention.post_id == Post.id)
         .join(Agent, Agent.participant_id == Mention.participant_id)
         .join(sender, sender.id == Post.sender_id)
         .where(Post.id > first, Post.id <= read_to, Post.kind == PostKind.POST,
                Post.sender_id != Mention.participant_id, Agent.retired_at.is_(None))
         .order_by(Post.id, Mention.participant_id))
    rows = s.execute(q).all()
    handles = dict(s.execute(sa.select(Participant.id, Participant.handle)
                             .where(Participant.kind == ParticipantKind.AGENT)).all())
    named: dict[int, set[int]] = {}
    for r in rows:
        named.setdefault(r.id, set()).add(r.participant_id)
    out = []
    for r in rows:
        if r.kind == ParticipantKind.PERSON and r.trust == Trust.NONE:
            continue  # a mention from someone with trust none is just text
        if _redacted(r.text) or is_command(r, handles, named[r.id]):
            continue
        out.append((r.id, r.participant_id, r.mood_id))
    return out


def lost_mentions(s: Session, is_command: Callable) -> list[Lost]:
    """The mentions owed an answer that are neither answered nor shown as owed."""
    owed = set(s.execute(sa.select(Owed.post_id, Owed.agent_id)).all())
    kept = set(s.execute(sa.select(ActivityPing.post_id, Activity.agent_id)
                         .join(Activity, Activity.id == ActivityPing.activity_id)).all())
    held = {(r.post_id, r.agent_id): r for r in s.execute(
        sa.select(WakeAnswer.post_id, WakeAnswer.agent_id, Wake.id, Wake.status, Wake.error,
                  Wake.reply_post_id)
        .join(Wake, Wake.id == WakeAnswer.wake_id))}
    followups = {(a, m): f for a, m, f in s.execute(
        sa.select(Listener.agent_id, Listener.mood_id, Listener.followup_of))}
    left_cache: dict[tuple[int, int], set[int]] = {}
    lost = []
    for post_id, agent_id, mood_id in must_answer(s, is_command):
        key = (post_id, agent_id)
        if key in owed or key in kept:
            continue
        w = held.get(key)
        if w is None:
            lost.append(Lost(post_id, agent_id, mood_id, "never owed, nor answered"))
            continue
        if w.status in IN_FLIGHT:
            continue
        if w.status in (WakeStatus.REPLIED, WakeStatus.SILENT, WakeStatus.FAILED):
            continue
        if w.status == WakeStatus.CUT_OFF:
            if w.reply_post_id is not None or (w.error or "").startswith(STOPPED_ON_PURPOSE):
                continue
            pair = (agent_id, mood_id)
            if pair not in left_cache:
                left = cycle.left_unanswered(s, agent_id, mood_id, followups.get(pair, 0))
                left_cache[pair] = {p for ps in left.values() for p in ps}
            if post_id in left_cache[pair]:
                continue
            lost.append(Lost(post_id, agent_id, mood_id,
                             f"wake {w.id} was cut off and nothing shows it unanswered"))
            continue
        assert w.status not in FINISHED, w.status
        lost.append(Lost(post_id, agent_id, mood_id, f"wake {w.id} is {w.status}"))
    return sorted(lost)


def unanswered(s: Session, is_command: Callable) -> list[tuple[int, int]]:
    """Mentions owed an answer that no wake has answered yet, as ``(post_id, agent_id)``:
    those still owed, held by a wake in flight, left unanswered or kept for a return."""
    done = {(r.post_id, r.agent_id) for r in s.execute(
        sa.select(WakeAnswer.post_id, WakeAnswer.agent_id).join(Wake, Wake.id == WakeAnswer.wake_id)
        .where(sa.or_(Wake.status.in_((WakeStatus.REPLIED, WakeStatus.SILENT, WakeStatus.FAILED)),
                      Wake.reply_post_id.is_not(None))))}
    return [(p, a) for p, a, _ in must_answer(s, is_command) if (p, a) not in done]


def _redacted(text: str) -> bool:
    from poller.store.bridges import REMOVED

    return text == REMOVED
