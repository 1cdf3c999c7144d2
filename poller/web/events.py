"""Live updates: ``GET /api/v1/moods/{slug}/events``, a Server-Sent Events stream.

One :class:`Feed` per process watches the store's heads (the newest post and
wake, the turns in flight, the holds) a few times a second, and at once when
this process posts something; streams sleep on it and only read their Mood
when something changed, so 200 open streams cost one small query per tick.

Events, each with ``id: POST_ID.WAKE_ID`` (how far the client has been told):

- ``post`` — a post, a reply, a silent dot (``kind: silent``), a notice; its ``html``
  is the post as the web page shows it (the ``<li>`` a reload renders, markdown
  rendered and sanitized), which the page adds as it comes; a notice asking for
  approval comes with its Approve and Deny for a reader who may answer it;
- ``turn_started`` / ``turn_ended`` — an agent at work here, and how it ended;
- ``working`` — the turns in flight here now, each with its ``progress`` (what a
  Claude Code turn is doing: the tool it uses, the file it reads; names only),
  sent on connect and on every change;
- ``holds`` — the agents holding owed mentions here, and why (on connect and
  on change).

A client that reconnects with ``Last-Event-ID`` (or ``?after=``) is sent
everything after it; a comment line opens the stream and keeps it alive.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import AsyncIterator, Callable, Optional

from starlette.concurrency import run_in_threadpool

from poller import errors, text
from poller.kinds import IN_FLIGHT
from poller.store import access, capabilities, visits
from poller.text import iso
from poller.web import view
from poller.web.auth import Refused


BATCH = 200  # posts read per look; a stream behind by more reads again at once


class Feed:
    """Watches the store's heads; wakes the streams of the Moods where something moved."""

    HISTORY = 256  # versions remembered; a stream further behind simply looks again

    def __init__(self, store, every: float = 0.25):
        self.store = store
        self.every = every
        self.version = 0
        self.touched: dict[int, Optional[set[int]]] = {}  # version -> Mood ids; None: all
        self.streams = 0  # open streams; with none, the feed does not look
        self.closing = False  # the server is stopping: every stream ends
        self._heads: Optional[access.Heads] = None
        self._cond: Optional[asyncio.Condition] = None
        self._poked: Optional[asyncio.Event] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._task: Optional[asyncio.Task] = None

    def start(self) -> None:
        """Start watching (from the app's startup, so the first look predates every stream)."""
        if self._task is None:
            self._loop = asyncio.get_running_loop()
            self._cond = asyncio.Condition()
            self._poked = asyncio.Event()
            self._task = self._loop.create_task(self._watch())

    async def _watch(self) -> None:
        while True:
            try:
                await self._look()
            except Exception:  # the database blinked: streams keep what they have
                pass
            try:
                await asyncio.wait_for(self._poked.wait(), self.every)
                await asyncio.sleep(self.GAP)  # a burst of commits is one look
            except asyncio.TimeoutError:
                pass
            self._poked.clear()

    GAP = 0.02  # seconds a poke waits, so the commits of a burst share one look

    async def _look(self) -> None:
        if not self.streams:
            self._heads = None  # nobody listens: no queries
            return
        heads = await run_in_threadpool(access.heads, self.store)
        if heads == self._heads:
            return
        moods = None  # a first look (a stream may have read before it): every stream looks
        if self._heads is not None:
            moods = await run_in_threadpool(access.moods_touched, self.store, self._heads, heads)
        self._heads = heads
        async with self._cond:
            self.version += 1
            self.touched[self.version] = moods
            self.touched.pop(self.version - self.HISTORY, None)
            self._cond.notify_all()

    def poke(self) -> None:
        """Look now (thread-safe): this process just committed something."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._poked.set)

    def moved(self, mood_id: int, since: int) -> bool:
        """Did anything touch *mood_id* after version *since*?"""
        if since + 1 not in self.touched and since < self.version:
            return True  # too far behind to tell: look
        return any(self.touched.get(v) is None or mood_id in self.touched[v]
                   for v in range(since + 1, self.version + 1))

    async def wait(self, mood_id: int, seen: int, timeout: float) -> int:
        """Wait until something touches *mood_id* after version *seen*, or *timeout* seconds;
        the version reached."""
        self.start()
        async with self._cond:
            try:
                await asyncio.wait_for(self._cond.wait_for(
                    lambda: self.closing or self.moved(mood_id, seen)), timeout)
            except asyncio.TimeoutError:
                pass
        return self.version

    async def close(self) -> None:
        """End every stream now (the server is shutting down and waits for them)."""
        self.closing = True
        if self._cond is not None:
            async with self._cond:
                self._cond.notify_all()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()


def parse_cursor(raw: Optional[str]) -> Optional[tuple[int, int]]:
    """``"POST_ID.WAKE_ID"`` (or a bare post id) to a pair; None if absent, 400 if bad."""
    if not raw:
        return None
    post, dot, wake = raw.strip().partition(".")
    try:
        return (text.parse_whole(post, "post id"),
                text.parse_whole(wake, "wake id") if dot or wake else 0)
    except errors.UserError:
        raise Refused(400, "bad_request", f"bad event id {raw[:40]!r}: expected POST_ID.WAKE_ID "
                                          "(two whole numbers)") from None


def frame(event: str, data, cursor: Optional[tuple[int, int]] = None) -> str:
    head = f"id: {cursor[0]}.{cursor[1]}\n" if cursor else ""
    return f"{head}event: {event}\ndata: {json.dumps(data)}\n\n"


def _turn(t: access.TurnRecord) -> dict:
    return {"wake_id": t.id, "agent": t.agent, "kind": t.kind, "status": t.status,
            "since": iso(t.since), "finished_at": iso(t.finished_at), "progress": t.progress}


@dataclass(frozen=True)
class Reader:
    """Who reads a stream, for the posts rendered for them: their identity, their CSRF token."""

    who: Optional[access.Identity] = None
    csrf: str = ""


def _shown(door, post: dict, reader: Reader) -> str:
    """The post's ``<li>``, an approval notice with its request (and buttons, for *reader*)."""
    asked = capabilities.by_notice(door.store, post["id"]) if post["kind"] == "system" else None
    return view.post_item(post, door.clock(), asked, reader.who, reader.csrf)


async def stream(door, slug: str, cursor: Optional[tuple[int, int]],
                 allowed: Callable[[], bool] = lambda: True,
                 reader: Reader = Reader()) -> AsyncIterator[str]:
    """The events of the Mood SLUG after *cursor* (None: from now), until disconnected
    or until *allowed* (asked before each batch) says the reader may no longer read."""
    if cursor is None:
        heads = await run_in_threadpool(access.heads, door.store)
        cursor = (heads.post_id, heads.wake_id)
    post_id, wake_id = cursor
    mood_id = (await run_in_threadpool(door.store.mood, slug)).id
    door.feed.streams += 1
    try:
        async for chunk in _events(door, slug, mood_id, post_id, wake_id, allowed, reader):
            yield chunk
    finally:
        door.feed.streams -= 1


async def _events(door, slug: str, mood_id: int, post_id: int, wake_id: int,
                  allowed: Callable[[], bool], reader: Reader) -> AsyncIterator[str]:
    yield ": connected\n\n"
    watched: set[int] = set()
    sent_working = sent_holds = None
    version = door.feed.version
    first = True
    while True:
        if not first and not await run_in_threadpool(allowed):
            return  # revoked or signed out: the stream ends
        first = False
        ch = await run_in_threadpool(access.mood_changes, door.store, slug, post_id, wake_id,
                                     tuple(watched), BATCH)
        fresh = {t.id for t in ch.turns if t.id > wake_id}
        for t in ch.turns:  # a turn starts before its reply is posted
            if t.id in fresh:
                wake_id = t.id
                yield frame("turn_started", _turn(t), (post_id, wake_id))
        for p in ch.posts:
            post_id = max(post_id, p.id)
            post = p.to_json()
            shown = await run_in_threadpool(_shown, door, post, reader)
            yield frame("post", dict(post, html=shown), (post_id, wake_id))
        if ch.posts and reader.who is not None:  # shown to the reader: read
            await run_in_threadpool(visits.mark, door.store, reader.who.person_id, mood_id,
                                    post_id, door.clock())
        for t in ch.turns:
            if t.status in IN_FLIGHT:
                watched.add(t.id)
            elif t.id in watched or t.id in fresh:
                watched.discard(t.id)
                yield frame("turn_ended", _turn(t), (post_id, wake_id))
        working = [_turn(t) for t in ch.turns if t.status in IN_FLIGHT]
        if working != sent_working:
            sent_working = working
            yield frame("working", working)
        holds = [{"agent": h.agent, "reason": h.reason, "since": iso(h.since), "owed": h.owed}
                 for h in ch.holds]
        if holds != sent_holds:
            sent_holds = holds
            yield frame("holds", holds)
        if len(ch.posts) >= BATCH:
            continue  # more to send at once
        seen = version
        version = await door.feed.wait(mood_id, version, door.options.keepalive)
        if door.feed.closing:
            return
        if not door.feed.moved(mood_id, seen):
            yield ": keep-alive\n\n"
