"""Someone typing holds a Mood's considers back: the CLI, the API and the law."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from support import webserver
from support.agents import agent_command
from poller import law, settings
from support.timeline import T0, TimelineCli, at

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)
DEFAULTS = {k: v.default for k, v in settings.KEYS.items()}


@pytest.mark.parametrize("kind,ago_s,code", [
    ("consider", 0, "deferred:typing-until-2026-11-30T12:00:15Z"),
    ("consider", 14, "deferred:typing-until-2026-11-30T12:00:01Z"),
    ("consider", 15, "woke"),
    ("mention", 0, "woke"),   # a mention is owed: never kept waiting by typing
    ("quiet", 0, "woke"),
    ("arrival", 0, "woke"),
])
def test_the_law_defers_only_considers_while_someone_types(kind, ago_s, code):
    f = law.Facts(kind=kind, now=NOW, settings=dict(DEFAULTS),
                  typing_at=NOW - dt.timedelta(seconds=ago_s))
    assert law.decide(f).code == code


@pytest.fixture
def room(any_cli, tmp_path):
    cli = TimelineCli(any_cli.db_url)
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("person", "add", "bob", "--trust", "full")
    cli("agent", "add", "alpha", "--command", agent_command(tmp_path, "reply"))
    cli("tick", "--now", at(0))
    return cli


def tick(cli, seconds) -> dict:
    return json.loads(cli("tick", "--now", at(seconds), "--wait", "--json").out)


def consider_code(report: dict) -> str:
    return next(d["code"] for d in report["decisions"] if d["kind"] == "consider")


def test_a_consider_waits_fifteen_seconds_after_the_newest_typing_signal(room):
    room("post", "lobby", "--as", "ada", "--at", at(1), "so here is my plan")
    room("typing", "lobby", "--as", "bob", "--now", at(9))
    room("typing", "lobby", "--as", "bob", "--now", at(12))
    room("typing", "lobby", "--as", "bob", "--now", at(10))  # late, older: changes nothing
    held = tick(room, 20)
    assert held["wakes"] == []
    assert consider_code(held) == "deferred:typing-until-" + at(27)
    why = json.loads(room("why", "--mood", "lobby", "--agent", "alpha", "--json").out)
    assert why["decisions"]["consider"]["code"] == "deferred:typing-until-" + at(27)
    assert [w["kind"] for w in tick(room, 28)["wakes"]] == ["consider"]


def test_typing_never_keeps_a_mention_waiting(room):
    room("post", "lobby", "--as", "ada", "--at", at(1), "@alpha a question")
    room("typing", "lobby", "--as", "bob", "--now", at(2))
    assert [w["kind"] for w in tick(room, 3)["wakes"]] == ["mention"]


def test_typing_names_a_known_mood_and_participant(room):
    bad = room("typing", "nowhere", "--as", "ada", ok=False)
    assert bad.code != 0 and "nowhere" in bad.err and "Traceback" not in bad.err
    bad = room("typing", "lobby", "--as", "nobody", ok=False)
    assert bad.code != 0 and "nobody" in bad.err and "Traceback" not in bad.err


def test_the_api_signals_typing_as_the_token_s_person(any_cli, tmp_path):
    from poller.clock import Clock

    s = webserver.start(any_cli.db_url, clock=Clock.at(T0))
    try:
        cli = TimelineCli(any_cli.db_url)
        cli("mood", "add", "lobby")
        cli("agent", "add", "alpha", "--command", agent_command(tmp_path, "reply"))
        token = s.person("ada", "full")
        cli("tick", "--now", at(-60))
        cli("post", "lobby", "--as", "ada", "--at", at(-30), "thinking out loud")
        r = s.client(token).post("/api/v1/moods/lobby/typing")
        assert r.status_code == 200, r.text
        assert r.json()["handle"] == "ada"
        report = json.loads(cli("tick", "--now", at(5), "--json").out)
        assert consider_code(report) == "deferred:typing-until-" + at(15)
        assert s.client(token).post("/api/v1/moods/nowhere/typing").status_code == 404
    finally:
        s.stop()
