"""The running Matrix bridge: an application service (or a bot account), over mautrix.

In appservice mode the homeserver PUTs transactions of events to us; each is
taken in (:func:`take_in`, through :mod:`poller.store.bridges`) before we
answer 200.  An event that cannot be taken in (malformed, or refused by the
store's door) is recorded as refused, with why, where ``status`` shows it, and
the transaction is acknowledged all the same: one member's bad event never
holds back the room's others.  Only a store that cannot be reached answers 503,
so the homeserver sends the transaction again: nothing is lost, and a
transaction sent twice changes nothing (events are keyed by their ids).  Each agent speaks as its own user
(mautrix's ``IntentAPI`` masquerades with the appservice token), joins every
linked room, shows a typing notification while one of its turns runs, and
sends what the outbox holds with ``PUT …/send/m.room.message/{txnId}``, the
txnId being the outbox item's id, so a resend after a crash is the same event.

In bot mode (a homeserver where the operator cannot register an appservice)
one ordinary account reads the rooms with ``/sync`` and speaks for every
agent, its replies starting with the agent's handle; a mention is then an
``@handle`` in the text or a reply to the agent's message.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import json
import logging
import time
from typing import Callable, Optional

from poller import errors, text
from poller.bridges import delivery, matrix
from poller.store import bridges, outbox

log = logging.getLogger("poller.bridges")
REFRESH_S = 10.0  # new agents and newly linked rooms are joined within this
PRESENCE_S = 2.0  # an agent going out or coming back shows in its presence within this
# A transaction holds up to 50 events and 100 ephemeral ones of up to 64 KiB each:
# one refused for its size would be sent again forever.
MAX_TRANSACTION = 16 * 1024 * 1024


def take_in(store, cfg: matrix.MatrixConfig, clock: Callable, events: list,
            bot: bool = False) -> list[matrix.Meaning]:
    """Store what *events* mean; the invitations of our users, to accept.  An event that
    cannot be taken in (malformed, refused by the store's door, or one the store chokes
    on) is recorded as refused and the others go on; only a store that cannot be reached
    raises, so the events are delivered again."""
    invites = []
    for event in events:
        m = matrix.meaning(cfg, event)
        if isinstance(m, matrix.Refused):
            _refuse(store, clock, m)
        elif m is not None and m.kind == "invite":
            invites.append(m)
        elif m is not None:
            try:
                _take(store, cfg, clock(), m, bot)
            except unreachable():
                raise
            except Exception as exc:
                if not isinstance(exc, errors.UserError):
                    log.exception("matrix event %s could not be stored", m.event_id)
                reason = str(exc) if isinstance(exc, errors.UserError) else delivery.describe(exc)
                _refuse(store, clock, matrix.Refused(m.event_id[:matrix.REF_MAX], m.room, reason))
    return invites


def unreachable() -> tuple[type[Exception], ...]:
    """What says the store cannot be used now (not that an event is bad): the
    transaction is answered 503 and sent again."""
    import sqlalchemy as sa

    return (errors.StoreError, sa.exc.OperationalError, sa.exc.InterfaceError)


def _refuse(store, clock: Callable, r: matrix.Refused) -> None:
    if bridges.refuse(store, matrix.NAME, r.ref, r.room, r.reason, clock()):
        log.warning("matrix event %s refused: %s", r.ref, r.reason,
                    extra={"action": "matrix_refused", "event": r.ref})


def _take(store, cfg: matrix.MatrixConfig, now, m: matrix.Meaning, bot: bool) -> None:
    name, trust = matrix.NAME, cfg.default_trust
    if m.kind == "message":
        msg = m.message
        if bot:  # the agents have no users of their own: @handle in the text names them
            msg = dataclasses.replace(msg, mentions=tuple(sorted(text.mentioned_keys(msg.body))))
        bridges.ingest(store, name, msg, now, trust)
    elif m.kind == "join":
        bridges.join(store, name, m.event_id, m.room, m.sender, matrix.localpart(m.sender),
                     now, trust)
    elif m.kind == "edit":
        bridges.edit(store, name, m.event_id, m.target, m.sender, m.body, now)
    elif m.kind == "redact":
        bridges.redact(store, name, m.event_id, m.target, now)
    elif m.kind == "typing":
        bridges.typing(store, name, m.room, now)
    elif m.kind == "react":
        bridges.react(store, name, m.event_id, m.target, m.sender, m.body, now)


class MatrixService:
    """One running bridge: ``await MatrixService(...).run(stop)``."""

    name = matrix.NAME

    def __init__(self, store, cfg: matrix.MatrixConfig, clock: Callable) -> None:
        self.store, self.cfg, self.clock = store, cfg, clock
        self.max_attempts = cfg.max_attempts
        self.appservice = None
        self.client = None  # bot mode
        self._joined: set[tuple[str, str]] = set()
        self._registered: set[str] = set()
        self._aliases: dict[str, str] = {}
        self._presence_shown: dict[str, str] = {}  # handle -> the line shown ("": online)
        self.serves = f"{cfg.mode} for {cfg.server_name}"  # its beat says so (see refresh)

    async def run(self, stop: asyncio.Event) -> None:
        await (self._start_appservice() if self.cfg.mode == "appservice" else self._start_bot())
        try:
            await self.refresh()
            log.info("matrix bridge (%s) for %s on %s: %s", self.cfg.mode, self.cfg.server_name,
                     self.cfg.homeserver, self.serves, extra={"action": "bridge_started"})
            tasks = [asyncio.create_task(delivery.serve(self.store, self, self.clock, stop,
                                                        self.cfg.poll)),
                     asyncio.create_task(self._typing(stop))]
            if self.client is not None:
                tasks.append(asyncio.create_task(self._sync(stop)))
            await stop.wait()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            await self._stop()

    # -- appservice ----------------------------------------------------------------------

    async def _start_appservice(self) -> None:
        from aiohttp import web
        from mautrix.appservice import AppService

        class Service(AppService):
            def register_routes(self, app) -> None:
                pass  # the transaction endpoint is the bridge's own (see _transaction)

        cfg = self.cfg
        self.appservice = Service(server=cfg.homeserver, domain=cfg.server_name,
                                  as_token=cfg.as_token, hs_token=cfg.hs_token,
                                  bot_localpart=cfg.bot_localpart, id=cfg.id,
                                  state_store=_memory_state(), log="poller.bridges.mautrix",
                                  aiohttp_params={"client_max_size": MAX_TRANSACTION})
        router = self.appservice.app.router
        for prefix in ("/_matrix/app/v1", ""):
            # A txnId is any text ("{txn}" alone would not match one with a brace).
            router.add_put(prefix + "/transactions/{txn:[^/]+}", self._transaction)
            router.add_get(prefix + "/users/{user}", self._query)
            router.add_get(prefix + "/rooms/{alias}", self._query)
        router.add_post("/_matrix/app/v1/ping", self._ping)
        self._web = web
        await self.appservice.start(cfg.listen_host, cfg.listen_port)
        log.info("matrix appservice listening on %s:%s", cfg.listen_host, cfg.listen_port,
                 extra={"action": "matrix_listening", "port": cfg.listen_port})

    def _authorized(self, request) -> bool:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ")
        given = given or request.query.get("access_token", "")
        # A header's bytes that are not UTF-8 come as surrogates: a wrong token, no 500.
        return hmac.compare_digest(given.encode("utf-8", "surrogatepass"),
                                   self.cfg.hs_token.encode())

    async def _transaction(self, request):
        web = self._web
        if not self._authorized(request):
            return web.json_response({"errcode": "M_FORBIDDEN", "error": "bad hs_token"},
                                     status=403)
        try:  # JSON is UTF-8, whatever charset the Content-Type names (one unknown is no 500)
            events = matrix.transaction_events(json.loads((await request.read()).decode()))
        except (ValueError, RecursionError):
            return web.json_response({"errcode": "M_NOT_JSON", "error": "not JSON"}, status=400)
        except errors.UserError as exc:
            return web.json_response({"errcode": "M_BAD_JSON", "error": str(exc)}, status=400)
        try:
            invites = await asyncio.to_thread(take_in, self.store, self.cfg, self.clock, events)
        except Exception as exc:  # not stored: have the homeserver send it again
            log.warning("matrix transaction %s not taken in: %s", request.match_info["txn"],
                        delivery.describe(exc), extra={"action": "matrix_transaction_failed"})
            return web.json_response({"errcode": "M_UNKNOWN", "error": "try again"}, status=503)
        for m in invites:
            asyncio.create_task(self._accept(m))
        return web.json_response({})

    async def _query(self, request):
        if not self._authorized(request):
            return self._web.json_response({"errcode": "M_FORBIDDEN"}, status=403)
        return self._web.json_response({"errcode": "M_NOT_FOUND"}, status=404)

    async def _ping(self, request):
        if not self._authorized(request):
            return self._web.json_response({"errcode": "M_FORBIDDEN"}, status=403)
        return self._web.json_response({})

    async def _accept(self, m: matrix.Meaning) -> None:
        handle = matrix.agent_of(self.cfg, m.target)
        try:
            await self.intent(handle).join_room_by_id(m.room)
            self._joined.add((handle.lower(), m.room))
        except Exception as exc:
            log.warning("%s could not join %s: %s", m.target, m.room, delivery.describe(exc))

    # -- bot account -------------------------------------------------------------------------

    async def _start_bot(self) -> None:
        from mautrix.client import Client

        self.client = Client(mxid=self.cfg.bot_user, base_url=self.cfg.homeserver,
                             token=self.cfg.bot_token, state_store=_memory_state())

    async def _sync(self, stop: asyncio.Event) -> None:
        since = None
        while not stop.is_set():
            try:
                data = await self.client.sync(since=since, timeout=10_000)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("matrix sync failed: %s", delivery.describe(exc))
                await asyncio.sleep(2)
                continue
            events = list(_timeline(data))
            try:
                await asyncio.to_thread(take_in, self.store, self.cfg, self.clock, events, True)
            except Exception as exc:  # keep `since`: the same batch is read again
                log.warning("matrix sync batch not taken in: %s", delivery.describe(exc))
                await asyncio.sleep(1)
                continue
            since = data.get("next_batch", since)

    # -- speaking ----------------------------------------------------------------------------

    def intent(self, handle: str):
        """Who speaks for the agent *handle*: its own user, or the bot account."""
        if self.client is not None:
            return self.client
        return self.appservice.intent.user(matrix.agent_user(self.cfg, handle))

    async def refresh(self) -> None:
        """Register each agent's user (display name: its handle) and join it to every room."""
        handles = await asyncio.to_thread(bridges.agent_handles, self.store)
        rooms = await asyncio.to_thread(bridges.rooms, self.store, matrix.NAME)
        self.serves = (f"{self.cfg.mode} for {self.cfg.server_name}: "
                       f"{len(rooms)} room(s) ({', '.join(r.external for r in rooms[:5])}"
                       f"{', ...' if len(rooms) > 5 else ''}), {len(handles)} agent(s)")
        for room in rooms:
            if room.external.startswith("#"):
                await self._resolve(room)
        if self.client is not None:
            for room in rooms:
                await self._join(self.client, "", room.external)
            return
        for handle in handles:
            intent = self.intent(handle)
            if handle not in self._registered:
                await _quietly(intent.ensure_registered(), "register", handle)
                await _quietly(intent.set_displayname(handle), "name", handle)
                self._registered.add(handle)
            for room in rooms:
                await self._join(intent, handle.lower(), room.external)

    async def _join(self, intent, key: str, room: str) -> None:
        if (key, room) in self._joined or room.startswith("#"):
            return
        try:
            await intent.join_room_by_id(room)
        except Exception as exc:
            user = getattr(intent, "mxid", None) or matrix.agent_user(self.cfg, key or "?")
            hint = (f": invite {user} to {room} (a private room lets in only those invited)"
                    if "forbidden" in type(exc).__name__.lower() or "M_FORBIDDEN" in str(exc)
                    else "")
            log.warning("%s could not join %s: %s%s", user, room, delivery.describe(exc), hint,
                        extra={"action": "join_refused", "user": str(user), "room": room})
            return
        self._joined.add((key, room))

    async def _resolve(self, room: bridges.Room) -> None:
        who = self.client or self.appservice.intent
        try:
            info = await who.resolve_room_alias(room.external)
        except Exception as exc:
            log.warning("cannot resolve %s: %s", room.external, delivery.describe(exc))
            return
        self._aliases[room.external] = info.room_id
        await asyncio.to_thread(bridges.set_room, self.store, matrix.NAME, room.mood_id,
                                info.room_id)

    async def send(self, item: outbox.Item) -> Optional[str]:
        from mautrix.types import EventType, RoomID

        payload = await asyncio.to_thread(outbox.payload_of, self.store, item)
        reply = None
        if item.event in ("reply", "silent"):
            reply = await asyncio.to_thread(bridges.reply_target, self.store, matrix.NAME,
                                            item.wake_id)
        if item.event == "silent":  # nothing is said; the agent has read what called it
            if reply is not None:
                await self.intent(payload["sender"]).send_receipt(
                    self._aliases.get(item.target, item.target), reply.external_id)
            return None
        body = payload["text"]
        if self.client is not None:
            body = f"{payload['sender']}: {body}"
        content = matrix.content(item.event, body, reply)
        room = RoomID(self._aliases.get(item.target, item.target))
        return await self.intent(payload["sender"]).send_message_event(
            room, EventType.ROOM_MESSAGE, content, txn_id=f"mood-poller.{item.id}")

    def sent(self, item: outbox.Item, external_id: Optional[str]) -> None:
        bridges.record_sent(self.store, matrix.NAME, item.id, external_id or "", self.clock())

    # -- typing ----------------------------------------------------------------------------

    async def _typing(self, stop: asyncio.Event) -> None:
        """While a turn runs, its agent types in the room: shown, renewed, cleared."""
        shown: dict[int, tuple[str, str, float]] = {}
        refreshed = presented = time.monotonic()
        while not stop.is_set():
            try:
                now = time.monotonic()
                running = {r.wake_id: r for r in
                           await asyncio.to_thread(bridges.running, self.store, matrix.NAME)}
                for wake_id, r in running.items():
                    if wake_id not in shown or now - shown[wake_id][2] >= self.cfg.typing_renew:
                        await self._type(r.room, r.agent, True)
                        shown[wake_id] = (r.room, r.agent, now)
                for wake_id in [w for w in shown if w not in running]:
                    room, agent, _ = shown.pop(wake_id)
                    await self._type(room, agent, False)
                if now - refreshed >= REFRESH_S:
                    refreshed = now
                    await self.refresh()
                if now - presented >= PRESENCE_S:
                    presented = now
                    await self._presence()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("matrix typing: %s", delivery.describe(exc))
            try:
                await asyncio.wait_for(stop.wait(), self.cfg.poll)
            except asyncio.TimeoutError:
                pass

    async def _presence(self) -> None:
        """An agent out on an activity is unavailable, its status the line the pages show
        ("out for a creek walk, back about 14:30"); back, it is online.  Sent on change.
        (In bot mode one account speaks for every agent: it has no presence of its own.)"""
        if self.client is not None:
            return
        from poller import observe
        from mautrix.types import PresenceState

        out = await asyncio.to_thread(observe.away_lines, self.store, self.clock())
        handles = await asyncio.to_thread(bridges.agent_handles, self.store)
        for handle in handles:
            line = out.get(handle, "")
            if self._presence_shown.get(handle) == line:
                continue
            state = PresenceState.UNAVAILABLE if line else PresenceState.ONLINE
            if await _quietly(self.intent(handle).set_presence(state, line), "presence", handle):
                self._presence_shown[handle] = line

    async def _type(self, room: str, agent: str, typing: bool) -> None:
        room = self._aliases.get(room, room)
        await _quietly(self.intent(agent).set_typing(room, 30_000 if typing else 0),
                       "typing", agent)

    async def _stop(self) -> None:
        if self.appservice is not None:
            await self.appservice.stop()
        if self.client is not None:
            await self.client.api.session.close()


def _timeline(data: dict):
    """Every timeline and ephemeral event of a sync response (one batch can carry several),
    with its room."""
    for room_id, room in ((data.get("rooms") or {}).get("join") or {}).items():
        for part in ("timeline", "ephemeral"):
            for event in (room.get(part) or {}).get("events") or []:
                yield dict(event, room_id=room_id)


async def _quietly(call, what: str, who: str) -> bool:
    try:
        await call
        return True
    except Exception as exc:
        log.warning("matrix %s for %s failed: %s", what, who, delivery.describe(exc))
        return False


def _memory_state():
    from mautrix.appservice.state_store import ASStateStore
    from mautrix.client.state_store import MemoryStateStore

    class State(MemoryStateStore, ASStateStore):
        def __init__(self) -> None:
            MemoryStateStore.__init__(self)
            ASStateStore.__init__(self)

    return State()


def main(store, cfg: matrix.MatrixConfig, clock: Callable) -> None:
    """Run the bridge until SIGTERM or SIGINT."""
    import signal

    async def go() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await MatrixService(store, cfg, clock).run(stop)

    asyncio.run(go())
