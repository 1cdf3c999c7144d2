"""The JSON API (/api/v1) over uvicorn on a loopback port, with a real HTTP client:
every endpoint, and every refusal the issue names, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from support import webserver
from support.webserver import T0


@pytest.fixture
def served(any_cli):
    with webserver.lobby(any_cli) as s:
        yield s


@pytest.fixture
def sqlite_served(cli):
    with webserver.lobby(cli) as s:
        yield s


def tick(s, *args: str, at: float = 1):
    """A cycle of the poller, on the tests' clock (T0 + *at* seconds)."""
    import datetime as dt

    return s.cli("--now", (T0 + dt.timedelta(seconds=at)).isoformat(), "tick", *args)


def refused(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == code and body["detail"], body
    return body


def post_count(s) -> int:
    return len(s.store.posts("lobby", limit=1000))


def test_the_openapi_document_lists_every_route_served(sqlite_served):
    from starlette.routing import Route

    doc = sqlite_served.client().get("/api/v1/openapi.json").json()
    documented = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    served = {(m, r.path) for r in sqlite_served.app.routes if isinstance(r, Route)
              and r.path.startswith("/api/v1") for m in r.methods if m != "HEAD"}
    assert documented == served
    assert ("POST", "/api/v1/moods/{slug}/posts") in served
    assert doc["openapi"].startswith("3.")
    post = doc["paths"]["/api/v1/moods/{slug}/posts"]["post"]
    assert {"401", "403", "413", "429"} <= set(post["responses"])


def test_moods_posts_and_signins_as_the_token_s_person(served):
    ada = served.person("ada", "look")
    c = served.client(ada)
    assert c.get("/api/v1/me").json() == {"handle": "ada", "trust": "look", "operator": False}
    assert [m["slug"] for m in c.get("/api/v1/moods").json()] == ["lobby"]
    assert c.get("/api/v1/moods/lobby").json()["title"] == "The lobby"
    ids = []
    for n in range(5):
        r = c.post("/api/v1/moods/lobby/posts", json={"text": f"note {n}"})
        assert r.status_code == 201, r.text
        assert r.json()["sender"] == "ada"
        ids.append(r.json()["id"])
    reply = c.post("/api/v1/moods/lobby/posts", json={"text": "re", "reply_to": ids[0]}).json()
    assert reply["reply_to"] == ids[0]
    assert [p["text"] for p in c.get("/api/v1/moods/lobby/posts?limit=2").json()] == ["note 4", "re"]
    after = c.get(f"/api/v1/moods/lobby/posts?after_id={ids[1]}&limit=2").json()
    assert [p["id"] for p in after] == ids[2:4]
    before = c.get(f"/api/v1/moods/lobby/posts?before_id={ids[3]}&limit=2").json()
    assert [p["id"] for p in before] == ids[1:3]
    # The CLI sees exactly what the API wrote.
    assert "note 4" in served.cli("posts", "lobby").out
    s = c.post("/api/v1/moods/lobby/signins", json={"label": "phone"})
    assert s.status_code == 201 and s.json()["handle"] == "ada"


def test_a_mention_posted_through_the_api_is_recorded_as_the_cli_records_it(served, tmp_path):
    from support.agents import agent_command

    served.cli("agent", "add", "helper", "--command", agent_command(tmp_path, "reply"))
    tick(served, at=-60)  # the poller's first cycle: it listens from now on
    ada = served.person("ada", "full")
    post = served.client(ada).post("/api/v1/moods/lobby/posts", json={"text": "hi @helper"}).json()
    import json

    report = json.loads(tick(served, "--dry-run", "--json").out)
    assert [(w["agent"], w["kind"], w["tools"], w["answers"]) for w in report["wakes"]] == [
        ("helper", "mention", "full", [post["id"]])]


def test_refusals_without_a_token_or_with_a_revoked_one(sqlite_served):
    s = sqlite_served
    r = s.client().get("/api/v1/moods")
    refused(r, 401, "unauthorized")
    assert r.headers["www-authenticate"].startswith("Bearer")
    refused(s.client("mpt_not-a-token").get("/api/v1/moods"), 401, "unauthorized")
    ada = s.person("ada")
    assert s.client(ada).get("/api/v1/moods").status_code == 200
    s.cli("person", "token", "ada", "--revoke")
    refused(s.client(ada).post("/api/v1/moods/lobby/posts", json={"text": "hi"}), 401,
            "unauthorized")
    assert post_count(s) == 0


def test_trust_none_may_read_but_not_post(sqlite_served):
    s = sqlite_served
    c = s.client(s.person("nell", "none"))
    assert c.get("/api/v1/moods/lobby/posts").status_code == 200
    body = refused(c.post("/api/v1/moods/lobby/posts", json={"text": "hello"}), 403, "forbidden")
    assert "trust none" in body["detail"]
    assert post_count(s) == 0


def test_operator_routes_refuse_people_without_the_role(sqlite_served):
    s = sqlite_served
    look = s.client(s.person("lou", "look"))
    for method, path in [("POST", "/api/v1/scram"), ("DELETE", "/api/v1/scram"),
                         ("GET", "/api/v1/wakes"), ("GET", "/api/v1/wakes/1"),
                         ("GET", "/api/v1/status"), ("GET", "/api/v1/why?agent=x&mood=lobby")]:
        refused(look.request(method, path), 403, "forbidden")
    refused(look.post("/api/v1/moods", json={"slug": "den"}), 403, "forbidden")
    assert "emergency stop" not in s.cli("status").out.lower()


def test_bodies_over_the_cap_and_posts_over_the_limit_are_413(sqlite_served):
    from poller.text import MAX_POST_CHARS

    s = sqlite_served
    c = s.client(s.person("ada"))
    refused(c.post("/api/v1/moods/lobby/posts", json={"text": "x" * (MAX_POST_CHARS + 1)}), 413,
            "post_too_long")
    big = b'{"text": "' + b"y" * (600 * 1024) + b'"}'
    refused(c.post("/api/v1/moods/lobby/posts", content=big,
                   headers={"content-type": "application/json"}), 413, "body_too_large")

    def chunks():  # no Content-Length: the cap counts what streams in
        yield b'{"text": "'
        for _ in range(80):
            yield b"z" * 8192
        yield b'"}'

    refused(c.post("/api/v1/moods/lobby/posts", content=chunks(),
                   headers={"content-type": "application/json"}), 413, "body_too_large")
    assert post_count(s) == 0


def test_bad_input_is_a_json_error_and_writes_nothing(sqlite_served):
    s = sqlite_served
    c = s.client(s.person("ada", "full", operator=True))
    refused(c.post("/api/v1/moods/lobby/posts", content=b"{nope",
                   headers={"content-type": "application/json"}), 400, "bad_json")
    refused(c.post("/api/v1/moods/lobby/posts", content=b"text=hi",
                   headers={"content-type": "application/x-www-form-urlencoded"}), 415,
            "unsupported_media_type")
    refused(c.post("/api/v1/moods/lobby/posts", json=["hi"]), 400, "bad_json")
    refused(c.post("/api/v1/moods/lobby/posts", json={"text": "hi", "as": "bob"}), 400,
            "bad_request")
    refused(c.post("/api/v1/moods/lobby/posts", json={"text": 5}), 400, "bad_request")
    body = refused(c.post("/api/v1/moods/lobby/posts", json={"text": "   "}), 400, "bad_request")
    assert body["detail"] == "empty post: give the text to post"  # the CLI's own sentence
    refused(c.post("/api/v1/moods/lobby/posts", json={"text": "nul \x00"}), 400, "bad_request")
    refused(c.post("/api/v1/moods/lobby/posts", json={"text": "re", "reply_to": 999}), 404,
            "not_found")
    refused(c.post("/api/v1/moods/nowhere/posts", json={"text": "hi"}), 404, "not_found")
    refused(c.get("/api/v1/moods/lobby/posts?limit=0"), 400, "bad_request")
    refused(c.get("/api/v1/moods/lobby/posts?after_id=-1"), 400, "bad_request")
    refused(c.get("/api/v1/wakes?kind=dream"), 400, "bad_request")
    refused(c.get("/api/v1/wakes?since=yesterday"), 400, "bad_request")
    refused(c.get("/api/v1/wakes/abc"), 404, "not_found")
    refused(c.get("/api/v1/why?agent=helper"), 400, "bad_request")
    refused(c.get("/api/v1/nothing-here"), 404, "not_found")
    refused(c.put("/api/v1/moods"), 405, "method_not_allowed")
    refused(c.post("/api/v1/moods", json={"slug": "Not A Slug"}), 400, "bad_request")
    assert c.post("/api/v1/moods", json={"slug": "den"}).status_code == 201
    refused(c.post("/api/v1/moods", json={"slug": "den"}), 409, "conflict")
    assert post_count(s) == 0


def test_posting_is_rate_limited_per_token(sqlite_served):
    from poller.web.auth import RateLimit

    s = sqlite_served
    s.door.post_limit = RateLimit(3, clock=lambda: 100.0)  # the test's own clock: no time passes
    ada, bea = s.client(s.person("ada")), s.client(s.person("bea"))
    for n in range(3):
        assert ada.post("/api/v1/moods/lobby/posts", json={"text": f"{n}"}).status_code == 201
    r = ada.post("/api/v1/moods/lobby/posts", json={"text": "one too many"})
    refused(r, 429, "rate_limited")
    assert int(r.headers["retry-after"]) >= 1
    assert bea.post("/api/v1/moods/lobby/posts", json={"text": "mine"}).status_code == 201
    assert post_count(s) == 4


def test_the_default_rate_limit_is_30_posts_a_minute():
    from poller.web.app import Options
    from poller.web.auth import RateLimit, Refused

    assert Options().posts_per_minute == 30
    now = [0.0]
    limit = RateLimit(30, clock=lambda: now[0])
    for _ in range(30):
        limit.take("t")
    with pytest.raises(Refused) as exc:
        limit.take("t")
    assert exc.value.status == 429
    now[0] = 60.0  # the oldest falls out of the window
    limit.take("t")


def test_settings_by_the_rules_the_cli_enforces(served):
    s = served
    full = s.client(s.person("fay", "full"))
    look = s.client(s.person("lou", "look"))
    op = s.client(s.person("otto", "look", operator=True))
    got = full.get("/api/v1/settings?mood=lobby").json()
    assert got["discretion"] == {"value": "normal", "slot": "default", "until": None}
    r = full.put("/api/v1/settings", json={"key": "discretion", "value": "chatty", "mood": "lobby",
                                           "note": "lively room"})
    assert r.status_code == 200 and r.json()["new"] == "chatty" and r.json()["slot"] == "mood"
    assert full.get("/api/v1/settings?mood=lobby").json()["discretion"]["value"] == "chatty"
    assert "chatty" in s.cli("get", "discretion", "--mood", "lobby").out
    refused(full.put("/api/v1/settings", json={"key": "discretion", "value": "loud",
                                               "mood": "lobby"}), 400, "invalid_setting")
    refused(full.put("/api/v1/settings", json={"key": "colour", "value": "red", "mood": "lobby"}),
            400, "invalid_setting")
    refused(look.put("/api/v1/settings", json={"key": "verbosity", "value": "brief",
                                               "mood": "lobby"}), 403, "forbidden")
    refused(full.put("/api/v1/settings", json={"key": "verbosity", "value": "brief"}), 403,
            "forbidden")
    assert op.put("/api/v1/settings", json={"key": "verbosity", "value": "brief"}).json()[
        "slot"] == "global"
    refused(full.get("/api/v1/settings?agent=nobody"), 404, "not_found")
    # A Mood's rules instruct its agents and its limits spend money: operators' keys.
    for key, value in (("rules", "Obey only fay."), ("model", "opus"), ("parallel_turns", "64"),
                       ("max_wakes_per_hour", "600"), ("timezone", "Europe/Berlin")):
        refused(full.put("/api/v1/settings", json={"key": key, "value": value, "mood": "lobby"}),
                403, "forbidden")
        assert full.get("/api/v1/settings?mood=lobby").json()[key]["slot"] == "default"
    assert op.put("/api/v1/settings", json={"key": "rules", "value": "Be kind.",
                                            "mood": "lobby"}).status_code == 200


def test_agents_wakes_why_status_and_scram(served, tmp_path):
    from support.agents import agent_command

    s = served
    s.cli("agent", "add", "helper", "--command", agent_command(tmp_path, "reply"))
    tick(s, at=-60)
    op = s.client(s.person("otto", "full", operator=True))
    op.post("/api/v1/moods/lobby/posts", json={"text": "@helper status?"})
    tick(s, "--wait")

    agents = op.get("/api/v1/agents").json()
    assert [(a["handle"], a["state"]) for a in agents] == [("helper", "idle")]
    wakes = op.get("/api/v1/wakes?agent=helper&kind=mention&status=replied").json()
    assert len(wakes) == 1 and wakes[0]["mood"] == "lobby"
    assert op.get("/api/v1/wakes?kind=quiet").json() == []
    assert op.get("/api/v1/wakes?since=2100-01-01T00:00:00Z").json() == []
    wake = op.get(f"/api/v1/wakes/{wakes[0]['id']}").json()
    assert wake["text"].startswith("<mood-wake") and "@helper status?" in wake["text"]
    refused(op.get("/api/v1/wakes/99999"), 404, "not_found")
    why = op.get("/api/v1/why?agent=helper&mood=lobby").json()
    assert why["decisions"]["mention"]["code"] == "woke"
    assert op.get("/api/v1/status").json()["scram"] is None

    r = op.post("/api/v1/scram")
    assert r.json() == {"scram": True, "turns_ended": 0}
    assert op.get("/api/v1/status").json()["scram"]["by"] == "otto"
    assert "EMERGENCY STOP" in s.cli("status").out
    assert op.delete("/api/v1/scram").json() == {"scram": False, "lifted": True}
    assert op.get("/api/v1/status").json()["scram"] is None


def test_agents_show_who_is_at_work_and_where(sqlite_served, tmp_path):
    from support.agents import agent_command, open_gate

    s = sqlite_served
    gate = tmp_path / "gate"
    s.cli("agent", "add", "helper", "--command", agent_command(tmp_path, "gate", str(gate)))
    tick(s, at=-60)
    c = s.client(s.person("ada", "full"))
    c.post("/api/v1/moods/lobby/posts", json={"text": "@helper take your time"})
    tick(s)  # the turn runs in a runner process of its own
    try:
        helper = c.get("/api/v1/agents").json()[0]
        assert helper["state"] == "at work"
        assert helper["at_work"][0]["mood"] == "lobby" and helper["at_work"][0]["since"]
        assert helper["turns_today"] == 1 and helper["tokens_today"] > 0
    finally:
        open_gate(gate)


def test_nothing_secret_in_what_the_api_returns(sqlite_served, tmp_path):
    s = sqlite_served
    s.cli("agent", "add", "svc", "--url", "http://127.0.0.1:9/wake",
          "--header", "Authorization:Bearer ${AGENT_TOKEN}")
    token = s.person("otto", "full", operator=True)
    c = s.client(token)
    for path in ["/api/v1/agents", "/api/v1/me", "/api/v1/status", "/api/v1/moods"]:
        text = c.get(path).text
        assert token not in text and "AGENT_TOKEN" not in text and "127.0.0.1:9" not in text
    from poller.store import access

    with s.store.reading() as session:
        from poller.models import PersonToken
        import sqlalchemy as sa

        digests = list(session.scalars(sa.select(PersonToken.digest)))
    assert digests == [access.digest(token)] and token not in digests


class Documented:
    """Checks each answer against the schema the OpenAPI document gives for it."""

    def __init__(self, client):
        self.client = client
        self.doc = client.get("/api/v1/openapi.json").json()
        self.seen: set[tuple[str, str]] = set()

    def __call__(self, method: str, template: str, status: int, path: str | None = None,
                 **kwargs):
        import jsonschema

        r = self.client.request(method, path or template, **kwargs)
        assert r.status_code == status, r.text
        op = self.doc["paths"]["/api/v1" + template.split("?")[0].removeprefix("/api/v1")][
            method.lower()]
        assert str(status) in op["responses"], f"{method} {template} answers {status}, undocumented"
        schema = op["responses"][str(status)]["content"]["application/json"]["schema"]
        if "$ref" in schema:
            schema = self.doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
        jsonschema.validate(r.json(), schema)
        self.seen.add((method, template.split("?")[0]))
        return r.json()


def test_the_document_is_valid_openapi_and_every_answer_matches_it(served, tmp_path):
    from openapi_spec_validator import validate

    from support.agents import agent_command

    s = served
    s.cli("agent", "add", "helper", "--command", agent_command(tmp_path, "reply"))
    tick(s, at=-60)
    check = Documented(s.client(s.person("otto", "full", operator=True)))
    validate(check.doc)
    check("GET", "/api/v1/openapi.json", 200)
    check("GET", "/api/v1/me", 200)
    check("POST", "/api/v1/moods", 201, json={"slug": "den", "title": "The den"})
    check("GET", "/api/v1/moods", 200)
    check("GET", "/api/v1/moods/{slug}", 200, "/api/v1/moods/den")
    post = check("POST", "/api/v1/moods/{slug}/posts", 201, "/api/v1/moods/lobby/posts",
                 json={"text": "@helper hello"})
    check("GET", "/api/v1/moods/{slug}/posts", 200, "/api/v1/moods/lobby/posts?limit=5")
    hits = check("GET", "/api/v1/search", 200, "/api/v1/search?q=hello&mood=lobby")
    assert [h["id"] for h in hits] == [post["id"]]
    check("POST", "/api/v1/moods/{slug}/signins", 201, "/api/v1/moods/lobby/signins", json={})
    check("POST", "/api/v1/moods/{slug}/typing", 200, "/api/v1/moods/lobby/typing")
    check("PUT", "/api/v1/settings", 200, json={"key": "idle_after", "value": "600",
                                                "mood": "lobby"})
    check("GET", "/api/v1/settings", 200, "/api/v1/settings?mood=lobby&agent=helper")
    tick(s, "--wait")
    check("GET", "/api/v1/agents", 200)
    wakes = check("GET", "/api/v1/wakes", 200, "/api/v1/wakes?mood=lobby")
    assert wakes[0]["answers"] == [post["id"]]
    check("GET", "/api/v1/wakes/{wake_id}", 200, f"/api/v1/wakes/{wakes[0]['id']}")
    check("GET", "/api/v1/why", 200, "/api/v1/why?agent=helper&mood=lobby")
    check("GET", "/api/v1/status", 200)
    check("POST", "/api/v1/scram", 200)
    check("DELETE", "/api/v1/scram", 200)
    alarm = check("POST", "/api/v1/alarms", 201, json={"agent": "helper", "mood": "lobby",
                                                       "daily": "09:00", "tz": "UTC"})
    check("GET", "/api/v1/alarms", 200)
    check("DELETE", "/api/v1/alarms/{alarm_id}", 200, f"/api/v1/alarms/{alarm['id']}")
    check("GET", "/api/v1/checkin", 404)  # otto has no check-in agreement
    check("POST", "/api/v1/checkin/done", 404, json={"for": "2031-05-06 21:00"})
    check("POST", "/api/v1/checkin/accept", 400, json={"code": "no-such-code"})
    # Refusals are documented too, in the error shape.
    check("GET", "/api/v1/moods/{slug}", 404, "/api/v1/moods/nowhere")
    check("POST", "/api/v1/moods", 409, json={"slug": "den"})
    check("POST", "/api/v1/moods/{slug}/posts", 413, "/api/v1/moods/lobby/posts",
          json={"text": "x" * 70_000})
    documented = {(m.upper(), p.removeprefix("/api/v1")) for p, ops in check.doc["paths"].items()
                  for m in ops}
    answered = {(m, p.removeprefix("/api/v1")) for m, p in check.seen}
    assert documented - answered == {("GET", "/moods/{slug}/events")}  # the stream: its own tests


class _Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.at = 1000.0

    def __call__(self) -> float:
        return self.at


def _cli_process(url: str, *args: str):
    """The CLI as a process of its own (what an operator runs beside ``serve``)."""
    import os
    import subprocess
    import sys

    from support.machine import REPO

    return subprocess.run([sys.executable, "-m", "poller", "--db", url, *args], cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True,
                          text=True, timeout=120)


def test_a_token_is_read_again_after_a_change_here_at_once_and_from_elsewhere_within_the_ttl(
        served):
    from poller.store import access

    s, clock = served, _Clock()
    ada = s.person("ada", "full")
    seen = access.Identities(s.store, ttl=2.0, clock=clock)
    assert seen.identify(ada).trust == "full"
    s.store.set_trust("ada", "look")  # a change this process commits: forgotten at once
    assert seen.identify(ada).trust == "look"
    # Revoked by another process: still remembered until the TTL has passed, never after.
    r = _cli_process(s.cli.db_url, "person", "token", "ada", "--revoke")
    assert r.returncode == 0, r.stderr
    clock.at += 1.5
    assert seen.identify(ada) is not None
    clock.at += 0.6
    assert seen.identify(ada) is None
    # Unknown tokens are not remembered: one made elsewhere works on its first use.
    assert seen.identify("mpt_unknown") is None
    r = _cli_process(s.cli.db_url, "person", "token", "ada")
    assert r.returncode == 0, r.stderr
    fresh = r.stdout.split()[0]  # the token first, then what to do with it
    assert seen.identify(fresh).handle == "ada"


def test_a_token_revoked_through_the_server_itself_is_refused_on_the_next_request(sqlite_served):
    s = sqlite_served
    ada = s.person("ada", "full")
    admin = s.person("root", "full", operator=True)
    c = s.client(ada)
    assert c.get("/api/v1/moods").status_code == 200  # remembered from here on
    from poller.store import access

    access.revoke_tokens(s.store, "ada", T0)  # as the operators' page does, in this process
    refused(c.get("/api/v1/moods"), 401, "unauthorized")
    assert s.client(admin).get("/api/v1/moods").status_code == 200
