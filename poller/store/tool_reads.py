"""What a turn's reading tools read (:mod:`poller.tools`): posts of one Mood, who is
there, the Moods an agent is in.  Reads only; every query here is bound to the turn's
Mood where it reads posts, so none shows another Mood's words (the ``search`` tool reads
:mod:`poller.store.search`, kept to the Moods the agent is in).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Optional

import sqlalchemy as sa
from sqlalchemy.orm import Session

from poller import values
from poller.kinds import ParticipantKind
from poller.models import Mood, Participant, Post, SignIn

REPLIES_SHOWN = 20  # replies to one post read_post lists, at most
MEMBERS_SHOWN = 60  # people and agents who_is_here lists, at most
MOODS_SHOWN = 60  # Moods list_moods lists, at most


def _posts():
    return (sa.select(Post.id, Post.created_at, Post.text, Post.tokens, Post.kind, Post.reply_to,
                      Participant.handle, Participant.kind.label("sender_kind"))
            .join(Participant, Participant.id == Post.sender_id))


def _as_posts(rows) -> list[values.WakePost]:
    agent = ParticipantKind.AGENT
    return [values.WakePost(id=r.id, sender=r.handle, created_at=r.created_at, text=r.text,
                            tokens=r.tokens, sender_is_agent=r.sender_kind == agent, kind=r.kind,
                            reply_to=r.reply_to)
            for r in rows]


def posts_before(s: Session, mood_id: int, before_id: Optional[int], limit: int,
                 ) -> list[values.WakePost]:
    """Up to *limit* posts of the Mood before *before_id* (None: the newest), newest first."""
    q = _posts().where(Post.mood_id == mood_id)
    if before_id is not None:
        q = q.where(Post.id < before_id)
    return _as_posts(s.execute(q.order_by(Post.id.desc()).limit(limit)))


def older_exists(s: Session, mood_id: int, before_id: int) -> bool:
    q = sa.select(Post.id).where(Post.mood_id == mood_id, Post.id < before_id).limit(1)
    return s.scalar(q) is not None


def post_in(s: Session, mood_id: int, post_id: int) -> Optional[values.WakePost]:
    """The post *post_id* if it is one of this Mood's (None for any other Mood's)."""
    rows = _as_posts(s.execute(_posts().where(Post.id == post_id, Post.mood_id == mood_id)))
    return rows[0] if rows else None


def replies_to(s: Session, mood_id: int, post_id: int) -> tuple[list[values.WakePost], int]:
    """The first REPLIES_SHOWN posts of this Mood that reply to *post_id*, and how many in all."""
    where = (Post.mood_id == mood_id, Post.reply_to == post_id)
    shown = _as_posts(s.execute(_posts().where(*where).order_by(Post.id).limit(REPLIES_SHOWN)))
    total = s.scalar(sa.select(sa.func.count()).select_from(Post).where(*where)) or 0
    return shown, total


@dataclass(frozen=True)
class Member:
    """One person or agent of a Mood, as who_is_here shows them."""

    handle: str
    kind: str  # person | agent
    trust: str
    operator: bool
    last_said: Optional[dt.datetime]  # their newest post here
    last_signed_in: Optional[dt.datetime]  # their newest sign-in here


def members(s: Session, mood_id: int) -> tuple[list[Member], int]:
    """The people who posted or signed in here and every agent (an agent may be asked in
    any Mood), removed ones left out, by handle; at most MEMBERS_SHOWN, and how many in all."""
    said = (sa.select(Post.sender_id.label("pid"), sa.func.max(Post.created_at).label("at"))
            .where(Post.mood_id == mood_id).group_by(Post.sender_id).subquery())
    signed = (sa.select(SignIn.participant_id.label("pid"), sa.func.max(SignIn.at).label("at"))
              .where(SignIn.mood_id == mood_id).group_by(SignIn.participant_id).subquery())
    here = sa.or_(Participant.kind == ParticipantKind.AGENT, said.c.pid.is_not(None),
                  signed.c.pid.is_not(None))
    base = (sa.select(Participant.handle, Participant.kind, Participant.trust,
                      Participant.operator, said.c.at.label("said"),
                      signed.c.at.label("signed"))
            .outerjoin(said, said.c.pid == Participant.id)
            .outerjoin(signed, signed.c.pid == Participant.id)
            .where(Participant.retired_at.is_(None), here))
    rows = s.execute(base.order_by(Participant.handle_key).limit(MEMBERS_SHOWN)).all()
    total = s.scalar(sa.select(sa.func.count()).select_from(base.subquery())) or 0
    return [Member(r.handle, r.kind, r.trust, bool(r.operator), r.said, r.signed)
            for r in rows], total


@dataclass(frozen=True)
class MoodSeen:
    slug: str
    title: str
    last_post: Optional[dt.datetime]  # the newest post there
    last_said: Optional[dt.datetime]  # the agent's own newest post there


def moods_of(s: Session, agent_id: int) -> tuple[list[MoodSeen], int]:
    """The Moods that are not archived (an agent is in every one), by slug; at most
    MOODS_SHOWN, and how many in all."""
    newest = (sa.select(Post.mood_id.label("mid"), sa.func.max(Post.created_at).label("at"))
              .group_by(Post.mood_id).subquery())
    mine = (sa.select(Post.mood_id.label("mid"), sa.func.max(Post.created_at).label("at"))
            .where(Post.sender_id == agent_id).group_by(Post.mood_id).subquery())
    base = (sa.select(Mood.slug, Mood.title, newest.c.at.label("last_post"),
                      mine.c.at.label("last_said"))
            .outerjoin(newest, newest.c.mid == Mood.id)
            .outerjoin(mine, mine.c.mid == Mood.id)
            .where(Mood.archived.is_(False)))
    rows = s.execute(base.order_by(Mood.slug).limit(MOODS_SHOWN)).all()
    total = s.scalar(sa.select(sa.func.count()).select_from(Mood)
                     .where(Mood.archived.is_(False))) or 0
    return [MoodSeen(r.slug, r.title, r.last_post, r.last_said) for r in rows], total


def mood_id(s: Session, slug: str) -> Optional[int]:
    return s.scalar(sa.select(Mood.id).where(Mood.slug == slug))
