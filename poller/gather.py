"""Reading what one wake is made of out of the store, as a ``WakeRequest``.

The composer is pure; this module is its edge: it picks the posts that woke
the agent, the catch-up candidates (since the agent last spoke for a
mention, the Mood lately for the rest), who else was asked, and whether the
agent's last turn here was cut off.
"""

from __future__ import annotations

import datetime as dt
from typing import Optional, Sequence

import sqlalchemy as sa
from sqlalchemy.orm import Session

from poller import compose, state
from poller.models import Mention, Participant, Post, Wake

HISTORY_POSTS = 600  # catch-up candidates read per wake; older ones are only counted


def _wake_posts(rows) -> list[compose.WakePost]:
    return [compose.WakePost(id=p.id, sender=h, created_at=p.created_at, text=p.text,
                             tokens=p.tokens, sender_is_agent=k == "agent", kind=p.kind,
                             reply_to=p.reply_to) for p, h, k in rows]


def _posts_query():
    return (sa.select(Post, Participant.handle, Participant.kind)
            .join(Participant, Participant.id == Post.sender_id))


def posts_by_id(s: Session, ids: Sequence[int]) -> list[compose.WakePost]:
    if not ids:
        return []
    return _wake_posts(s.execute(_posts_query().where(Post.id.in_(ids)).order_by(Post.id)))


def history(s: Session, mood_id: int, after_id: int, exclude: set[int],
            upto_id: Optional[int] = None) -> tuple[list[compose.WakePost], int]:
    """Posts after *after_id* (newest HISTORY_POSTS), and how many older ones were left out."""
    q = _posts_query().where(Post.mood_id == mood_id, Post.id > after_id)
    if upto_id is not None:
        q = q.where(Post.id <= upto_id)
    rows = s.execute(q.order_by(Post.id.desc()).limit(HISTORY_POSTS + len(exclude))).all()
    posts = [p for p in _wake_posts(reversed(rows)) if p.id not in exclude]
    earlier = 0
    if len(rows) == HISTORY_POSTS + len(exclude) and rows:
        oldest = rows[-1][0].id
        cq = sa.select(sa.func.count()).where(Post.mood_id == mood_id, Post.id > after_id,
                                              Post.id < oldest)
        earlier = s.scalar(cq) or 0
    return posts[-HISTORY_POSTS:], earlier


def also_asked(s: Session, post_ids: Sequence[int], agent_id: int,
               agent_ids: set[int]) -> list[compose.AlsoAsked]:
    if not post_ids:
        return []
    q = (sa.select(Participant.id, Participant.handle).join(Mention, Mention.participant_id == Participant.id)
         .where(Mention.post_id.in_(post_ids), Participant.id != agent_id).distinct())
    out = []
    for pid, handle in s.execute(q):
        if pid not in agent_ids:
            continue
        busy = s.scalar(sa.select(Wake.id).where(Wake.agent_id == pid,
                                                 Wake.status.in_(state.IN_FLIGHT)).limit(1))
        out.append(compose.AlsoAsked(handle, busy is not None))
    return sorted(out)


def cut_off(s: Session, agent_id: int, mood_id: int) -> Optional[compose.CutOff]:
    """The agent's last finished turn here, if it was cut off or failed."""
    last = state.last_finished(s, agent_id, mood_id)
    if last is None or last.status not in ("failed", "cut_off"):
        return None
    return compose.CutOff(last.finished_at, last.error or last.status.replace("_", " "))
