"""What the Moods list shows a person: each Mood's last activity, what came since they
last read it on the page, and who is here.

A person has read a Mood up to the newest post the page showed them there (loaded, or
brought live by its event stream): :func:`mark` keeps that, only ever moving forward.
Unread are the posts after it that others wrote (a silent turn's dot is no post to
read), counted up to :data:`UNREAD_CAP`.  Here are the people who signed in to the
Mood or posted in it within :data:`HERE_FOR`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Optional

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from poller.kinds import ParticipantKind, PostKind
from poller.models import Mood, PageVisit, Participant, Post, SignIn
from poller.store.core import Store

UNREAD_CAP = 100  # counted up to this; the list says "99+" past it
HERE_FOR = dt.timedelta(minutes=30)


@dataclass(frozen=True)
class MoodLine:
    slug: str
    title: str
    last_at: Optional[dt.datetime]  # the newest post's time; None: nothing said yet
    unread: int  # up to UNREAD_CAP
    here: list[str] = field(default_factory=list)  # handles, by name


def mark(store: Store, person_id: int, mood_id: int, post_id: int, now: dt.datetime) -> None:
    """The person has been shown the Mood up to post *post_id* (never moved back)."""
    if post_id <= 0:
        return
    for _ in range(2):
        try:
            with store.writing() as s:
                row = s.get(PageVisit, (person_id, mood_id))
                if row is None:
                    s.add(PageVisit(participant_id=person_id, mood_id=mood_id,
                                    seen_post_id=post_id, at=now))
                elif row.seen_post_id < post_id:
                    row.seen_post_id, row.at = post_id, now
            return
        except IntegrityError:  # another request added the row first: update it
            continue


def moods_for(store: Store, person_id: int, now: dt.datetime) -> list[MoodLine]:
    """Every Mood that is not archived, as the person's Moods list shows it."""
    with store.reading() as s:
        moods = s.execute(sa.select(Mood.id, Mood.slug, Mood.title)
                          .where(Mood.archived.is_(False)).order_by(Mood.slug)).all()
        last = dict(s.execute(sa.select(Post.mood_id, sa.func.max(Post.created_at))
                              .where(Post.kind != PostKind.SILENT.value)
                              .group_by(Post.mood_id)).all())
        seen = dict(s.execute(sa.select(PageVisit.mood_id, PageVisit.seen_post_id)
                              .where(PageVisit.participant_id == person_id)).all())
        since = now - HERE_FOR
        here: dict[int, set[str]] = {}
        signed = sa.select(SignIn.mood_id, Participant.handle) \
            .join(Participant, Participant.id == SignIn.participant_id) \
            .where(SignIn.at >= since, SignIn.at <= now)
        posted = sa.select(Post.mood_id, Participant.handle) \
            .join(Participant, Participant.id == Post.sender_id) \
            .where(Post.created_at >= since, Post.created_at <= now,
                   Participant.kind == ParticipantKind.PERSON.value)
        for mood_id, handle in [*s.execute(signed), *s.execute(posted)]:
            here.setdefault(mood_id, set()).add(handle)
        out = []
        for mood_id, slug, title in moods:
            unread = s.scalar(sa.select(sa.func.count()).select_from(
                sa.select(Post.id).where(Post.mood_id == mood_id,
                                         Post.id > seen.get(mood_id, 0),
                                         Post.sender_id != person_id,
                                         Post.kind != PostKind.SILENT.value)
                .limit(UNREAD_CAP).subquery()))
            out.append(MoodLine(slug, title, last.get(mood_id), unread,
                                sorted(here.get(mood_id, ()), key=str.lower)))
    return out
