"""The SQL schema: typed SQLAlchemy 2 declarative models.

Alembic migrations in ``poller/migrations`` must produce exactly this schema
(a test runs autogenerate against a migrated database and expects no diff),
but for the search index over posts, which declarative models cannot say
(see :data:`SEARCH_TABLE`, and :func:`modelled`, which keeps it out of the comparison).
Times are stored as naive UTC and come back as aware UTC datetimes.

The annotations are evaluated as the classes are made (no ``from __future__ import
annotations``): SQLAlchemy then need not evaluate each one from a string, which made
every command that imports the models start about 7 ms later.
"""

import datetime as dt
from typing import Any, Optional

from sqlalchemy import (JSON, BigInteger, Boolean, DateTime, ForeignKey, Index, Integer,
                        MetaData, String, Text, TypeDecorator, UniqueConstraint, false)
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
    typing_at: Mapped[Optional[dt.datetime]]  # the last "someone is typing" signal


class Participant(Base):
    """A person or an agent. ``handle_key`` is the lower-cased handle (unique).

    A removed participant is kept (posts, wakes and decisions refer to it) with
    ``retired_at`` set and its ``handle_key`` renamed ``<key>~retired-<id>``, so the
    handle is free for someone new; ``handle`` keeps the name history shows.
    """

    __tablename__ = "participants"

    id: Mapped[int] = mapped_column(primary_key=True)
    handle: Mapped[str] = mapped_column(String(64))
    handle_key: Mapped[str] = mapped_column(String(64), unique=True)
    kind: Mapped[str] = mapped_column(String(8))  # person | agent
    trust: Mapped[str] = mapped_column(String(8), default="look")  # full | look | none
    created_at: Mapped[dt.datetime]
    retired_at: Mapped[Optional[dt.datetime]]  # removed: may no longer post
    # May use the operators' pages and API and the emergency stop (migration 0009).
    operator: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class Agent(Base):
    """How an agent participant is woken (its waker) and its per-agent limits."""

    __tablename__ = "agents"

    participant_id: Mapped[int] = mapped_column(ForeignKey("participants.id"), primary_key=True)
    waker: Mapped[str] = mapped_column(String(16))  # a registered waker's name (command, url...)
    command: Mapped[Optional[str]] = mapped_column(Text)
    url: Mapped[Optional[str]] = mapped_column(Text)
    timeout: Mapped[Optional[float]]  # seconds; None: the config's defaults
    workdir: Mapped[Optional[str]] = mapped_column(Text)
    options: Mapped[dict[str, Any]] = mapped_column(default=dict)  # waker-specific
    retired_at: Mapped[Optional[dt.datetime]]  # removed: the loop no longer sees it


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


class PageVisit(Base):
    """How far a person has read a Mood on the page: the newest post shown to them there
    (the Moods list counts what came after as unread)."""

    __tablename__ = "page_visits"

    participant_id: Mapped[int] = mapped_column(ForeignKey("participants.id"), primary_key=True)
    mood_id: Mapped[int] = mapped_column(ForeignKey("moods.id"), primary_key=True)
    seen_post_id: Mapped[int] = mapped_column(BigInteger, default=0)
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


# -- The loop's state (migration 0002) ------------------------------------------


class Cursor(Base):
    """How far the loop has read an append-only table (``posts``, ``signins``)."""

    __tablename__ = "cursors"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    value: Mapped[int] = mapped_column(BigInteger, default=0)
    at: Mapped[dt.datetime]


class Flag(Base):
    """A named switch with who set it: the emergency stop (``scram``) lives here."""

    __tablename__ = "flags"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    value: Mapped[str] = mapped_column(String(200), default="")
    set_by: Mapped[Optional[str]] = mapped_column(String(64))
    at: Mapped[dt.datetime]


class Lease(Base):
    """A lease with expiry: on SQLite only one poller runs at a time."""

    __tablename__ = "leases"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    holder: Mapped[str] = mapped_column(String(100))
    expires_at: Mapped[dt.datetime]


class Listener(Base):
    """One agent listening in one Mood: its timers, cursors and hold.

    ``due_at`` is the earliest time anything here needs looking at (a consider
    settling, a quiet look, a hold to re-check, a cooldown ending); the loop
    reads only rows that are due, never every Mood.
    """

    __tablename__ = "listeners"
    __table_args__ = (Index("ix_listeners_due_at", "due_at"),)

    agent_id: Mapped[int] = mapped_column(ForeignKey("participants.id"), primary_key=True)
    mood_id: Mapped[int] = mapped_column(ForeignKey("moods.id"), primary_key=True)
    due_at: Mapped[Optional[dt.datetime]]
    last_person_at: Mapped[Optional[dt.datetime]]  # a person said something
    last_person_id: Mapped[int] = mapped_column(BigInteger, default=0)
    looked_id: Mapped[int] = mapped_column(BigInteger, default=0)  # newest post its last wake saw
    consider_from_id: Mapped[int] = mapped_column(BigInteger, default=0)  # 0: nothing to consider
    consider_due_at: Mapped[Optional[dt.datetime]]
    quiet_due_at: Mapped[Optional[dt.datetime]]
    quiet_backoff: Mapped[int] = mapped_column(Integer, default=0)  # next wait is idle_after * 2**n
    cooldown_until: Mapped[Optional[dt.datetime]]
    arrival_signin_id: Mapped[int] = mapped_column(BigInteger, default=0)  # 0: no arrival pending
    hold_reason: Mapped[Optional[str]] = mapped_column(String(64))
    hold_since: Mapped[Optional[dt.datetime]]
    # A turn here was cut off with no reply: a look-only follow-up is due (migration 0007).
    followup_of: Mapped[int] = mapped_column(BigInteger, default=0)  # the cut-off wake; 0: none
    followup_due_at: Mapped[Optional[dt.datetime]]
    # Stopped here (``mood-poller stop``, or "@agent stop" from a trusted person) until lifted.
    stopped_at: Mapped[Optional[dt.datetime]]
    stopped_by: Mapped[Optional[str]] = mapped_column(String(64))
    # A person's slash command for the agent's session here, waiting to run (migration 0010).
    command_post_id: Mapped[int] = mapped_column(BigInteger, default=0)  # 0: none
    # Back from an absence with pings it missed: a return wake is due here (migration 0011).
    return_of: Mapped[int] = mapped_column(BigInteger, default=0)  # the activity; 0: none
    nudge_due_at: Mapped[Optional[dt.datetime]]  # an idle nudge is due here
    # Kinds of wake that keep no column of their own: {kind: [due_at, ref]} as JSON, ""
    # for none (migration 0014; see poller.store.cycle.mark).
    marks: Mapped[str] = mapped_column(Text, default="")


class Owed(Base):
    """A mention the agent owes an answer to, until a wake takes it."""

    __tablename__ = "owed"
    __table_args__ = (Index("ix_owed_mood_agent", "mood_id", "agent_id"),)

    agent_id: Mapped[int] = mapped_column(ForeignKey("participants.id"), primary_key=True)
    post_id: Mapped[int] = mapped_column(BigId, ForeignKey("posts.id"), primary_key=True)
    mood_id: Mapped[int] = mapped_column(ForeignKey("moods.id"))


class Wake(Base):
    """A wake and the turn it started: recorded before the turn runs."""

    __tablename__ = "wakes"
    __table_args__ = (
        Index("ix_wakes_agent_mood_id", "agent_id", "mood_id", "id"),
        Index("ix_wakes_status", "status"),
        Index("ix_wakes_agent_created", "agent_id", "created_at"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    agent_id: Mapped[int] = mapped_column(ForeignKey("participants.id"))
    mood_id: Mapped[int] = mapped_column(ForeignKey("moods.id"))
    kind: Mapped[str] = mapped_column(String(16))  # mention | consider | quiet | arrival
    tools: Mapped[str] = mapped_column(String(8))  # full | look
    # pending -> running -> replied | silent | failed | cut_off
    status: Mapped[str] = mapped_column(String(16), default="pending")
    created_at: Mapped[dt.datetime]
    started_at: Mapped[Optional[dt.datetime]]
    finished_at: Mapped[Optional[dt.datetime]]
    text: Mapped[str] = mapped_column(Text)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    dial_source: Mapped[str] = mapped_column(String(64), default="fallback")
    about_id: Mapped[Optional[int]] = mapped_column(ForeignKey("participants.id"))  # arrival: who
    seen_id: Mapped[int] = mapped_column(BigInteger, default=0)  # newest post in the wake
    host: Mapped[str] = mapped_column(String(100), default="")
    runner_pid: Mapped[Optional[int]]
    heartbeat_at: Mapped[Optional[dt.datetime]]  # the runner says it is alive (migration 0004)
    agent_pgid: Mapped[Optional[int]]
    reply_post_id: Mapped[Optional[int]] = mapped_column(BigId, ForeignKey("posts.id"))
    error: Mapped[str] = mapped_column(Text, default="")
    # What a running turn is doing (the tool it uses, the file it reads), names only;
    # cleared when the turn ends (migration 0010).
    progress: Mapped[Optional[str]] = mapped_column(String(200))


class WakeAnswer(Base):
    """The posts a wake answers: unique per agent, so no post is answered twice."""

    __tablename__ = "wake_posts"
    __table_args__ = (UniqueConstraint("agent_id", "post_id", name="uq_wake_posts_agent_post"),)

    wake_id: Mapped[int] = mapped_column(BigId, ForeignKey("wakes.id"), primary_key=True)
    post_id: Mapped[int] = mapped_column(BigId, ForeignKey("posts.id"), primary_key=True)
    agent_id: Mapped[int] = mapped_column(ForeignKey("participants.id"))


class DecisionRow(Base):
    """What ``decide`` said about one (agent, Mood, kind), with a reason code."""

    __tablename__ = "decisions"
    __table_args__ = (Index("ix_decisions_agent_mood_kind", "agent_id", "mood_id", "kind", "id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    agent_id: Mapped[int] = mapped_column(ForeignKey("participants.id"))
    mood_id: Mapped[int] = mapped_column(ForeignKey("moods.id"))
    kind: Mapped[str] = mapped_column(String(16))
    outcome: Mapped[str] = mapped_column(String(8))  # wake | hold | defer | skip
    reason: Mapped[str] = mapped_column(String(64))
    next_due: Mapped[Optional[dt.datetime]]
    wake_id: Mapped[Optional[int]] = mapped_column(BigId, ForeignKey("wakes.id"))
    at: Mapped[dt.datetime]
    last_at: Mapped[dt.datetime]  # the same decision, repeated, only moves this
    count: Mapped[int] = mapped_column(Integer, default=1)
    detail: Mapped[Optional[str]] = mapped_column(String(200))  # e.g. the screen's one-line reason


# -- Richer turns: sessions, handoffs, refusals (migration 0003) ------------------


class Turn(Base):
    """What a turn left besides its reply: the settings it had seen, its session, its cost.

    ``settings_seen_id`` is the newest settings row when the wake was composed,
    so the next wake here lists exactly the changes made since.
    """

    __tablename__ = "turns"

    wake_id: Mapped[int] = mapped_column(BigId, ForeignKey("wakes.id"), primary_key=True)
    settings_seen_id: Mapped[int] = mapped_column(BigInteger, default=0)
    session_id: Mapped[Optional[str]] = mapped_column(String(200))
    cost_usd: Mapped[Optional[float]]
    tokens_in: Mapped[Optional[int]]  # as the model's provider reported them (migration 0015)
    tokens_out: Mapped[Optional[int]]


class AgentSession(Base):
    """The resumable session (e.g. Claude Code's) an agent keeps in one Mood."""

    __tablename__ = "agent_sessions"

    agent_id: Mapped[int] = mapped_column(ForeignKey("participants.id"), primary_key=True)
    mood_id: Mapped[int] = mapped_column(ForeignKey("moods.id"), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(200))
    wake_id: Mapped[Optional[int]] = mapped_column(BigId, ForeignKey("wakes.id"))  # last used by
    updated_at: Mapped[dt.datetime]
    # A model agent's conversation, kept here between its turns (JSON; migration 0015).
    history: Mapped[Optional[str]] = mapped_column(Text)
    history_tokens: Mapped[Optional[int]]


class Handoff(Base):
    """Context an agent carried from one Mood to another, until a wake takes it."""

    __tablename__ = "handoffs"
    __table_args__ = (Index("ix_handoffs_to_mood_taken", "to_mood_id", "taken_wake_id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    wake_id: Mapped[int] = mapped_column(BigId, ForeignKey("wakes.id"))  # the turn that wrote it
    agent_id: Mapped[int] = mapped_column(ForeignKey("participants.id"))  # who handed it
    from_mood_id: Mapped[int] = mapped_column(ForeignKey("moods.id"))
    to_mood_id: Mapped[int] = mapped_column(ForeignKey("moods.id"))
    for_agent_id: Mapped[Optional[int]] = mapped_column(ForeignKey("participants.id"))  # None: anyone
    about: Mapped[str] = mapped_column(String(100))
    context: Mapped[str] = mapped_column(Text)
    event_post_id: Mapped[Optional[int]] = mapped_column(BigId, ForeignKey("posts.id"))  # in to_mood
    at: Mapped[dt.datetime]
    taken_wake_id: Mapped[Optional[int]] = mapped_column(BigId, ForeignKey("wakes.id"))


class Refusal(Base):
    """A block refused from an agent's reply, until its next wake in that Mood reports it."""

    __tablename__ = "refusals"
    __table_args__ = (Index("ix_refusals_agent_mood_reported", "agent_id", "mood_id",
                            "reported_wake_id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    wake_id: Mapped[int] = mapped_column(BigId, ForeignKey("wakes.id"))  # the turn it came from
    agent_id: Mapped[int] = mapped_column(ForeignKey("participants.id"))
    mood_id: Mapped[int] = mapped_column(ForeignKey("moods.id"))
    block: Mapped[str] = mapped_column(String(16))  # handoff | settings
    reason: Mapped[str] = mapped_column(Text)
    at: Mapped[dt.datetime]
    reported_wake_id: Mapped[Optional[int]] = mapped_column(BigId, ForeignKey("wakes.id"))


# -- Robustness (migration 0006) --------------------------------------------------------


class Quarantine(Base):
    """An item the cycle could not process: set aside with its error so the rest goes on.

    ``kind`` is what it was (``post``, ``signin``, ``listener``); ``ref`` names it
    (a post id, a sign-in id, ``agent:mood``).  The same failure again only
    moves ``last_at`` and ``count``.
    """

    __tablename__ = "quarantine"
    __table_args__ = (UniqueConstraint("kind", "ref", name="uq_quarantine_kind_ref"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(16))
    ref: Mapped[str] = mapped_column(String(64))
    agent_id: Mapped[Optional[int]] = mapped_column(ForeignKey("participants.id"))
    mood_id: Mapped[Optional[int]] = mapped_column(ForeignKey("moods.id"))
    error: Mapped[str] = mapped_column(Text)
    at: Mapped[dt.datetime]
    last_at: Mapped[dt.datetime]
    count: Mapped[int] = mapped_column(Integer, default=1)


# -- The front door: people's tokens, web sessions, pollers' beats (migration 0009) ----------


class PersonToken(Base):
    """A person's API token: only its SHA-256 is kept; the token is shown once."""

    __tablename__ = "person_tokens"
    __table_args__ = (Index("ix_person_tokens_participant", "participant_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    participant_id: Mapped[int] = mapped_column(ForeignKey("participants.id"))
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[dt.datetime]
    revoked_at: Mapped[Optional[dt.datetime]]


class WebSession(Base):
    """A signed-in browser: the cookie's SHA-256, and the token it was opened with
    (revoking the token ends the session)."""

    __tablename__ = "web_sessions"

    id: Mapped[int] = mapped_column(primary_key=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    token_id: Mapped[int] = mapped_column(ForeignKey("person_tokens.id"))
    created_at: Mapped[dt.datetime]
    expires_at: Mapped[dt.datetime]


class PollerBeat(Base):
    """A running poller's last cycle: what ``/healthz`` and ``mood-poller health`` read."""

    __tablename__ = "poller_beats"

    holder: Mapped[str] = mapped_column(String(100), primary_key=True)
    at: Mapped[dt.datetime]
    interval: Mapped[float]
    took: Mapped[float]  # seconds the cycle took
    scope: Mapped[str] = mapped_column(String(300), default="all", server_default="all")  # the Moods it serves


# -- Away and back (migration 0011) -------------------------------------------------------------


class Activity(Base):
    """An absence: an agent out for an activity from its catalog.

    Append-only: the absence in progress has ``returned_at`` NULL; its return
    fills in how it ended.  What the return needs of the catalog entry (label,
    seed, reachable, the knobs) is kept on the row, so a return after a
    restart does not depend on the file.  ``return_holder`` claims the return
    flow for one poller (a claim whose holder died is taken over).
    """

    __tablename__ = "activities"
    __table_args__ = (Index("ix_activities_agent_id", "agent_id", "id"),
                      Index("ix_activities_returned_due", "returned_at", "due_at"))

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    agent_id: Mapped[int] = mapped_column(ForeignKey("participants.id"))
    mood_id: Mapped[int] = mapped_column(ForeignKey("moods.id"))  # the Mood it left from
    activity: Mapped[str] = mapped_column(String(40))  # the catalog id
    label: Mapped[str] = mapped_column(String(100))
    seed: Mapped[str] = mapped_column(Text)
    note: Mapped[str] = mapped_column(Text, default="")
    reachable: Mapped[bool] = mapped_column(Boolean)
    archive_after_minutes: Mapped[int] = mapped_column(Integer)
    catch_up_limit: Mapped[int] = mapped_column(Integer)
    departed_at: Mapped[dt.datetime]
    due_at: Mapped[dt.datetime]  # when it comes back (sooner if a ping calls it back)
    departure_post_id: Mapped[int] = mapped_column(BigId, ForeignKey("posts.id"))  # its goodbye
    departure_wake_id: Mapped[Optional[int]] = mapped_column(BigId, ForeignKey("wakes.id"))
    status: Mapped[str] = mapped_column(String(16), default="away")  # away|completed|cut_short
    cut_short_by: Mapped[Optional[int]] = mapped_column(ForeignKey("participants.id"))
    returned_at: Mapped[Optional[dt.datetime]]
    return_post_id: Mapped[Optional[int]] = mapped_column(BigId, ForeignKey("posts.id"))
    return_holder: Mapped[Optional[str]] = mapped_column(String(100))
    return_claimed_at: Mapped[Optional[dt.datetime]]
    missed: Mapped[int] = mapped_column(Integer, default=0)  # pings its return wake lists
    fresh_eyes: Mapped[bool] = mapped_column(Boolean, default=False)  # long enough to reset


class ActivityPing(Base):
    """A mention that reached an agent while it was out: a judgment it was woken for,
    one the gate noted, or one found when it came back."""

    __tablename__ = "activity_pings"
    __table_args__ = (UniqueConstraint("activity_id", "post_id",
                                       name="uq_activity_pings_activity_post"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    activity_id: Mapped[int] = mapped_column(BigId, ForeignKey("activities.id"))
    post_id: Mapped[int] = mapped_column(BigId, ForeignKey("posts.id"))
    mood_id: Mapped[int] = mapped_column(ForeignKey("moods.id"))
    sender_id: Mapped[int] = mapped_column(ForeignKey("participants.id"))
    kind: Mapped[str] = mapped_column(String(16))  # judgment | noted | found
    wake_id: Mapped[Optional[int]] = mapped_column(BigId, ForeignKey("wakes.id"))
    at: Mapped[dt.datetime]


class CatchUpMark(Base):
    """Fresh eyes in one Mood: after a long absence, the posts made while the agent was out
    that are older than the Mood's last ``catch_up_limit`` and do not mention it are
    missed, never shown nor summarized in its wakes."""

    __tablename__ = "catch_up_marks"

    agent_id: Mapped[int] = mapped_column(ForeignKey("participants.id"), primary_key=True)
    mood_id: Mapped[int] = mapped_column(ForeignKey("moods.id"), primary_key=True)
    activity_id: Mapped[int] = mapped_column(BigId, ForeignKey("activities.id"))
    from_id: Mapped[int] = mapped_column(BigInteger)  # its goodbye: the window starts after it
    missed_before: Mapped[int] = mapped_column(BigInteger)  # missed: from_id < id < this
    missed: Mapped[int] = mapped_column(Integer)
    at: Mapped[dt.datetime]


# -- Scheduled wakes and check-in agreements (migration 0012) ---------------------------------


class Alarm(Base):
    """A wake asked for at a time: once (``at``), ``daily`` or by ``cron``, in a real zone.

    ``next_at`` is the oldest firing not yet woken for (None: nothing more to
    fire).  A wake covers every firing up to when it is recorded and moves
    ``next_at`` past them in the same transaction, so a poller that was down
    sends one late wake, never a burst.  ``version`` moves with each change, so
    two pollers never record the same firing twice.
    """

    __tablename__ = "alarms"
    __table_args__ = (Index("ix_alarms_next_at", "next_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    agent_id: Mapped[int] = mapped_column(ForeignKey("participants.id"))
    mood_id: Mapped[int] = mapped_column(ForeignKey("moods.id"))
    kind: Mapped[str] = mapped_column(String(8))  # at | daily | cron
    spec: Mapped[str] = mapped_column(String(200))  # "2026-12-24 09:00" | "09:00" | "0 9 * * MON-FRI"
    tz: Mapped[str] = mapped_column(String(64))
    note: Mapped[str] = mapped_column(Text, default="")
    set_by: Mapped[str] = mapped_column(String(100), default="")  # operator | @agent | person
    lateness_cutoff_minutes: Mapped[int] = mapped_column(Integer, default=60)
    created_at: Mapped[dt.datetime]
    next_at: Mapped[Optional[dt.datetime]]
    last_wake_id: Mapped[Optional[int]] = mapped_column(BigId, ForeignKey("wakes.id"))
    fired: Mapped[int] = mapped_column(Integer, default=0)  # firings woken for, in all
    removed_at: Mapped[Optional[dt.datetime]]
    version: Mapped[int] = mapped_column(Integer, default=0)


class CheckinAgreement(Base):
    """A person's promise to check in by a time, watched by an agent in a Mood.

    Deadlines up to ``answered_until`` are answered (checked in for); up to
    ``processed_until`` a wake has looked at them.  ``next_check_at`` is when
    the poller must look again (a deadline, or a grace ending).
    """

    __tablename__ = "checkin_agreements"
    __table_args__ = (Index("ix_checkin_agreements_next_check_at", "next_check_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    person_id: Mapped[int] = mapped_column(ForeignKey("participants.id"))
    agent_id: Mapped[int] = mapped_column(ForeignKey("participants.id"))
    mood_id: Mapped[int] = mapped_column(ForeignKey("moods.id"))
    kind: Mapped[str] = mapped_column(String(8))  # once | daily
    spec: Mapped[str] = mapped_column(String(32))
    tz: Mapped[str] = mapped_column(String(64))
    grace_minutes: Mapped[int] = mapped_column(Integer, default=60)
    lateness_cutoff_minutes: Mapped[int] = mapped_column(Integer, default=120)
    status: Mapped[str] = mapped_column(String(16), default="active")
    contact_email: Mapped[Optional[str]] = mapped_column(String(254))
    consent_digest: Mapped[Optional[str]] = mapped_column(String(64))  # the invitation's code, hashed
    consent_at: Mapped[Optional[dt.datetime]]
    armed: Mapped[bool] = mapped_column(Boolean, default=False)
    answered_until: Mapped[Optional[dt.datetime]]
    processed_until: Mapped[dt.datetime]
    next_check_at: Mapped[Optional[dt.datetime]]
    created_at: Mapped[dt.datetime]
    updated_at: Mapped[dt.datetime]
    version: Mapped[int] = mapped_column(Integer, default=0)


class CheckinStreak(Base):
    """Missed deadlines in a row, until the person checks in (or pause, cancel, replace)."""

    __tablename__ = "checkin_streaks"
    __table_args__ = (Index("ix_checkin_streaks_agreement", "agreement_id", "closed_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    agreement_id: Mapped[int] = mapped_column(ForeignKey("checkin_agreements.id"))
    first_due: Mapped[dt.datetime]
    last_due: Mapped[dt.datetime]
    opened_at: Mapped[dt.datetime]
    closed_at: Mapped[Optional[dt.datetime]]
    closed_by: Mapped[str] = mapped_column(String(16), default="")  # checkin | pause | cancel | ...
    grace_until: Mapped[Optional[dt.datetime]]  # planned once, by the first confirmed on-time notice
    grace_wake_id: Mapped[Optional[int]] = mapped_column(BigId, ForeignKey("wakes.id"))
    contact_state: Mapped[str] = mapped_column(String(16), default="")
    contact_wake_id: Mapped[Optional[int]] = mapped_column(BigId, ForeignKey("wakes.id"))
    contact_note: Mapped[str] = mapped_column(Text, default="")


class CheckinNotice(Base):
    """A checkin-missed wake: the deadlines it tells the person about, and when its
    reply was posted (the notice confirmed)."""

    __tablename__ = "checkin_notices"

    wake_id: Mapped[int] = mapped_column(BigId, ForeignKey("wakes.id"), primary_key=True)
    streak_id: Mapped[int] = mapped_column(ForeignKey("checkin_streaks.id"))
    oldest_due: Mapped[dt.datetime]
    newest_due: Mapped[dt.datetime]
    late: Mapped[bool] = mapped_column(Boolean, default=False)
    confirmed_at: Mapped[Optional[dt.datetime]]


class MailOut(Base):
    """An e-mail to send (a consent invitation, a contact message): written in the
    transaction that decides it, sent by a poller with its Message-ID, once."""

    __tablename__ = "mail_outbox"
    __table_args__ = (Index("ix_mail_outbox_state", "state"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    agreement_id: Mapped[Optional[int]] = mapped_column(ForeignKey("checkin_agreements.id"))
    streak_id: Mapped[Optional[int]] = mapped_column(ForeignKey("checkin_streaks.id"))
    purpose: Mapped[str] = mapped_column(String(16))  # invite | contact
    recipient: Mapped[str] = mapped_column(String(254))
    subject: Mapped[str] = mapped_column(String(300))
    body: Mapped[str] = mapped_column(Text)
    message_id: Mapped[str] = mapped_column(String(200), unique=True)
    state: Mapped[str] = mapped_column(String(16), default="pending")  # pending sending handing sent failed uncertain
    created_at: Mapped[dt.datetime]
    claimed_at: Mapped[Optional[dt.datetime]]
    claimed_by: Mapped[str] = mapped_column(String(100), default="")
    sent_at: Mapped[Optional[dt.datetime]]
    error: Mapped[str] = mapped_column(Text, default="")


# -- Bridges: external ids, the outbox, webhook subscribers (migration 0013) -------------


class BridgeLink(Base):
    """A Mood or a person as a bridge names it: a Matrix room id or alias, a user id.

    ``local_id`` is the Mood's id (``kind`` ``mood``) or the participant's
    (``person``); ``options`` holds per-link switches (``legacy`` for a room
    where a bare name in the body counts as a mention).
    """

    __tablename__ = "bridge_links"
    __table_args__ = (
        UniqueConstraint("bridge", "kind", "external", name="uq_bridge_links_external"),
        UniqueConstraint("bridge", "kind", "local_id", name="uq_bridge_links_local"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    bridge: Mapped[str] = mapped_column(String(16))
    kind: Mapped[str] = mapped_column(String(8))  # mood | person
    local_id: Mapped[int] = mapped_column(Integer)
    external: Mapped[str] = mapped_column(String(255))
    options: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[dt.datetime]


class BridgeEvent(Base):
    """An external event taken in (or a post a bridge sent out), by its external id.

    Unique per bridge, so the same event delivered twice changes nothing.
    """

    __tablename__ = "bridge_events"
    __table_args__ = (
        UniqueConstraint("bridge", "external_id", name="uq_bridge_events_external"),
        Index("ix_bridge_events_post_id", "post_id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    bridge: Mapped[str] = mapped_column(String(16))
    external_id: Mapped[str] = mapped_column(String(255))
    post_id: Mapped[Optional[int]] = mapped_column(BigId, ForeignKey("posts.id"))
    signin_id: Mapped[Optional[int]] = mapped_column(BigId, ForeignKey("signins.id"))
    thread: Mapped[Optional[str]] = mapped_column(String(255))  # the thread root it was in
    at: Mapped[dt.datetime]


class OutboxItem(Base):
    """One item a bridge is to deliver: written with what it carries, sent once.

    ``pending`` until sent (``next_at`` is the next attempt), ``sent`` with the
    remote's id, ``failed`` when attempts ran out (``outbox retry`` sends it
    again).  Items for one target go out in id order.
    """

    __tablename__ = "outbox"
    __table_args__ = (Index("ix_outbox_bridge_status_next_at", "bridge", "status", "next_at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    bridge: Mapped[str] = mapped_column(String(16))  # matrix | webhook
    target: Mapped[str] = mapped_column(String(255))  # a room id, a webhook's id
    mood_id: Mapped[int] = mapped_column(ForeignKey("moods.id"))
    post_id: Mapped[Optional[int]] = mapped_column(BigId, ForeignKey("posts.id"))
    wake_id: Mapped[Optional[int]] = mapped_column(BigId, ForeignKey("wakes.id"))
    event: Mapped[str] = mapped_column(String(16))  # reply | notice | post | silent | turn_...
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    status: Mapped[str] = mapped_column(String(8), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_at: Mapped[dt.datetime]
    last_error: Mapped[str] = mapped_column(Text, default="")
    external_id: Mapped[Optional[str]] = mapped_column(String(255))
    created_at: Mapped[dt.datetime]
    sent_at: Mapped[Optional[dt.datetime]]


class Webhook(Base):
    """A subscriber URL of one Mood: its events are POSTed there, signed with *secret*."""

    __tablename__ = "webhooks"
    __table_args__ = (Index("ix_webhooks_mood_id", "mood_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    mood_id: Mapped[int] = mapped_column(ForeignKey("moods.id"))
    url: Mapped[str] = mapped_column(Text)
    secret: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[dt.datetime]
    removed_at: Mapped[Optional[dt.datetime]]


class TurnCapability(Base):
    """What a running turn may do through the Moods' tool server (``mood-poller mcp``).

    One per turn, minted when it starts: the secret goes to the agent
    (``MOOD_TURN_TOKEN``) and only its SHA-256 is kept.  It acts as the wake's agent
    in the wake's Mood with the wake's tools tier, until ``expires_at`` or until it
    is revoked (the turn's end revokes it).  ``blocks`` holds the reply blocks its
    acting tools accepted, appended to the reply when the turn settles.
    """

    __tablename__ = "turn_capabilities"

    wake_id: Mapped[int] = mapped_column(BigId, ForeignKey("wakes.id"), primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    tools: Mapped[str] = mapped_column(String(8))  # full | look
    created_at: Mapped[dt.datetime]
    expires_at: Mapped[dt.datetime]
    revoked_at: Mapped[Optional[dt.datetime]]
    blocks: Mapped[dict[str, Any]] = mapped_column(default=dict)  # {"kinds": [...], "texts": [...]}


class Approval(Base):
    """A turn's request to use a tool its tier does not pre-allow, and who decided it.

    ``pending`` until a person with trust ``full`` in the Mood (or an operator)
    approves or denies it, the wait runs out (``timed_out``) or the turn ends
    (``ended``).  ``notice_post_id`` is the notice posted in the Mood.
    """

    __tablename__ = "approvals"
    __table_args__ = (Index("ix_approvals_wake_id", "wake_id"),
                      Index("ix_approvals_mood_status", "mood_id", "status"))

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    wake_id: Mapped[int] = mapped_column(BigId, ForeignKey("wakes.id"))
    agent_id: Mapped[int] = mapped_column(ForeignKey("participants.id"))
    mood_id: Mapped[int] = mapped_column(ForeignKey("moods.id"))
    tool: Mapped[str] = mapped_column(String(200))
    shown: Mapped[str] = mapped_column(Text, default="")  # a short, safe rendering of its input
    status: Mapped[str] = mapped_column(String(12), default="pending")
    asked_at: Mapped[dt.datetime]
    decided_at: Mapped[Optional[dt.datetime]]
    decided_by: Mapped[Optional[int]] = mapped_column(ForeignKey("participants.id"))
    via: Mapped[str] = mapped_column(String(12), default="")  # post | page | cli | matrix | ...
    reason: Mapped[str] = mapped_column(Text, default="")
    notice_post_id: Mapped[Optional[int]] = mapped_column(BigId, ForeignKey("posts.id"))


# -- Full-text search over posts (migration 0016) -------------------------------------------------
#
# Not a model: on SQLite an FTS5 table over ``posts.text`` (external content: it keeps only
# the index, the text stays in ``posts``), with the shadow tables FTS5 makes for it
# (``posts_fts_data``, ``_idx``, ``_docsize``, ``_config``), to which
# poller.store.core.ingest adds each new post, and two triggers on ``posts`` that keep it
# in step with every edit and delete; on PostgreSQL a generated column of ``posts``,
# ``search_words``, ``to_tsvector('simple', text)``, with a GIN index.  poller.store.search
# reads them.  A migration that
# rebuilds ``posts`` (a batch ALTER on SQLite copies it to a new table) must make the
# triggers again.

SEARCH_TABLE = "posts_fts"  # SQLite
SEARCH_COLUMN = "search_words"  # PostgreSQL: a column of posts ...
SEARCH_INDEX = "ix_posts_fts"  # ... and its index


def modelled(name: Optional[str], type_: str, parent_names: dict) -> bool:
    """Whether the schema object *name* is one the models describe: Alembic's
    ``include_name`` hook, so that comparing a migrated database with the models (and
    autogenerate) leaves the search index alone."""
    if type_ == "table":
        return not (name == SEARCH_TABLE or (name or "").startswith(SEARCH_TABLE + "_"))
    if type_ == "index":
        return name != SEARCH_INDEX
    if type_ == "column":
        return not (name == SEARCH_COLUMN and parent_names.get("table_name") == "posts")
    return True
