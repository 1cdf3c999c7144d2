"""The outbox: what bridges deliver, written in the transaction that produced it.

Every post that enters a Mood goes through :func:`poller.store.core.ingest`, which
calls :func:`enqueue_posts` in the same transaction: a reply and the
item carrying it to Matrix or to a webhook commit together or not at all.  A
bridge then takes the items due (:func:`due`), sends each with the remote's
idempotency key where it has one (the item's id), and marks it sent or tried
(:func:`mark_sent`, :func:`mark_tried`).  Nothing is dropped: an item whose
attempts ran out is ``failed``, shown by ``mood-poller outbox --failed`` and
sent again after ``outbox retry ID``.  Items for one target go out in id order.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional, Sequence

import sqlalchemy as sa
from sqlalchemy.orm import Session

from poller import errors
from poller.kinds import Bridge, OutboxEvent, OutboxStatus, ParticipantKind, PostKind
from poller.models import BridgeLink, Mood, OutboxItem, Participant, Post, Wake, Webhook

MAX_ATTEMPTS = 60  # about half an hour of failing; then it is failed and waits for `outbox retry`
BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 30.0


def backoff(attempts: int) -> dt.timedelta:
    """The wait after the *attempts*-th failed attempt: doubling, capped."""
    return dt.timedelta(seconds=min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** max(0, attempts - 1)))


@dataclass(frozen=True)
class Item:
    """An outbox item as the CLI and the bridges see it."""

    id: int
    bridge: str
    target: str
    mood: str
    event: str
    post_id: Optional[int]
    wake_id: Optional[int]
    payload: dict
    status: str
    attempts: int
    next_at: dt.datetime
    last_error: str
    external_id: Optional[str]
    created_at: dt.datetime
    sent_at: Optional[dt.datetime]

    @classmethod
    def from_row(cls, row: OutboxItem, slug: str) -> "Item":
        return cls(row.id, row.bridge, row.target, slug, row.event, row.post_id, row.wake_id,
                   dict(row.payload or {}), row.status, row.attempts, row.next_at,
                   row.last_error, row.external_id, row.created_at, row.sent_at)

    def to_json(self) -> dict:
        from poller.values import iso

        return {"id": self.id, "bridge": self.bridge, "target": self.target, "mood": self.mood,
                "event": self.event, "post_id": self.post_id, "wake_id": self.wake_id,
                "status": self.status, "attempts": self.attempts, "next_at": iso(self.next_at),
                "last_error": self.last_error, "external_id": self.external_id,
                "created_at": iso(self.created_at),
                "sent_at": iso(self.sent_at) if self.sent_at else None}


# -- Writing items (inside the caller's transaction) -------------------------------------


_LINKS, _HOOKS = BridgeLink.__table__, Webhook.__table__  # (no ORM state: see core._POSTS)


def _targets(link_in, hook_in) -> sa.CompoundSelect:
    return sa.union_all(
        sa.select(_LINKS.c.local_id, _LINKS.c.bridge, _LINKS.c.external).where(
            _LINKS.c.kind == "mood", link_in),
        sa.select(_HOOKS.c.mood_id, sa.literal(Bridge.WEBHOOK.value), sa.cast(_HOOKS.c.id, sa.String))
        .where(hook_in, _HOOKS.c.removed_at.is_(None)))


# Every linked room and live webhook of some Moods (of one: `=`, which SQLAlchemy need not
# render again at each execution as it does IN): built once, as every post asks it.
_TARGETS = _targets(_LINKS.c.local_id.in_(sa.bindparam("moods", expanding=True)),
                    _HOOKS.c.mood_id.in_(sa.bindparam("moods", expanding=True)))
_ADD_ITEMS = sa.insert(OutboxItem.__table__)
_TARGETS_ONE = _targets(_LINKS.c.local_id == sa.bindparam("mood"),
                        _HOOKS.c.mood_id == sa.bindparam("mood"))


def targets(s: Session, mood_id: int) -> list[tuple[str, str]]:
    """Where a Mood's items go: ``(bridge, target)`` for its linked room and its webhooks."""
    return targets_of(s, [mood_id])[mood_id]


def targets_of(s: Session, mood_ids: Sequence[int]) -> dict[int, list[tuple[str, str]]]:
    """:func:`targets` of each of *mood_ids*, in one statement."""
    out: dict[int, list[tuple[str, str]]] = {m: [] for m in mood_ids}
    found = (s.connection().execute(_TARGETS, {"moods": list(out)}) if len(out) > 1
             else s.connection().execute(_TARGETS_ONE, {"mood": next(iter(out))}) if out else ())
    for mood_id, bridge, target in found:
        out[mood_id].append((bridge, target))
    return out


def post_event(kind: str, sender_kind: str) -> Optional[str]:
    """What a post of *kind* by a *sender_kind* is, as an outbox event."""
    if kind == PostKind.SILENT:
        return OutboxEvent.SILENT
    if kind in (PostKind.SYSTEM, PostKind.HANDOFF):
        return OutboxEvent.NOTICE
    return OutboxEvent.REPLY if sender_kind == ParticipantKind.AGENT else OutboxEvent.POST


# A chat bridge shows agents' replies and the service's notes, and marks what a
# silent turn read; people's posts are the chat's own (webhooks get everything).
CHAT_EVENTS = (OutboxEvent.REPLY, OutboxEvent.NOTICE, OutboxEvent.SILENT)


class Posted(NamedTuple):
    """A post just inserted, as its outbox items need it."""

    id: int
    mood_id: int
    kind: str
    sender_kind: str
    at: dt.datetime
    origin: Optional[str]  # the bridge it came from: nothing is sent back there


def enqueue_posts(s: Session, posts: Sequence[Posted]) -> None:
    """The outbox items of posts just inserted, post by post in their order, in one insert
    (the targets of all their Moods read in one statement)."""
    where = targets_of(s, list(dict.fromkeys(p.mood_id for p in posts)))
    rows = [dict(bridge=bridge, target=target, mood_id=p.mood_id, post_id=p.id, event=event,
                 payload={}, status=OutboxStatus.PENDING, attempts=0, next_at=p.at,
                 last_error="", created_at=p.at)
            for p in posts for event in [post_event(p.kind, p.sender_kind)]
            for bridge, target in where[p.mood_id]
            if bridge != p.origin and (bridge == Bridge.WEBHOOK or event in CHAT_EVENTS)]
    if rows:
        s.connection().execute(_ADD_ITEMS, rows)


def attach_wake(s: Session, post_id: int, wake_id: int) -> None:
    """The reply's items name the turn it came from (what it answers, for a chat)."""
    s.execute(sa.update(OutboxItem).where(OutboxItem.post_id == post_id).values(wake_id=wake_id))


def enqueue_turn(s: Session, w: Wake, event: str, now: dt.datetime) -> None:
    """A turn started or ended: an item for each of its Mood's webhooks."""
    hooks = [t for b, t in targets(s, w.mood_id) if b == Bridge.WEBHOOK]
    s.add_all(OutboxItem(bridge=Bridge.WEBHOOK, target=t, mood_id=w.mood_id, wake_id=w.id,
                         event=event, payload={"status": str(w.status), "kind": str(w.kind)},
                         status=OutboxStatus.PENDING, attempts=0, next_at=now, last_error="",
                         created_at=now) for t in hooks)


# -- Delivering (each verb one short transaction) ----------------------------------------


def due(store, bridge: str, now: dt.datetime, limit: int = 200) -> list[Item]:
    """The items of *bridge* to send now, oldest first, at most one run per target in order:
    a target whose oldest pending item is not due yet sends nothing newer either."""
    with store.reading() as s:
        q = (sa.select(OutboxItem, Mood.slug).join(Mood, Mood.id == OutboxItem.mood_id)
             .where(OutboxItem.bridge == bridge, OutboxItem.status == OutboxStatus.PENDING)
             .order_by(OutboxItem.id).limit(limit))
        out, blocked = [], set()
        for row, slug in s.execute(q):
            if row.target in blocked:
                continue
            if row.next_at > now:
                blocked.add(row.target)
                continue
            out.append(Item.from_row(row, slug))
        return out


def mark_sent(store, item_id: int, external_id: Optional[str], now: dt.datetime) -> None:
    with store.writing() as s:
        s.execute(sa.update(OutboxItem).where(OutboxItem.id == item_id).values(
            status=OutboxStatus.SENT, external_id=external_id, sent_at=now, last_error=""))


def mark_tried(store, item_id: int, error: str, now: dt.datetime,
               max_attempts: int = MAX_ATTEMPTS) -> str:
    """An attempt failed: back off, or fail the item once its attempts ran out.  Returns
    the item's status."""
    with store.writing() as s:
        row = s.get(OutboxItem, item_id)
        row.attempts += 1
        row.last_error = error[:2000]
        row.next_at = now + backoff(row.attempts)
        if row.attempts >= max_attempts:
            row.status = OutboxStatus.FAILED
        return row.status


def items(store, failed: bool = False, limit: int = 100) -> list[Item]:
    """The newest *limit* items (only the failed ones with *failed*), oldest first."""
    with store.reading() as s:
        return listed(s, failed, limit)


def listed(s: Session, failed: bool = False, limit: int = 100) -> list[Item]:
    """:func:`items`, in the caller's session."""
    q = sa.select(OutboxItem, Mood.slug).join(Mood, Mood.id == OutboxItem.mood_id)
    if failed:
        q = q.where(OutboxItem.status == OutboxStatus.FAILED)
    rows = s.execute(q.order_by(OutboxItem.id.desc()).limit(limit)).all()
    return [Item.from_row(r, slug) for r, slug in reversed(rows)]


def retry(store, item_id: int, now: dt.datetime) -> Item:
    """A failed item is pending again, due now, with its attempts reset."""
    with store.writing() as s:
        row = s.get(OutboxItem, item_id)
        if row is None:
            raise errors.NotFound(f"no outbox item {item_id} (see `mood-poller outbox`)")
        if row.status == OutboxStatus.SENT:
            raise errors.UserError(f"outbox item {item_id} was sent already; it is never sent twice")
        row.status, row.attempts, row.next_at = OutboxStatus.PENDING, 0, now
        s.flush()
        return Item.from_row(row, s.scalar(sa.select(Mood.slug).where(Mood.id == row.mood_id)))


def counts(store) -> dict[str, int]:
    """Items by status, for the CLI's summary line."""
    with store.reading() as s:
        q = sa.select(OutboxItem.status, sa.func.count()).group_by(OutboxItem.status)
        return {status: n for status, n in s.execute(q)}


def payload_of(store, item: Item) -> dict[str, Any]:
    """What an item carries, read at send time: the post (text, sender, kind, what it
    answers) or the turn."""
    with store.reading() as s:
        out: dict[str, Any] = {"event": item.event, "mood": item.mood, "id": item.id}
        if item.post_id is not None:
            post = s.get(Post, item.post_id)
            sender = s.get(Participant, post.sender_id)
            out.update(post_id=post.id, text=post.text, sender=sender.handle,
                       sender_kind=sender.kind, kind=post.kind, at=post.created_at.isoformat(),
                       wake_id=item.wake_id)
        if item.wake_id is not None and item.post_id is None:
            w = s.get(Wake, item.wake_id)
            out.update(wake_id=w.id, agent=s.get(Participant, w.agent_id).handle,
                       kind=w.kind, status=w.status)
        out.update(item.payload)  # as it was when the item was written
        return out
