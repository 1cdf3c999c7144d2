"""What bridges read and write: links to the chat's names, and its events taken in.

A bridge (:mod:`poller.bridges`) turns its chat's events into the neutral
values here (:class:`Incoming`, a join, an edit, a redaction) and the store
takes each in once: its external id is recorded in ``bridge_events``, unique
per bridge, in the same transaction as the post or sign-in it made, so the
same event delivered twice changes nothing.  Posts go in through the one
door for posts (:func:`poller.store.core.ingest`, which judges their text),
with the mentions the chat says it has.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Optional

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import Session

from poller import errors, text
from poller.kinds import ParticipantKind, PostKind, Trust, WakeStatus
from poller.models import (Agent, Approval, BridgeEvent, BridgeLink, Mood, OutboxItem, Owed,
                           Participant, Post, SignIn, Wake, WakeAnswer, Webhook)
from poller.store import core
from poller.store.core import Store, check_new_mood, new_mood

REMOVED = "[this post was removed]"


@dataclass(frozen=True)
class Incoming:
    """A message from a chat, as the store takes it in.

    *mentions* are the agents' handles the chat says it mentions; ``None`` when
    the message said nothing about mentions (then only a legacy room reads the
    body for bare names).  *reply_to* is the external id of the message it
    answers, *thread* the external id of its thread's root.
    """

    external_id: str
    room: str
    sender: str
    sender_hint: str  # a handle to try for a sender seen for the first time
    body: str
    mentions: Optional[tuple[str, ...]] = None
    reply_to: Optional[str] = None
    thread: Optional[str] = None
    at: Optional[dt.datetime] = None  # when the chat says it was sent


@dataclass(frozen=True)
class Room:
    slug: str
    mood_id: int
    external: str
    legacy: bool


@dataclass(frozen=True)
class ReplyTarget:
    """What a reply answers in the chat: the message, its thread, its sender."""

    external_id: str
    thread: Optional[str]
    askers: tuple[str, ...] = ()  # the chat users whose posts the wake answered, to ping


@dataclass(frozen=True)
class Running:
    wake_id: int
    room: str
    agent: str


# -- Links ------------------------------------------------------------------------------


def link_mood(s: Session, bridge: str, mood_id: int, external: str, now: dt.datetime,
              legacy: bool = False) -> None:
    """Link a Mood to a chat room (inside the caller's transaction)."""
    taken = s.scalar(sa.select(BridgeLink.local_id).where(
        BridgeLink.bridge == bridge, BridgeLink.kind == "mood", BridgeLink.external == external))
    if taken is not None and taken != mood_id:
        raise errors.AlreadyExists(f"the {bridge} room {external!r} is linked to another Mood")
    link = s.scalar(sa.select(BridgeLink).where(
        BridgeLink.bridge == bridge, BridgeLink.kind == "mood", BridgeLink.local_id == mood_id))
    if link is None:
        link = BridgeLink(bridge=bridge, kind="mood", local_id=mood_id, created_at=now)
        s.add(link)
    link.external, link.options = external, {"legacy": bool(legacy)}
    s.flush()


def link_person(s: Session, bridge: str, participant_id: int, external: str,
                now: dt.datetime) -> None:
    taken = s.scalar(sa.select(BridgeLink.local_id).where(
        BridgeLink.bridge == bridge, BridgeLink.kind == "person", BridgeLink.external == external))
    if taken is not None:
        raise errors.AlreadyExists(f"the {bridge} user {external!r} is already someone's")
    s.add(BridgeLink(bridge=bridge, kind="person", local_id=participant_id, external=external,
                     options={}, created_at=now))
    s.flush()


def rooms(store: Store, bridge: str) -> list[Room]:
    with store.reading() as s:
        q = (sa.select(BridgeLink, Mood.slug).join(Mood, Mood.id == BridgeLink.local_id)
             .where(BridgeLink.bridge == bridge, BridgeLink.kind == "mood").order_by(Mood.slug))
        return [Room(slug, link.local_id, link.external, bool((link.options or {}).get("legacy")))
                for link, slug in s.execute(q)]


def set_room(store: Store, bridge: str, mood_id: int, external: str) -> None:
    """A room named by an alias turned out to have this id: keep the id."""
    with store.writing() as s:
        s.execute(sa.update(BridgeLink).where(
            BridgeLink.bridge == bridge, BridgeLink.kind == "mood",
            BridgeLink.local_id == mood_id).values(external=external))


# -- Taking events in --------------------------------------------------------------------


def seen(s: Session, bridge: str, external_id: str) -> bool:
    return s.scalar(sa.select(BridgeEvent.id).where(
        BridgeEvent.bridge == bridge, BridgeEvent.external_id == external_id)) is not None


def _room(s: Session, bridge: str, external: str) -> Optional[BridgeLink]:
    return s.scalar(sa.select(BridgeLink).where(
        BridgeLink.bridge == bridge, BridgeLink.kind == "mood", BridgeLink.external == external))


def once(store: Store, bridge: str, external_id: str, take) -> Optional[int]:
    """Run ``take(session)`` in one transaction unless *external_id* was taken in before;
    record it with what *take* made.  None for an event seen before (or not for us)."""
    try:
        with store.writing() as s:
            if seen(s, bridge, external_id):
                return None
            made = take(s)
            if made is None:
                return None
            post_id, signin_id, thread = made
            s.add(BridgeEvent(bridge=bridge, external_id=external_id, post_id=post_id,
                              signin_id=signin_id, thread=thread, at=_now(s, post_id, signin_id)))
            return post_id or signin_id
    except sa_exc.IntegrityError:
        return None  # the same event, taken in by a concurrent delivery


def _now(s: Session, post_id, signin_id) -> dt.datetime:
    if post_id:
        return s.get(Post, post_id).created_at
    return s.get(SignIn, signin_id).at


def ingest(store: Store, bridge: str, msg: Incoming, now: dt.datetime,
           default_trust: str = Trust.NONE) -> Optional[int]:
    """Take a chat message in as a post, once; its id, or None (seen, or no linked room).
    Its text is judged by the store's door for posts (:func:`poller.store.core.admit`);
    its tokens are counted before the transaction opens."""
    n_tokens = store.counter.count(msg.body)

    def take(s: Session):
        room = _room(s, bridge, msg.room)
        if room is None or (msg.at is not None and msg.at < room.created_at):
            return None  # not a linked room, or said before it was linked: history
        who = sender(s, bridge, msg.sender, msg.sender_hint, default_trust, now)
        reply_to = _post_of(s, bridge, msg.reply_to, room.local_id)
        given = mentions(s, msg, bool((room.options or {}).get("legacy")))
        post = core.insert_post(s, None, room.local_id, who, msg.body, now, reply_to=reply_to,
                                origin=bridge, mentions=given, tokens=n_tokens)
        if given:
            tell_stranger(s, store.counter, room.local_id, who, given, now)
        return post.id, None, msg.thread

    return once(store, bridge, msg.external_id, take)


STRANGER_NOTICE_EVERY = dt.timedelta(days=1)


def tell_stranger(s: Session, counter, mood_id: int, who: int, mentioned: dict[int, str],
                  now: dt.datetime) -> None:
    """A person with trust ``none`` who names an agent wakes nobody: say so in the room,
    once a day per person, so that they are not left waiting for an answer."""
    person = s.get(Participant, who)
    if person is None or person.trust != Trust.NONE:
        return
    agents = sorted(s.execute(sa.select(Participant.handle, Participant.id).where(
        Participant.id.in_(list(mentioned)))).all())
    names = " and ".join(f"@{h}" for h, _ in agents)
    body = (f"{person.handle}: {names} answer{'s' if len(agents) == 1 else ''} only people "
            "the operators of this room have added; ask one of them to add you.")
    said = s.scalar(sa.select(sa.func.count()).select_from(Post).where(
        Post.mood_id == mood_id, Post.kind == PostKind.SYSTEM,
        Post.text.startswith(f"{person.handle}: "), Post.text.contains(" answer"),
        Post.created_at > now - STRANGER_NOTICE_EVERY))
    if not said:
        from poller.store import cycle

        cycle.add_system_post(s, mood_id, agents[0][1], body, now, counter.count(body))


def mentions(s: Session, msg: Incoming, legacy: bool) -> dict[int, str]:
    """Agents the message mentions: those the chat names; in a legacy room with no such
    list, agents whose handle stands as a word in the body."""
    handles = set(h.lower() for h in msg.mentions or ())
    if msg.mentions is None and legacy:
        words = set(w.lower() for w in re.findall(r"[A-Za-z0-9][A-Za-z0-9_-]*", msg.body))
        handles = {w.rstrip("-_") for w in words}
    if not handles:
        return {}
    q = (sa.select(Participant.id).join(Agent, Agent.participant_id == Participant.id)
         .where(Participant.handle_key.in_(handles), Agent.retired_at.is_(None)))
    return {pid: "at" for pid in s.scalars(q)}


def _post_of(s: Session, bridge: str, external_id: Optional[str], mood_id: int) -> Optional[int]:
    if not external_id:
        return None
    post_id = s.scalar(sa.select(BridgeEvent.post_id).where(
        BridgeEvent.bridge == bridge, BridgeEvent.external_id == external_id))
    if post_id is None or s.get(Post, post_id).mood_id != mood_id:
        return None  # a message from before the link, or from another room
    return post_id


def sender(s: Session, bridge: str, external: str, hint: str, trust: str,
           now: dt.datetime) -> int:
    """The participant a chat user is: linked before, or a new person with *trust*."""
    pid = s.scalar(sa.select(BridgeLink.local_id).where(
        BridgeLink.bridge == bridge, BridgeLink.kind == "person", BridgeLink.external == external))
    if pid is not None:
        return pid
    handle = free_handle(s, hint)
    p = Participant(handle=handle, handle_key=handle.lower(), kind=ParticipantKind.PERSON,
                    trust=trust, created_at=now)
    s.add(p)
    s.flush()
    link_person(s, bridge, p.id, external, now)
    return p.id


def free_handle(s: Session, hint: str) -> str:
    """A valid handle nobody has, made from *hint* (``ada``, ``ada-2``, ...)."""
    base = re.sub(r"[^A-Za-z0-9_-]", "", hint)[:28].strip("-_") or "someone"
    for n in range(1, 10_000):
        handle = base if n == 1 else f"{base}-{n}"
        if s.scalar(sa.select(Participant.id).where(
                Participant.handle_key == handle.lower())) is None:
            return text.check_handle(handle)
    raise errors.UserError(f"no free handle like {hint!r}")


def join(store: Store, bridge: str, external_id: str, room: str, user: str, hint: str,
         now: dt.datetime, default_trust: str = Trust.NONE) -> Optional[int]:
    """A user joined a linked room: a sign-in (an arrival), once."""

    def take(s: Session):
        link = _room(s, bridge, room)
        if link is None:
            return None
        who = sender(s, bridge, user, hint, default_trust, now)
        row = SignIn(participant_id=who, mood_id=link.local_id, tier="key", label=bridge, at=now)
        s.add(row)
        s.flush()
        return None, row.id, None

    return once(store, bridge, external_id, take)


def refuse(store: Store, bridge: str, ref: str, room: str, reason: str,
           now: dt.datetime) -> bool:
    """An event that cannot be taken in is set aside with why (``status`` shows it, and
    ``why`` in its Mood), so its delivery can be acknowledged; the same event again only
    counts.  True the first time."""
    from poller.store import cycle

    with store.writing() as s:
        link = _room(s, bridge, room) if room else None
        return cycle.quarantine(s, f"{bridge}-event", ref, reason, now,
                                mood_id=link.local_id if link else None)


def typing(store: Store, bridge: str, room: str, now: dt.datetime) -> bool:
    """Someone is typing in a linked room: the Mood's considers wait (as for
    ``mood-poller typing``).  False if the room is not linked."""
    with store.writing() as s:
        link = _room(s, bridge, room)
        if link is None:
            return False
        mood = s.get(Mood, link.local_id)
        if mood.typing_at is None or mood.typing_at < now:
            mood.typing_at = now
        return True


def edit(store: Store, bridge: str, external_id: str, target: str, editor: str, body: str,
         now: dt.datetime) -> Optional[int]:
    """An edit replaces the stored post's text (its sender's edits only); it never wakes."""
    text.check_post_text(body)
    n_tokens = store.counter.count(body)
    return _change(store, bridge, external_id, target, editor, body, n_tokens)


def redact(store: Store, bridge: str, external_id: str, target: str, now: dt.datetime
           ) -> Optional[int]:
    """A redaction hides the post from later wakes: its text goes, and an answer it was
    still owed is owed no more."""
    return _change(store, bridge, external_id, target, None, REMOVED,
                   store.counter.count(REMOVED))


APPROVE_KEYS = frozenset({"✅", "✔", "👍"})
DENY_KEYS = frozenset({"❌", "✖", "👎"})


def react(store: Store, bridge: str, external_id: str, target: str, reactor: str, key: str,
          now: dt.datetime) -> Optional[int]:
    """A reaction on a message the bridge sent: ✅ or ❌ on an approval notice answers the
    request, as its reactor (a person with trust full; anyone else's is ignored).  The
    approval's id, when one was decided."""
    from poller.store import capabilities

    key = key.replace("\ufe0f", "").strip()
    approve = key in APPROVE_KEYS
    if not approve and key not in DENY_KEYS:
        return None
    with store.writing() as s:
        if seen(s, bridge, external_id):
            return None
        s.add(BridgeEvent(bridge=bridge, external_id=external_id, at=now))
        post_id = s.scalar(sa.select(OutboxItem.post_id).where(
            OutboxItem.bridge == bridge, OutboxItem.external_id == target))
        person = s.scalar(sa.select(BridgeLink.local_id).where(
            BridgeLink.bridge == bridge, BridgeLink.kind == "person",
            BridgeLink.external == reactor))
        approval = s.scalar(sa.select(Approval.id).where(Approval.notice_post_id == post_id,
                                                         Approval.status == "pending")
                            ) if post_id else None
        if approval is None or person is None or capabilities.may_decide(s, person):
            return None  # not a notice, not a person of ours, or not theirs to answer
        capabilities.decide_in(s, store.counter, approval, approve, now, person_id=person,
                               via=bridge)
        return approval


def _change(store, bridge, external_id, target, editor, body, n_tokens) -> Optional[int]:
    try:
        with store.writing() as s:
            if seen(s, bridge, external_id):
                return None
            post_id = s.scalar(sa.select(BridgeEvent.post_id).where(
                BridgeEvent.bridge == bridge, BridgeEvent.external_id == target))
            post = s.get(Post, post_id) if post_id else None
            if post is None or (editor is not None and _external_of(
                    s, bridge, post.sender_id) != editor):
                return None
            post.text, post.tokens = body, n_tokens
            if editor is None:
                s.execute(sa.delete(Owed).where(Owed.post_id == post.id))
            s.add(BridgeEvent(bridge=bridge, external_id=external_id, at=post.created_at))
            return post.id
    except sa_exc.IntegrityError:
        return None


def _external_of(s: Session, bridge: str, participant_id: int) -> Optional[str]:
    return s.scalar(sa.select(BridgeLink.external).where(
        BridgeLink.bridge == bridge, BridgeLink.kind == "person",
        BridgeLink.local_id == participant_id))


# -- Sending out ---------------------------------------------------------------------------


def record_sent(store: Store, bridge: str, item_id: int, external_id: str,
                now: dt.datetime) -> None:
    """The item went out as *external_id*: mark it sent and remember which post that is
    (a reply to it in the chat is a reply to the agent)."""
    with store.writing() as s:
        row = s.get(OutboxItem, item_id)
        row.status, row.external_id, row.sent_at, row.last_error = "sent", external_id, now, ""
        if row.post_id is not None and external_id and not seen(s, bridge, external_id):
            s.add(BridgeEvent(bridge=bridge, external_id=external_id, post_id=row.post_id,
                              at=now))


def reply_target(store: Store, bridge: str, wake_id: Optional[int]) -> Optional[ReplyTarget]:
    """The chat message an agent's reply answers: the newest post its wake answered that
    came from the chat."""
    if wake_id is None:
        return None
    with store.reading() as s:
        q = (sa.select(BridgeEvent.external_id, BridgeEvent.thread)
             .join(WakeAnswer, WakeAnswer.post_id == BridgeEvent.post_id)
             .where(WakeAnswer.wake_id == wake_id, BridgeEvent.bridge == bridge)
             .order_by(BridgeEvent.post_id.desc(), BridgeEvent.id).limit(1))
        row = s.execute(q).first()
        if row is None:
            return None
        asked = (sa.select(BridgeLink.external).distinct()
                 .join(Post, Post.sender_id == BridgeLink.local_id)
                 .join(WakeAnswer, WakeAnswer.post_id == Post.id)
                 .where(WakeAnswer.wake_id == wake_id, BridgeLink.bridge == bridge,
                        BridgeLink.kind == "person")
                 .order_by(BridgeLink.external))
        return ReplyTarget(row.external_id, row.thread, tuple(s.scalars(asked)))


def running(store: Store, bridge: str) -> list[Running]:
    """Turns running now in Moods linked on *bridge* (typing notifications)."""
    with store.reading() as s:
        q = (sa.select(Wake.id, BridgeLink.external, Participant.handle)
             .join(BridgeLink, sa.and_(BridgeLink.local_id == Wake.mood_id,
                                       BridgeLink.kind == "mood", BridgeLink.bridge == bridge))
             .join(Participant, Participant.id == Wake.agent_id)
             .where(Wake.status == WakeStatus.RUNNING))
        return [Running(w, room, handle) for w, room, handle in s.execute(q)]


def agent_handles(store: Store) -> list[str]:
    """Every agent that is not removed: each gets a chat user of its own."""
    with store.reading() as s:
        q = (sa.select(Participant.handle).join(Agent, Agent.participant_id == Participant.id)
             .where(Agent.retired_at.is_(None)).order_by(Participant.handle_key))
        return list(s.scalars(q))


# -- The operator's verbs (each one transaction) ------------------------------------------


def add_linked_mood(store: Store, bridge: str, slug: str, external: str, now: dt.datetime,
                    legacy: bool = False) -> None:
    with store.writing() as s:
        link_mood(s, bridge, Store._mood(s, slug).id, external, now, legacy)


def add_mood_with_room(store: Store, bridge: str, slug: str, title: str, external: str,
                       now: dt.datetime, legacy: bool = False):
    """A new Mood that is a chat room: both, in one transaction, or neither."""
    from poller import values

    check_new_mood(slug, title)
    with store.writing() as s:
        mood = new_mood(s, slug, title, now)
        link_mood(s, bridge, mood.id, external, now, legacy)
        return values.MoodInfo.from_row(mood)


def add_linked_person(store: Store, bridge: str, handle: Optional[str], external: str,
                      hint: str, trust: str, now: dt.datetime):
    """A person known by their chat user id (``person add [HANDLE] --matrix @ada:server``)."""
    from poller import values

    if trust not in Trust.__members__.values():
        raise errors.UserError(f"trust must be one of full, look, none, got {trust!r}")
    with store.writing() as s:
        p = store._new_participant(s, handle or free_handle(s, hint), ParticipantKind.PERSON,
                                   trust, now)
        link_person(s, bridge, p.id, external, now)
        return values.ParticipantInfo.from_row(p)


@dataclass(frozen=True)
class Hook:
    """A Mood's webhook subscriber; the secret is never shown after it is made."""

    id: int
    mood: str
    url: str
    created_at: dt.datetime
    removed_at: Optional[dt.datetime]

    def to_json(self) -> dict:
        from poller.values import iso

        from poller.secure import shown_url

        return {"id": self.id, "mood": self.mood, "url": shown_url(self.url),
                "created_at": iso(self.created_at),
                "removed_at": iso(self.removed_at) if self.removed_at else None}


def add_webhook(store: Store, slug: str, url: str, secret: str, now: dt.datetime) -> Hook:
    with store.writing() as s:
        mood = Store._mood(s, slug)
        row = Webhook(mood_id=mood.id, url=url, secret=secret, created_at=now)
        s.add(row)
        s.flush()
        return Hook(row.id, slug, url, now, None)


def webhooks(store: Store, slug: Optional[str] = None, all_: bool = False) -> list[Hook]:
    with store.reading() as s:
        q = sa.select(Webhook, Mood.slug).join(Mood, Mood.id == Webhook.mood_id).order_by(Webhook.id)
        if slug:
            q = q.where(Mood.slug == slug)
        if not all_:
            q = q.where(Webhook.removed_at.is_(None))
        return [Hook(w.id, m, w.url, w.created_at, w.removed_at) for w, m in s.execute(q)]


def remove_webhook(store: Store, hook_id: int, now: dt.datetime) -> None:
    """The subscriber gets nothing more; items not yet sent to it are failed."""
    with store.writing() as s:
        row = s.get(Webhook, hook_id)
        if row is None or row.removed_at is not None:
            raise errors.NotFound(f"no webhook {hook_id} (see `mood-poller mood webhook list`)")
        row.removed_at = now
        s.execute(sa.update(OutboxItem).where(
            OutboxItem.bridge == "webhook", OutboxItem.target == str(hook_id),
            OutboxItem.status == "pending").values(status="failed",
                                                   last_error="the webhook was removed"))


def webhook_of(store: Store, hook_id: int) -> tuple[str, str]:
    """(url, secret) of a webhook, for the sender only."""
    with store.reading() as s:
        row = s.get(Webhook, hook_id)
        return row.url, row.secret
