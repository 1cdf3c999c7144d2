"""The ASGI application: the routes of :mod:`api`, :mod:`pages` and :mod:`health`
over one :class:`Door` (the store, the clock, the keys, the feed).

Cross-cutting rules live here: request bodies are capped, every response
carries a strict Content-Security-Policy (no inline script, nothing from
elsewhere), and every refusal is JSON ``{"error": code, "detail": sentence}``
under ``/api`` (a page elsewhere).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from dataclasses import dataclass
from typing import Callable, Optional

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route as StarRoute
from starlette.staticfiles import StaticFiles

from poller.store import access
from poller.web import api, auth, batch, events, health, openapi
from poller.web.handling import check_body, check_texts, guarded, parse_query, read_json

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


@dataclass(frozen=True)
class Options:
    posts_per_minute: int = 30  # per token; 429 past it
    body_limit: int = 512 * 1024  # bytes of a request body
    keepalive: float = 15.0  # seconds between an idle stream's keep-alive comments
    watch_every: float = 0.25  # seconds between the feed's looks at the store
    poller_interval: Optional[float] = None  # what /healthz ages a cycle against
    secure_cookie: bool = False  # set the cookie's Secure flag (serving behind TLS)


class Door:
    """What every request needs: the store and its clock, and the app's own state."""

    def __init__(self, store, config, clock: Callable[[], dt.datetime], options: Options,
                 dials=None):
        self.store, self.config, self.clock, self.options = store, config, clock, options
        self.keys = auth.Keys()
        self.identities = access.Identities(store)  # bearer tokens, remembered a short while
        # Per token: posts, and sign-ins and typing signals (each sign-in can wake an agent).
        self.post_limit = auth.RateLimit(options.posts_per_minute)
        self.signin_limit = auth.RateLimit(options.posts_per_minute, what="sign-ins")
        self.typing_limit = auth.RateLimit(options.posts_per_minute, what="typing signals")
        self.posts = batch.GroupCommit(store)  # posts of concurrent requests share a commit
        self.feed = events.Feed(store, options.watch_every)
        if dials is None:
            from wiki_rules.source import DialSource

            dials = DialSource.from_config(config, store.engine)
        self.dials = dials

    def posted(self) -> None:
        """Something was committed here: streams look at once."""
        self.feed.poke()

    def caller(self, request: Request) -> Optional[auth.Caller]:
        """Who sent *request*: its bearer token, else its session cookie, else nobody.

        A bearer token that is unknown or revoked is refused outright (401).
        """
        token = auth.bearer(request.headers.get("authorization", ""))
        if token is not None:
            who = self.identities.identify(token)
            if who is None:
                raise auth.Refused(401, "unauthorized", "the token is unknown or was revoked",
                                   {"WWW-Authenticate": 'Bearer error="invalid_token"'})
            return auth.Caller(who, "bearer")
        secret = request.cookies.get(auth.COOKIE, "")
        who = access.session_identity(self.store, secret, self.clock()) if secret else None
        return auth.Caller(who, "cookie", secret) if who else None


def create_app(store, config, *, clock: Callable[[], dt.datetime],
               options: Options = Options(), dials=None) -> Starlette:
    from poller.web import pages

    door = Door(store, config, clock, options, dials)
    routes = [StarRoute(api.PREFIX + r.path, _api_endpoint(door, r), methods=[r.method])
              for r in api.ROUTES if r.run is not None]
    routes += [
        StarRoute(api.PREFIX + "/moods/{slug}/events", _events_endpoint(door), methods=["GET"]),
        StarRoute(api.PREFIX + "/openapi.json", _openapi_endpoint(), methods=["GET"]),
        StarRoute("/healthz", _healthz_endpoint(door), methods=["GET"]),
        StarRoute("/metrics", _metrics_endpoint(door), methods=["GET"]),
        Mount("/static", StaticFiles(packages=[("poller.web", "static")]), name="static"),
        *pages.routes(door),
    ]
    tools = _tool_server(door)
    if tools is not None:  # the Moods as MCP tools, for a bearer token (poller.toolserver)
        # POST only: it answers each request in JSON and keeps no session, so it offers no
        # stream for a GET to hold open (MCP lets a server answer that GET 405).
        routes.append(StarRoute("/mcp", endpoint=tools, methods=["POST"]))

    @contextlib.asynccontextmanager
    async def lifespan(app):
        _fit_threads_to_pool(store)
        door.feed.start()
        async with (tools.manager.run() if tools is not None else contextlib.nullcontext()):
            yield
        await door.feed.stop()

    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={auth.Refused: _refused, 404: _not_found,
                                        405: _not_allowed})
    app.state.door = door
    app.add_middleware(BodyCap, limit=options.body_limit)
    app.add_middleware(Headers)
    return app


def _tool_server(door: Door):
    """``/mcp``: the MCP server over streamable HTTP (None when the SDK is not installed)."""
    try:
        from poller.toolserver.server import HttpMount
    except ImportError:  # pragma: no cover - a dependency of the package
        return None
    return HttpMount(door.store, door.clock, limit=door.post_limit, on_posted=door.posted)


def _fit_threads_to_pool(store) -> None:
    """Run at most as many requests' database work at once as the engine's pool keeps
    connections: more would make the pool open and close a connection per request."""
    import anyio.to_thread

    size = getattr(store.engine.pool, "size", lambda: 0)()
    if size:
        anyio.to_thread.current_default_thread_limiter().total_tokens = max(size, 4)


# -- Endpoints ---------------------------------------------------------------------------------


def _api_endpoint(door: Door, route: api.Route):
    async def endpoint(request: Request) -> Response:
        check_texts(request)
        body = {}
        if route.body is not None:
            body = await read_json(request)
            check_body(route, body)
        query = parse_query(route, request.query_params)

        def work():
            caller = door.caller(request)
            who = auth.require(caller, route.need) if route.need else None
            if caller is not None and caller.via == "cookie" and request.method not in SAFE_METHODS:
                door.keys.check_csrf(caller.session, request.headers.get("x-csrf-token"))
            return route.run(api.Call(door, who, dict(request.path_params), query, body,
                                      door.clock()))

        return JSONResponse(await guarded(work), status_code=route.status)

    return endpoint


def _events_endpoint(door: Door):
    async def endpoint(request: Request) -> Response:
        check_texts(request)
        cursor = events.parse_cursor(request.headers.get("last-event-id")
                                     or request.query_params.get("after"))
        slug = request.path_params["slug"]

        def check():
            caller = door.caller(request)
            who = auth.require(caller, "read")
            door.store.mood(slug)
            # A notice asking for approval comes with its buttons for a reader who may
            # answer it, the forms bound to the reader's session as the page's are.
            return events.Reader(who, door.keys.csrf(caller.session) if caller.session else "")

        def still_allowed() -> bool:
            """Asked again before each batch: a revoked token or an ended session ends
            the stream instead of reading on."""
            try:
                auth.require(door.caller(request), "read")
            except auth.Refused:
                return False
            return True

        reader = await guarded(check)
        return StreamingResponse(events.stream(door, slug, cursor, still_allowed, reader),
                                 media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    return endpoint


def _openapi_endpoint():
    doc = openapi.document(api.ROUTES, api.PREFIX)

    async def endpoint(request: Request) -> Response:
        return JSONResponse(doc)

    return endpoint


def _healthz_endpoint(door: Door):
    async def endpoint(request: Request) -> Response:
        report = await run_in_threadpool(health.facts, door.store, door.clock(), door.dials,
                                         door.options.poller_interval)
        return JSONResponse(report, status_code=200 if report["ok"] else 503)

    return endpoint


def _metrics_endpoint(door: Door):
    from prometheus_client import CONTENT_TYPE_LATEST

    async def endpoint(request: Request) -> Response:
        body = await guarded(lambda: health.metrics_text(door.store, door.clock()))
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    return endpoint


# -- Refusals, headers, body cap --------------------------------------------------------------


def _wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/") or "application/json" in request.headers.get(
        "accept", "")


async def _refused(request: Request, exc: auth.Refused) -> Response:
    if _wants_json(request):
        return JSONResponse({"error": exc.code, "detail": exc.detail}, status_code=exc.status,
                            headers=exc.headers)
    from poller.web import pages

    return pages.refused(request, exc)


async def _not_found(request: Request, exc) -> Response:
    return await _refused(request, auth.Refused(404, "not_found", f"nothing at {request.url.path}"))


async def _not_allowed(request: Request, exc) -> Response:
    allow = (getattr(exc, "headers", None) or {}).get("Allow", "")  # the methods served there
    return await _refused(request, auth.Refused(
        405, "method_not_allowed", f"{request.method} is not served here"
        + (f" (use {allow})" if allow else ""), {"Allow": allow} if allow else None))


class Headers:
    """Security headers on every response."""

    HEADERS = [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
               (b"referrer-policy", b"no-referrer"), (b"x-frame-options", b"DENY")]

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def with_headers(message):
            if message["type"] == "http.response.start":
                message = dict(message, headers=list(message.get("headers", [])) + self.HEADERS)
            await send(message)

        await self.app(scope, receive, with_headers)


class BodyCap:
    """Refuse a request body over *limit* bytes (413): by its Content-Length at once, and
    as it streams in (a chunked body that says nothing).

    The rest of a refused body is read and dropped (up to :data:`DRAIN` times the
    limit) so the client gets the answer instead of a reset connection.
    """

    DRAIN = 16

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length", b"0")
        if not length.isdigit() or int(length) > self.limit:
            if length.isdigit() and int(length) <= self.DRAIN * self.limit:
                await self.drain(receive, more=True)
            response = JSONResponse({"error": "body_too_large", "detail": self.detail},
                                    status_code=413)
            return await response(scope, receive, send)
        seen = 0

        async def capped():
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                await self.drain(receive, more=message.get("more_body", False))
                raise auth.Refused(413, "body_too_large", self.detail)
            return message

        await self.app(scope, capped, send)

    @property
    def detail(self) -> str:
        return f"the request body is over {self.limit:,} bytes"

    async def drain(self, receive, more: bool) -> None:
        budget = self.DRAIN * self.limit
        while more and budget > 0:
            message = await receive()
            budget -= len(message.get("body", b""))
            more = message.get("more_body", False) and message["type"] == "http.request"
