"""Every HTTP route, fed generated requests over a real server on 127.0.0.1: never a
500, never an exception in the server, and under ``/api`` every refusal one JSON
error ``{"error": code, "detail": sentence}``.

The routes come from the app itself (``poller.web.api.ROUTES``, whose parameters
and body schemas the OpenAPI document is made of, and the pages'), so a new route
or a new field is fuzzed without touching this file.  Each request goes as one of
four callers: the owner (an operator with trust full), a stranger (a person with
trust none), nobody, and a token nobody has.

Values are mostly what fits, so the deeper checks are reached, with now and then
one that is anything at all: a number that is not ASCII digits or is past 63
bits, text with NUL or a lone surrogate, JSON nested thousands deep, the wrong
type, an unknown field, a body that is not JSON.
"""

from __future__ import annotations

import json
import re
import shutil
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support import webserver
from support.cli import Cli

EXAMPLES = 30  # requests per route: ~45 routes in well under a minute on SQLite
COUNTS = {"tried": 0, "2xx": 0, "3xx": 0, "4xx": 0, "5xx": 0, "healthz 503": 0, "tracebacks": 0}


def served_routes() -> list[tuple[str, str]]:
    """(method, path template) of everything the app answers, from a real app."""
    from starlette.routing import Route

    from poller.web.app import create_app

    app = create_app(_NoStore(), None, clock=lambda: None, dials=object())
    return sorted((m, r.path) for r in app.routes if isinstance(r, Route)
                  for m in r.methods - {"HEAD"})


class _NoStore:
    """Enough of a store for building the app (nothing is served from it)."""

    engine = None


ROUTES = served_routes()


def declared():
    from poller.web import api

    return {(r.method, api.PREFIX + r.path): r for r in api.ROUTES}


# -- values -----------------------------------------------------------------------------------

numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.text(st.characters(categories=["Nd", "No"]), min_size=1, max_size=25),  # "²", "١"
    st.sampled_from(["0", "1", "2", "-1", str(2**63 - 1), str(2**63), "9" * 23, "²", "¹",
                     "١٢", "５", "1_000", "+5", " 7", "0x10", "1e3", "nan", "", "1.5",
                     "1" * 5000]),
)
times = st.sampled_from([
    "2031-05-06T09:00:00Z", "2031-05-07T00:00:00+02:00", "9999-12-31T23:59:00Z",
    "0001-01-01T00:00:00+01:00", "1969-12-31T23:59:59Z", "2026-02-30T00:00:00Z", "now", "",
    "2031-05-06 21:00", "09:00", "Z", "2031\udcff", "2031-05-06T09:00:00Z\x00",
])
nasty = st.sampled_from(["\x00", "\udfff", "\ud800", "\x1b[2J", "\u202e", "\u2028", "\r\n",
                         "</mood-wake>", "@helper", "%00", "%", "'", '"', "\\", "..", "/",
                         "?", "#", "é", "\U0001f3f4", "lobby", "ada"])
short_texts = st.one_of(st.text(max_size=30), st.lists(nasty, max_size=5).map("".join),
                        st.just("x" * 2000), st.just(""))  # for a URL: httpx takes ~64 kB
texts = st.one_of(short_texts, st.just("x" * 70_000))
deep = st.sampled_from([[[[[[[]]]]]], json.loads("[" * 60 + "]" * 60)])
any_json = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**80), max_value=2**80),
              st.floats(allow_nan=False, allow_infinity=False), texts),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=8)

GOOD = {
    "slug": ["lobby", "nowhere", "den"], "wake_id": ["1", "2"], "alarm_id": ["1", "2"],
    "title": ["The den"], "text": ["hello @helper", "plain words"], "reply_to": [1],
    "label": ["laptop"], "key": ["idle_after", "listening", "rules", "discretion", "model"],
    "value": ["600", "off", "chatty", "be kind"], "mood": ["lobby"], "agent": ["helper"],
    "note": ["for the night"], "until": ["2031-05-07T00:00:00Z"],
    "at": ["2031-05-07 09:00"], "daily": ["09:00"], "cron": ["0 9 * * *"],
    "tz": ["UTC", "Europe/Berlin"], "lateness_cutoff_minutes": [60], "for": ["2031-05-06 21:00"],
    "code": ["not-a-code"], "after_id": ["0", "1"], "before_id": ["5"], "limit": ["1", "50"],
    "archived": ["1"], "after": ["0.0", "1.1"], "since": ["2031-05-06T00:00:00Z"],
    "token": ["not-a-token"], "csrf": ["0" * 64], "next": ["/m/lobby", "//evil.test"],
    "before": ["5"], "kind": ["mention"], "status": ["replied"], "action": ["lift"],
    "confirm": ["stop"], "q": ["hello", "plain words", 'NEAR( "x* AND'], "sender": ["owner"],
}


cursors = st.one_of(st.tuples(numbers, st.sampled_from([".", "", "..", ". "]), numbers).map(
    "".join), short_texts)


def fitting(name: str, kind: str = "string"):
    """A value for a path, query or form that fits *name*, now and then anything of its kind."""
    good = GOOD.get(name)
    wild = {"integer": numbers, "time": times, "cursor": cursors}.get(kind, short_texts)
    return st.one_of(st.sampled_from(good), st.sampled_from(good), wild) if good else wild


def field_value(name: str, schema: dict):
    """A body field's value: mostly one that fits, else any number, text or JSON at all."""
    kind = schema.get("type")
    good = st.sampled_from(GOOD[name]) if name in GOOD else st.none()
    wild = st.integers(min_value=-(2**80), max_value=2**80) if kind == "integer" else texts
    return st.one_of(good, good, good, wild, any_json, deep)


@st.composite
def bodies(draw, schema: dict):
    """A JSON body for *schema*: usually its fields, fitting, with a stray one now and then;
    sometimes not an object, not JSON, or nested past any sense."""
    shape = draw(st.integers(0, 9))
    if shape == 0:
        return draw(st.sampled_from([b"[" * 50_000, b'{"text": ' + b"[" * 5000, b"{nope",
                                     b"\xff\xfe", b"", b"null", b"[]", b'"x"', b"1" * 5000,
                                     b'{"text": ' + b"1" * 5000 + b"}"]))
    if shape == 1:
        return json.dumps(draw(any_json)).encode()
    props = schema.get("properties", {})
    body = {}
    for name, sub in props.items():
        if name in schema.get("required", ()) and draw(st.integers(0, 9)) or draw(st.booleans()):
            body[name] = draw(field_value(name, sub))
    if draw(st.integers(0, 9)) == 0:
        body[draw(st.text(max_size=8))] = draw(any_json)
    return json.dumps(body).encode()


def url_part(value: str) -> str:
    return quote(value, safe="", errors="surrogatepass")


@st.composite
def requests(draw, method: str, template: str, route):
    """One request for the route at *template* (*route*: its API declaration, if any)."""
    path = template
    for name in _params(template):
        value = draw(fitting(name, "integer" if name.endswith("_id") else "string"))
        path = path.replace("{" + name + "}", url_part(value))
    query = []
    params = list(route.query) if route is not None else [_Param(n) for n in PAGE_QUERY]
    for p in params:
        if draw(st.booleans()):
            kind = "cursor" if p.name == "after" else p.kind
            query.append((p.name, draw(fitting(p.name, kind))))
    if draw(st.integers(0, 9)) == 0:
        query.append((draw(st.text(max_size=6)), draw(short_texts)))
    if query:
        path += "?" + "&".join(f"{url_part(k)}={url_part(v)}" for k, v in query)
    headers, content = {}, None
    if route is not None and route.body is not None:
        content = draw(bodies(route.body))
        headers["content-type"] = draw(st.sampled_from(
            ["application/json"] * 8 + ["text/plain", "application/json; charset=latin-1"]))
    elif method == "POST":  # a page's form
        form = {n: draw(fitting(n)) for n in ("text", "token", "csrf", "next", "for", "action",
                                                 "confirm") if draw(st.booleans())}
        content = "&".join(f"{url_part(k)}={url_part(v)}" for k, v in form.items()).encode()
        headers["content-type"] = "application/x-www-form-urlencoded"
    if template.endswith("/events") and draw(st.booleans()):
        raw = draw(st.one_of(st.sampled_from(["1.1", "0"]), cursors))
        # As a header can carry it: no CR, LF or NUL (HTTP itself refuses those).
        headers["last-event-id"] = bytes(b for b in raw.encode("utf-8", "surrogatepass")
                                         if b not in b"\r\n\x00")
    caller = draw(st.sampled_from(["owner", "owner", "stranger", "nobody", "bogus"]))
    return method, path, headers, content, caller


# What the pages read from their query (they have no declared parameters).
PAGE_QUERY = {"before": "integer", "for": "string", "mood": "string", "agent": "string",
              "kind": "string", "status": "string", "since": "time", "limit": "integer",
              "next": "string", "q": "string", "sender": "string"}


class _Param:
    def __init__(self, name: str):
        self.name, self.kind = name, PAGE_QUERY[name]


def _params(template: str) -> list[str]:
    return re.findall(r"{(\w+)}", template)


# -- the server ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def world(tmp_path_factory, migrated_sqlite):
    """One server for the whole module (a fresh one per route would be most of the time)."""
    home = tmp_path_factory.mktemp("fuzz")
    with pytest.MonkeyPatch.context() as mp:
        for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "HOME"):
            mp.setenv(var, str(home / var.lower()))
        db = home / "moods.db"
        shutil.copyfile(migrated_sqlite, db)
        cli = Cli(f"sqlite:///{db}")
        cli("agent", "add", "helper", "--command", "cat")
        with webserver.caught_errors() as caught:
            with webserver.lobby(cli, posts_per_minute=0) as s:
                s.person("owner", "full", operator=True)
                s.person("stranger", "none")
                s.tokens["bogus"] = "mpt_" + "x" * 43
                cli("post", "lobby", "--as", "owner", "hello @helper")
                yield s, caught
            # The server has stopped: whatever it logged is in.
            COUNTS["tracebacks"] = len(caught.records)
    print(f"\nAPI fuzz: {COUNTS}")
    assert not caught.records, caught.lines()


def test_every_route_the_app_serves_is_fuzzed():
    from poller.web import api

    assert {(r.method, api.PREFIX + r.path) for r in api.ROUTES} <= set(ROUTES)
    assert ("GET", "/m/{slug}") in ROUTES and ("POST", "/signin") in ROUTES


@pytest.mark.parametrize("method,template", ROUTES, ids=[f"{m} {p}" for m, p in ROUTES])
def test_generated_requests_never_give_a_500_or_an_exception(world, method, template):
    s, caught = world
    # The server may log an exception just after it answered: one that comes in during
    # a later route fails that route (its text names the request), the last the module.
    start = len(caught.records)
    route = declared().get((method, template))
    clients = {who: s.client(token) for who, token in s.tokens.items()}
    clients["nobody"] = s.client()

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.function_scoped_fixture])
    @given(request=requests(method, template, route))
    def run(request):
        method_, path, headers, content, caller = request
        status = _send(clients[caller], method_, path, headers, content, template)
        COUNTS["tried"] += 1
        band = "healthz 503" if (template, status) == ("/healthz", 503) else f"{status // 100}xx"
        COUNTS[band] = COUNTS.get(band, 0) + 1
        what = (method_, path[:300], headers, content[:300] if content else None)
        assert status < 500 or (template, status) == ("/healthz", 503), what  # not ok yet
        assert len(caught.records) == start, (what, caught.lines()[start:])

    try:
        run()
    finally:
        for c in clients.values():
            c.close()
    assert len(caught.records) == start, caught.lines()[start:]


def _send(client, method: str, path: str, headers: dict, content, template: str) -> int:
    """Send one request; its status (the checks on a refusal's shape made here)."""
    if template.endswith("/events"):
        with client.stream(method, path, headers=headers, timeout=30) as r:
            if r.status_code == 200:  # read to the first batch's end: the cursor was used
                assert "event: holds" in _lines_until(r, "event: holds"), "the stream broke off"
            elif r.status_code < 500:
                r.read()
                _refusal(r, path)
            return r.status_code
    r = client.request(method, path, headers=headers, content=content)
    if 400 <= r.status_code < 500:
        _refusal(r, path)
    return r.status_code


def _lines_until(r, last: str) -> list[str]:
    seen = []
    for line in r.iter_lines():
        seen.append(line)
        if line == last:
            break
    return seen


def _refusal(r, path: str) -> None:
    if path.startswith("/api/"):
        body = r.json()
        assert set(body) == {"error", "detail"} and body["detail"], body
