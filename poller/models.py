"""The SQL schema: typed SQLAlchemy 2 declarative models.

Alembic migrations in ``poller/migrations`` must produce exactly this schema
(a test runs autogenerate against a migrated database and expects no diff).
Times are stored as naive UTC and come back as aware UTC datetimes.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Optional

from sqlalchemy import (JSON, BigInteger, Boolean, DateTime, ForeignKey, Index, Integer,
                        MetaData, String, Text, TypeDecorator, UniqueConstraint)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# SQLite only autoincrements plain INTEGER primary keys.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class UTCDateTime(TypeDecorator):
    """Aware UTC datetimes in, aware UTC datetimes out, naive UTC in the column."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: Optional[dt.datetime], dialect) -> Optional[dt.datetime]:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the store; pass an aware UTC time")
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)

    def process_result_value(self, value: Optional[dt.datetime], dialect) -> Optional[dt.datetime]:
        if value is None:
            return None
        return value.replace(tzinfo=dt.timezone.utc)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {dt.datetime: UTCDateTime(), dict[str, Any]: JSON()}


class Mood(Base):
    __tablename__ = "moods"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    title: Mapped[str] = mapped_column(String(200), default="")
    archived: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[dt.datetime]


class Participant(Base):
    """A person or an agent. ``handle_key`` is the lower-cased handle (unique)."""

    __tablename__ = "participants"

    id: Mapped[int] = mapped_column(primary_key=True)
    handle: Mapped[str] = mapped_column(String(64))
    handle_key: Mapped[str] = mapped_column(String(64), unique=True)
    kind: Mapped[str] = mapped_column(String(8))  # person | agent
    trust: Mapped[str] = mapped_column(String(8), default="look")  # full | look | none
    created_at: Mapped[dt.datetime]


class Agent(Base):
    """How an agent participant is woken (its waker) and its per-agent limits."""

    __tablename__ = "agents"

    participant_id: Mapped[int] = mapped_column(ForeignKey("participants.id"), primary_key=True)
    waker: Mapped[str] = mapped_column(String(16))  # command | claude-code | url
    command: Mapped[Optional[str]] = mapped_column(Text)
    url: Mapped[Optional[str]] = mapped_column(Text)
    timeout: Mapped[Optional[float]]  # seconds; None: the config's defaults
    workdir: Mapped[Optional[str]] = mapped_column(Text)
    options: Mapped[dict[str, Any]] = mapped_column(default=dict)  # waker-specific


class Post(Base):
    __tablename__ = "posts"
    __table_args__ = (
        Index("ix_posts_mood_id_id", "mood_id", "id"),
        Index("ix_posts_sender_mood_id", "sender_id", "mood_id", "id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    mood_id: Mapped[int] = mapped_column(ForeignKey("moods.id"))
    sender_id: Mapped[int] = mapped_column(ForeignKey("participants.id"))
    created_at: Mapped[dt.datetime]
    text: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String(8), default="post")  # post|silent|system|handoff
    reply_to: Mapped[Optional[int]] = mapped_column(BigId, ForeignKey("posts.id"))
    tokens: Mapped[int] = mapped_column(Integer)  # counted once, at ingest


class Mention(Base):
    """``post_id`` names ``participant_id`` (an @handle, or a reply to its post)."""

    __tablename__ = "mentions"
    __table_args__ = (Index("ix_mentions_participant_post", "participant_id", "post_id"),)

    post_id: Mapped[int] = mapped_column(BigId, ForeignKey("posts.id"), primary_key=True)
    participant_id: Mapped[int] = mapped_column(ForeignKey("participants.id"), primary_key=True)
    via: Mapped[str] = mapped_column(String(8), default="at")  # at | reply


class SignIn(Base):
    __tablename__ = "signins"
    __table_args__ = (Index("ix_signins_mood_at", "mood_id", "at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    participant_id: Mapped[int] = mapped_column(ForeignKey("participants.id"))
    mood_id: Mapped[int] = mapped_column(ForeignKey("moods.id"))
    tier: Mapped[str] = mapped_column(String(8), default="key")  # key | wiki
    label: Mapped[str] = mapped_column(String(200), default="")
    at: Mapped[dt.datetime]


class Setting(Base):
    """Append-only: the newest row of the most specific slot wins."""

    __tablename__ = "settings"
    __table_args__ = (Index("ix_settings_key_slot", "key", "mood_id", "agent_id", "id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    mood_id: Mapped[Optional[int]] = mapped_column(ForeignKey("moods.id"))  # None: every Mood
    agent_id: Mapped[Optional[int]] = mapped_column(ForeignKey("participants.id"))  # None: every agent
    key: Mapped[str] = mapped_column(String(32))
    value: Mapped[str] = mapped_column(String(200))
    until: Mapped[Optional[dt.datetime]]  # listening only: the value lapses then
    set_by: Mapped[Optional[int]] = mapped_column(ForeignKey("participants.id"))
    note: Mapped[str] = mapped_column(Text, default="")
    at: Mapped[dt.datetime]


class DialCache(Base):
    """The last good copy of the dials wiki page, so a restart with the wiki down has it."""

    __tablename__ = "dial_cache"
    __table_args__ = (UniqueConstraint("site", "title", name="uq_dial_cache_site_title"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    site: Mapped[str] = mapped_column(String(200))
    title: Mapped[str] = mapped_column(String(255))
    revid: Mapped[int] = mapped_column(BigInteger)
    wikitext: Mapped[str] = mapped_column(Text)
    protected: Mapped[Optional[bool]]  # None: unknown
    fetched_at: Mapped[dt.datetime]
