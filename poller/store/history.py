"""Day by day, for the pages' pictures: each agent's turns, tokens and dollars, and a
Mood's posts, over the last days (days in UTC, the oldest first, today last)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import sqlalchemy as sa

from poller.kinds import PostKind
from poller.models import Mood, Participant, Post, Turn, Wake
from poller.store.core import Store


@dataclass
class Day:
    day: dt.date
    turns: int = 0
    tokens: int = 0
    usd: float = 0.0
    posts: int = 0


def days_ending(now: dt.datetime, days: int) -> list[dt.date]:
    today = now.astimezone(dt.timezone.utc).date()
    return [today - dt.timedelta(days=n) for n in range(days - 1, -1, -1)]


def _start(now: dt.datetime, days: int) -> dt.datetime:
    first = days_ending(now, days)[0]
    return dt.datetime(first.year, first.month, first.day, tzinfo=dt.timezone.utc)


def _day(value) -> dt.date:
    """A day as the database gives it: a date (PostgreSQL) or its ISO text (SQLite)."""
    return value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value)[:10])


def agent_days(store: Store, now: dt.datetime, days: int = 14) -> dict[str, list[Day]]:
    """Per agent handle: turns started, prompt tokens sent and dollars spent, a day each."""
    day = sa.func.date(Wake.created_at)  # the column holds UTC
    with store.reading() as s:
        rows = s.execute(sa.select(Participant.handle, day, sa.func.count(Wake.id),
                                   sa.func.coalesce(sa.func.sum(Wake.prompt_tokens), 0),
                                   sa.func.coalesce(sa.func.sum(Turn.cost_usd), 0.0))
                         .join(Participant, Participant.id == Wake.agent_id)
                         .outerjoin(Turn, Turn.wake_id == Wake.id)
                         .where(Wake.created_at >= _start(now, days), Wake.created_at <= now)
                         .group_by(Participant.handle, day)).all()
    out: dict[str, dict[dt.date, Day]] = {}
    for handle, on, turns, tokens, usd in rows:
        out.setdefault(handle, {})[_day(on)] = Day(_day(on), int(turns), int(tokens), float(usd))
    return {h: [per.get(d, Day(d)) for d in days_ending(now, days)] for h, per in out.items()}


def mood_days(store: Store, slug: str, now: dt.datetime, days: int = 14) -> list[Day]:
    """The Mood's posts (a silent turn's dot is none), a day each."""
    day = sa.func.date(Post.created_at)
    with store.reading() as s:
        rows = s.execute(sa.select(day, sa.func.count(Post.id))
                         .join(Mood, Mood.id == Post.mood_id)
                         .where(Mood.slug == slug, Post.kind != PostKind.SILENT.value,
                                Post.created_at >= _start(now, days), Post.created_at <= now)
                         .group_by(day)).all()
    per = {_day(on): Day(_day(on), posts=int(n)) for on, n in rows}
    return [per.get(d, Day(d)) for d in days_ending(now, days)]
