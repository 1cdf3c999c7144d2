"""Bad input at the front door, the cases found by hand: every one a clear 4xx with a
JSON error, never a 500 or an exception in the server, and nothing written.

The generated inputs over every route are in ``test_api_fuzz.py``.
"""

from __future__ import annotations

import pytest

from support import webserver
from support.webserver import T0

BIG = "9" * 23  # far past the store's 63-bit ids


@pytest.fixture
def caught():
    with webserver.caught_errors() as handler:
        yield handler
    assert not handler.records, handler.lines()


@pytest.fixture
def sqlite_served(cli):
    with webserver.lobby(cli) as s:
        cli("agent", "add", "helper", "--command", "cat")
        yield s


@pytest.fixture
def served(any_cli):
    with webserver.lobby(any_cli) as s:
        any_cli("agent", "add", "helper", "--command", "cat")
        yield s


def refused(response, status: int) -> dict:
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert body["error"] and body["detail"], body
    return body


def raw_json(c, method: str, path: str, raw: bytes):
    return c.request(method, path, content=raw, headers={"content-type": "application/json"})


# -- whole numbers ---------------------------------------------------------------------------

NUMBERS = [
    ("GET", "/api/v1/moods/lobby/posts?limit=%C2%B2", 400),
    ("GET", "/api/v1/moods/lobby/posts?after_id=%C2%B9", 400),
    ("GET", "/api/v1/moods/lobby/posts?before_id=%D9%A1", 400),  # ARABIC-INDIC DIGIT ONE
    ("GET", f"/api/v1/moods/lobby/posts?after_id={BIG}", 400),
    ("GET", "/api/v1/moods/lobby/posts?limit=%EF%BC%95", 400),  # FULLWIDTH DIGIT FIVE
    ("GET", f"/api/v1/wakes?limit={BIG}", 400),
    ("GET", "/api/v1/wakes/%C2%B2", 404),
    ("GET", f"/api/v1/wakes/{BIG}", 404),
    ("DELETE", "/api/v1/alarms/%C2%B2", 404),
    ("DELETE", f"/api/v1/alarms/{BIG}", 404),
    ("GET", "/m/lobby?before=%C2%B2", 400),
    ("GET", f"/m/lobby?before={BIG}", 400),
    ("GET", "/ops/wakes/%C2%B2", 404),
    ("GET", f"/ops/wakes/{BIG}", 404),
    ("GET", "/api/v1/moods/lobby/events?after=%C2%B2.%C2%B2", 400),
    ("GET", f"/api/v1/moods/lobby/events?after=1.{BIG}", 400),
]


@pytest.mark.parametrize("method,path,status", NUMBERS, ids=[f"{m} {p}" for m, p, _ in NUMBERS])
def test_numbers_that_are_not_plain_digits_or_too_big_are_refused(sqlite_served, caught,
                                                                  method, path, status):
    s = sqlite_served
    c = s.client(s.person("otto", "full", operator=True))
    refused(c.request(method, path, headers={"accept": "application/json"}), status)


def test_a_resumed_stream_with_an_event_id_too_big_is_refused(sqlite_served, caught):
    s = sqlite_served
    c = s.client(s.person("ada"))
    refused(c.get("/api/v1/moods/lobby/events",
                  headers={"last-event-id": "99999999999999999999"}), 400)
    refused(c.get("/api/v1/moods/lobby/events", headers={"last-event-id": "1.²".encode()}), 400)


def test_integers_in_a_body_past_the_store_s_range_are_refused(sqlite_served, caught):
    s = sqlite_served
    c = s.client(s.person("otto", "full", operator=True))
    refused(c.post("/api/v1/moods/lobby/posts", json={"text": "re", "reply_to": 2**70}), 400)
    refused(c.post("/api/v1/moods/lobby/posts", json={"text": "re", "reply_to": -(2**70)}), 400)
    refused(c.post("/api/v1/alarms", json={"agent": "helper", "mood": "lobby", "daily": "09:00",
                                           "tz": "UTC", "lateness_cutoff_minutes": 2**70}), 400)
    assert s.store.posts("lobby") == []


# -- JSON bodies -------------------------------------------------------------------------------


def test_deeply_nested_json_is_a_bad_body(sqlite_served, caught):
    s = sqlite_served
    c = s.client(s.person("ada"))
    path = "/api/v1/moods/lobby/posts"
    body = refused(raw_json(c, "POST", path, b"[" * 50_000), 400)
    assert body["error"] == "bad_json"
    refused(raw_json(c, "POST", path, b'{"text": ' + b"[" * 5_000 + b"]" * 5_000 + b"}"), 400)
    refused(raw_json(c, "POST", path, b'{"text": ' + b'{"a":' * 5_000 + b"1" + b"}" * 5_001),
            400)
    # Brackets inside a string are text, not depth.
    ok = raw_json(c, "POST", path, b'{"text": "' + b"[" * 5_000 + b'"}')
    assert ok.status_code == 201, ok.text
    assert len(s.store.posts("lobby")) == 1


# -- text ---------------------------------------------------------------------------------------

LONE = b'"a \\udfff b"'  # a lone surrogate, as JSON can spell one


def test_lone_surrogates_in_any_text_are_refused(sqlite_served, caught):
    s = sqlite_served
    c = s.client(s.person("otto", "full", operator=True))
    for method, path, body in [
        ("POST", "/api/v1/moods/lobby/signins", b'{"label": ' + LONE + b"}"),
        ("POST", "/api/v1/moods", b'{"slug": "den", "title": ' + LONE + b"}"),
        ("PUT", "/api/v1/settings", b'{"key": "rules", "mood": "lobby", "value": ' + LONE + b"}"),
        ("PUT", "/api/v1/settings", b'{"key": "idle_after", "value": "600", "mood": "lobby", '
                                    b'"note": ' + LONE + b"}"),
        ("PUT", "/api/v1/settings", b'{"key": "idle_after", "value": "600", "mood": '
                                    + LONE + b"}"),
        ("POST", "/api/v1/checkin/accept", b'{"code": ' + LONE + b"}"),
        ("POST", "/api/v1/checkin/done", b'{"for": ' + LONE + b"}"),
        ("POST", "/api/v1/alarms", b'{"agent": "helper", "mood": "lobby", "daily": "09:00", '
                                   b'"tz": "UTC", "note": ' + LONE + b"}"),
        ("POST", "/api/v1/moods/lobby/posts", b'{"text": ' + LONE + b"}"),
    ]:
        body = refused(raw_json(c, method, path, body), 400)
        assert "UTF-8" in body["detail"] or "surrogate" in body["detail"], body
    assert [m.slug for m in s.store.moods()] == ["lobby"]
    assert s.store.resolved(T0, mood="lobby")["rules"].value == ""


def test_nul_in_titles_labels_and_notes_is_refused_on_every_database(served, caught):
    s = served
    c = s.client(s.person("otto", "full", operator=True))
    for method, path, body in [
        ("POST", "/api/v1/moods/lobby/signins", {"label": "lap\x00top"}),
        ("POST", "/api/v1/moods", {"slug": "den", "title": "The\x00den"}),
        ("PUT", "/api/v1/settings", {"key": "idle_after", "value": "600", "mood": "lobby",
                                     "note": "for\x00the night"}),
        ("POST", "/api/v1/alarms", {"agent": "helper", "mood": "lobby", "daily": "09:00",
                                    "tz": "UTC", "note": "wake\x00up"}),
    ]:
        body = refused(c.request(method, path, json=body), 400)
        assert "NUL" in body["detail"], body
    for path in ("/api/v1/moods/lob%00by", "/api/v1/settings?mood=lob%00by",
                 "/api/v1/moods/lobby/posts?limit=1%00"):  # looked up, not written
        assert "NUL" in refused(c.get(path), 400)["detail"]
    assert [m.slug for m in s.store.moods()] == ["lobby"]


def test_the_store_refuses_nul_and_lone_surrogates_whoever_calls_it(any_cli):
    from poller import errors

    any_cli("mood", "add", "lobby")
    any_cli("person", "add", "ada")
    store = webserver.store_for(any_cli.db_url)
    for bad in ("The\x00den", "The \udfff den"):
        with pytest.raises(errors.UserError):
            store.add_mood("den", bad, T0)
        with pytest.raises(errors.UserError):
            store.add_signin("ada", "lobby", T0, label=bad)
        with pytest.raises(errors.UserError):
            store.set_setting("idle_after", "600", T0, mood="lobby", note=bad)
    assert [m.slug for m in store.moods()] == ["lobby"]


# -- the sign-in form's cookie, sign-ins and typing ------------------------------------------------


def test_a_pre_sign_in_cookie_the_client_chose_is_replaced(sqlite_served):
    s = sqlite_served
    c = s.client()
    c.cookies.set("mp_pre", "chosen-by-the-client", path="/signin")
    form = c.get("/signin")
    issued = [h for h in form.headers.get_list("set-cookie") if h.startswith("mp_pre=")]
    assert issued and not issued[0].startswith("mp_pre=chosen-by-the-client;"), issued
    assert s.door.keys.csrf("chosen-by-the-client") not in form.text


def test_sign_ins_and_typing_signals_are_rate_limited_per_token(sqlite_served):
    from poller.web.auth import RateLimit

    s = sqlite_served
    s.door.signin_limit = RateLimit(2, clock=lambda: 100.0, what="sign-ins")
    s.door.typing_limit = RateLimit(2, clock=lambda: 100.0, what="typing signals")
    ada, bea = s.client(s.person("ada")), s.client(s.person("bea"))
    for _ in range(2):
        assert ada.post("/api/v1/moods/lobby/signins", json={}).status_code == 201
        assert ada.post("/api/v1/moods/lobby/typing").status_code == 200
    r = refused(ada.post("/api/v1/moods/lobby/signins", json={}), 429)
    assert "sign-ins" in r["detail"]
    assert "typing" in refused(ada.post("/api/v1/moods/lobby/typing"), 429)["detail"]
    assert bea.post("/api/v1/moods/lobby/signins", json={}).status_code == 201
    # Looking at the Mood page is no sign-in: it is shown, and nothing is recorded.
    page = s.client(s.tokens["ada"]).get("/m/lobby")
    assert page.status_code == 200
    assert signins(s) == 3


def signins(s) -> int:
    import sqlalchemy as sa

    from poller.models import SignIn

    with s.store.reading() as session:
        return session.scalar(sa.select(sa.func.count()).select_from(SignIn))
