"""The live stream: GET /api/v1/moods/{slug}/events (Server-Sent Events) over uvicorn,
read by a real HTTP client: posts, turns starting and ending, holds, resuming."""

from __future__ import annotations

import datetime as dt

import pytest

from support import webserver
from support.webserver import T0, Events


@pytest.fixture
def served(cli):
    s = webserver.start(cli.db_url, keepalive=0.2)
    s.cli = cli
    cli("mood", "add", "lobby")
    yield s
    s.stop()


def tick(s, *args, at: float = 1):
    return s.cli("--now", (T0 + dt.timedelta(seconds=at)).isoformat(), "tick", *args)


def test_a_comment_on_connect_then_new_posts_and_keep_alives(served):
    c = served.client(served.person("ada"))
    ev = Events(c, "/api/v1/moods/lobby/events")
    try:
        ev.wait(lambda e: e.items and e.items[0] == {"comment": "connected"}, "the opening comment")
        post = c.post("/api/v1/moods/lobby/posts", json={"text": "<b>hi</b> all"}).json()
        got = ev.wait(lambda e: e.of("post"), "the post event")[0]
        assert got["data"]["id"] == post["id"] and got["data"]["text"] == "<b>hi</b> all"
        assert got["id"].startswith(f"{post['id']}.")
        ev.wait(lambda e: {"comment": "keep-alive"} in e.items, "a keep-alive comment")
        assert ev.status == 200
    finally:
        ev.close()


def test_resuming_with_last_event_id_misses_nothing_and_repeats_nothing(served):
    c = served.client(served.person("ada"))
    ids = [c.post("/api/v1/moods/lobby/posts", json={"text": f"p{n}"}).json()["id"]
           for n in range(4)]
    first = Events(c, "/api/v1/moods/lobby/events?after=0.0")
    try:
        first.wait(lambda e: len(e.of("post")) == 4, "the four posts")
        cursor = first.of("post")[1]["id"]  # the client saw two, then lost the connection
    finally:
        first.close()
    again = Events(c, "/api/v1/moods/lobby/events", headers={"Last-Event-ID": cursor})
    try:
        c.post("/api/v1/moods/lobby/posts", json={"text": "p4"})
        again.wait(lambda e: len(e.of("post")) == 3, "the rest and the new post")
        assert [e["data"]["text"] for e in again.of("post")] == ["p2", "p3", "p4"]
        assert [e["data"]["id"] for e in again.of("post")][:2] == ids[2:]
    finally:
        again.close()


def test_a_bad_event_id_an_unknown_mood_and_no_token_are_refused(served):
    c = served.client(served.person("ada"))
    r = c.get("/api/v1/moods/lobby/events", headers={"Last-Event-ID": "x.y"})
    assert r.status_code == 400 and r.json()["error"] == "bad_request"
    r = c.get("/api/v1/moods/nowhere/events")
    assert r.status_code == 404 and r.json()["error"] == "not_found"
    r = served.client().get("/api/v1/moods/lobby/events")
    assert r.status_code == 401 and r.json()["error"] == "unauthorized"


def test_an_agent_at_work_its_reply_and_the_turn_ending(served, tmp_path):
    from support.agents import agent_command, open_gate

    gate = tmp_path / "gate"
    served.cli("agent", "add", "helper", "--command", agent_command(tmp_path, "gate", str(gate)))
    tick(served, at=-60)
    c = served.client(served.person("ada", "full"))
    ev = Events(c, "/api/v1/moods/lobby/events")
    try:
        ev.wait(lambda e: e.of("working"), "the first working snapshot")
        assert ev.of("working")[0]["data"] == [] and ev.of("holds")[0]["data"] == []
        c.post("/api/v1/moods/lobby/posts", json={"text": "@helper please"})
        tick(served)  # starts the turn in a runner process
        started = ev.wait(lambda e: e.of("turn_started"), "the turn to start")[0]["data"]
        assert started["agent"] == "helper" and started["kind"] == "mention"
        ev.wait(lambda e: e.of("working")[-1]["data"], "helper shown at work")
        assert ev.of("working")[-1]["data"][0]["agent"] == "helper"
        open_gate(gate)
        ended = ev.wait(lambda e: e.of("turn_ended"), "the turn to end")[0]["data"]
        assert ended["wake_id"] == started["wake_id"] and ended["status"] == "replied"
        ev.wait(lambda e: not e.of("working")[-1]["data"], "nobody at work")
        posts = [p["data"] for p in ev.of("post")]
        assert [(p["sender"], p["sender_kind"]) for p in posts] == [
            ("ada", "person"), ("helper", "agent")]
        # The turn started before its reply was posted, and ended after.
        order = [i.get("event") for i in ev.items if i.get("event") in
                 ("turn_started", "turn_ended") or (i.get("event") == "post"
                                                    and i["data"]["sender"] == "helper")]
        assert order == ["turn_started", "post", "turn_ended"]
    finally:
        open_gate(gate)
        ev.close()


def test_holds_are_announced(served, tmp_path):
    from support.agents import agent_command

    served.cli("agent", "add", "helper", "--command", agent_command(tmp_path, "reply"))
    served.cli("set", "listening", "off", "--agent", "helper")
    tick(served, at=-60)
    c = served.client(served.person("ada", "full"))
    ev = Events(c, "/api/v1/moods/lobby/events")
    try:
        ev.wait(lambda e: e.of("holds"), "the first holds snapshot")
        c.post("/api/v1/moods/lobby/posts", json={"text": "@helper are you there?"})
        tick(served)
        held = ev.wait(lambda e: e.of("holds")[-1]["data"], "the hold")
        assert held == [{"agent": "helper", "reason": held[0]["reason"], "since": held[0]["since"],
                         "owed": 1}]
        assert "listening" in held[0]["reason"]
    finally:
        ev.close()


def test_a_stream_hears_only_its_own_mood(served):
    served.cli("mood", "add", "den")
    c = served.client(served.person("ada"))
    ev = Events(c, "/api/v1/moods/lobby/events")
    try:
        ev.wait(lambda e: e.of("working"), "the stream to open")
        c.post("/api/v1/moods/den/posts", json={"text": "elsewhere"})
        c.post("/api/v1/moods/lobby/posts", json={"text": "here"})
        ev.wait(lambda e: e.of("post"), "the lobby's post")
        assert [p["data"]["text"] for p in ev.of("post")] == ["here"]
    finally:
        ev.close()


def test_the_feed_wakes_only_the_moods_something_touched():
    from poller.web.events import Feed

    feed = Feed(store=None)
    feed.version = 3
    feed.touched = {2: {7}, 3: {9}}
    assert feed.moved(9, 2) and not feed.moved(7, 2) and feed.moved(7, 1)
    assert not feed.moved(9, 3)  # nothing since
    assert feed.moved(5, 0)  # too far behind to tell: look again
    feed.version, feed.touched[4] = 4, None  # a first look after nobody listened: all look
    assert feed.moved(7, 3) and feed.moved(123, 3)


def test_revoking_the_token_ends_an_open_stream(served):
    ada = served.person("ada")
    c = served.client(ada)
    ev = Events(c, "/api/v1/moods/lobby/events")
    try:
        ev.wait(lambda e: e.items and e.items[0] == {"comment": "connected"}, "the opening comment")
        served.cli("person", "token", "ada", "--revoke")
        bob = served.client(served.person("bob"))
        bob.post("/api/v1/moods/lobby/posts", json={"text": "after the revocation"})
        ev._thread.join(120)
        assert not ev._thread.is_alive()  # the server ended the stream
        assert not any(e["data"]["text"] == "after the revocation" for e in ev.of("post"))
    finally:
        ev.close()
