"""Frozen values the store hands out: the logic never touches live ORM rows."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Optional, Protocol

from poller.text import iso


@dataclass(frozen=True)
class MoodInfo:
    id: int
    slug: str
    title: str
    archived: bool
    created_at: dt.datetime
    typing_at: Optional[dt.datetime] = None  # the last "someone is typing" signal

    @classmethod
    def from_row(cls, row) -> "MoodInfo":
        return cls(row.id, row.slug, row.title, row.archived, row.created_at,
                   getattr(row, "typing_at", None))

    def to_json(self) -> dict:
        return {"id": self.id, "slug": self.slug, "title": self.title,
                "archived": self.archived, "created_at": iso(self.created_at)}


@dataclass(frozen=True)
class ParticipantInfo:
    id: int
    handle: str
    kind: str
    trust: str
    created_at: dt.datetime
    retired_at: Optional[dt.datetime] = None  # removed: history keeps it, it may not post

    @classmethod
    def from_row(cls, row) -> "ParticipantInfo":
        return cls(row.id, row.handle, row.kind, row.trust, row.created_at, row.retired_at)

    def to_json(self) -> dict:
        return {"id": self.id, "handle": self.handle, "kind": self.kind, "trust": self.trust,
                "created_at": iso(self.created_at),
                "retired_at": iso(self.retired_at) if self.retired_at else None}


@dataclass(frozen=True)
class AgentInfo:
    id: int
    handle: str
    waker: str
    command: Optional[str] = None
    url: Optional[str] = None
    timeout: Optional[float] = None
    workdir: Optional[str] = None
    options: dict[str, Any] = field(default_factory=dict)
    retired_at: Optional[dt.datetime] = None  # removed: the loop no longer sees it

    @classmethod
    def from_rows(cls, p, a) -> "AgentInfo":
        return cls(p.id, p.handle, a.waker, a.command, a.url, a.timeout, a.workdir,
                   dict(a.options or {}), a.retired_at)

    def to_json(self) -> dict:
        out = {"id": self.id, "handle": self.handle, "waker": self.waker,
               "command": self.command, "url": self.url, "timeout": self.timeout,
               "workdir": self.workdir,
               "retired_at": iso(self.retired_at) if self.retired_at else None}
        # Header values may carry credentials: show only their names.
        opts = dict(self.options)
        if "headers" in opts:
            opts["headers"] = {k: "***" for k in opts["headers"]}
        out["options"] = opts
        return out


class WakerShape(Protocol):
    """What the store must know of an agent's waker to keep its row whole (a
    :class:`poller.turns.wakers.Waker` class is one): its name, the agent field
    that aims it (``command``, ``url`` or ``""``) and the options it takes."""

    name: str
    target: str
    accepts: tuple[str, ...]


@dataclass(frozen=True)
class AgentChange:
    """An agent before and after ``agent set``."""

    before: AgentInfo
    after: AgentInfo

    FIELDS = ("waker", "command", "url", "timeout", "workdir")

    def changed(self) -> list[str]:
        """The names of what changed: fields, option keys, and ``header NAME`` for headers."""
        out = [f for f in self.FIELDS if getattr(self.before, f) != getattr(self.after, f)]
        old, new = dict(self.before.options), dict(self.after.options)
        old_h, new_h = old.pop("headers", {}) or {}, new.pop("headers", {}) or {}
        out += [k for k in sorted(old.keys() | new.keys()) if old.get(k) != new.get(k)]
        out += [f"header {k}" for k in sorted(old_h.keys() | new_h.keys())
                if old_h.get(k) != new_h.get(k)]
        return out


@dataclass(frozen=True)
class Retired:
    """A person or agent removed: who, and the turns ended with it (``--force``)."""

    who: ParticipantInfo
    ended: tuple[int, ...] = ()


@dataclass(frozen=True)
class PostInfo:
    id: int
    mood: str
    sender: str
    sender_kind: str
    created_at: dt.datetime
    text: str
    kind: str
    reply_to: Optional[int]
    tokens: int

    @classmethod
    def from_row(cls, row, slug: str, handle: str, sender_kind: str) -> "PostInfo":
        return cls(row.id, slug, handle, sender_kind, row.created_at, row.text, row.kind,
                   row.reply_to, row.tokens)

    def to_json(self) -> dict:
        return {"id": self.id, "mood": self.mood, "sender": self.sender,
                "sender_kind": self.sender_kind, "created_at": iso(self.created_at),
                "kind": self.kind, "text": self.text, "reply_to": self.reply_to,
                "tokens": self.tokens}


@dataclass(frozen=True)
class SignInInfo:
    id: int
    who: str
    mood: str
    tier: str
    label: str
    at: dt.datetime


@dataclass(frozen=True)
class SettingChange:
    key: str
    old: Any
    new: Any
    by: Optional[str]
    mood: Optional[str]
    agent: Optional[str]
    at: dt.datetime
    note: str = ""


# -- what the store gathers for a wake's letter (poller.wake.compose) ----------------------


@dataclass(frozen=True, kw_only=True)
class WakePost:
    """One post as the composer sees it.  ``tokens`` is the ``encode_ordinary``
    count of ``text`` stored at ingest (-1 if unknown: it is then counted)."""

    id: int
    sender: str
    created_at: dt.datetime  # aware, UTC
    text: str
    tokens: int = -1
    sender_is_agent: bool = False
    kind: str = "post"  # post | silent | system | handoff
    reply_to: int | None = None


class LinkedPost(NamedTuple):
    mood: str  # slug of the Mood the linked post is in
    post: WakePost


class Member(NamedTuple):
    """Someone who has been in the Mood, as the letter names them."""

    handle: str
    is_agent: bool = False
    trust: str = ""  # a person's: full | look | none


class AlsoAsked(NamedTuple):
    handle: str
    at_work: bool  # busy with a turn right now


class DialChange(NamedTuple):
    """A setting changed since the agent's last wake here, as its letter shows it."""

    who: str
    key: str
    old: str
    new: str


class CutOff(NamedTuple):
    at: dt.datetime | None = None
    why: str = ""  # e.g. "timed out after 15 minutes", "the poller restarted"


class Handed(NamedTuple):
    from_mood: str
    from_agent: str
    about: str
    context: str
    look_only: bool = False  # written by a look-only turn (woken by look-trust posts, or unasked)
