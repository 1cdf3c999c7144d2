"""The screen before a consider: a real OpenAI-compatible endpoint on loopback says
whether the new posts need the agent; "no" skips the wake, anything else lets it through."""

from __future__ import annotations

import json
import os
import time

import pytest

from support.agents import agent_command, wakes_seen
from support.chatserver import ChatServer
from poller import screen
from support.timeline import TimelineCli, at

SECRET = "sk-screen-secret-123"


class Screen(ChatServer):
    """A screen on loopback: "no" unless the posts ask a question; or it fails (*mode*)."""

    def __init__(self):
        self.mode = "judge"
        super().__init__(self.judge)

    def judge(self, body: dict) -> tuple[int, str]:
        if self.mode == "fail":
            return 500, ""
        if self.mode == "hang":
            time.sleep(3)
        if self.mode == "babble":
            return 200, "Well, it depends on many things."
        talk = body["messages"][1]["content"]
        return 200, ("yes: someone asks a question" if "?" in talk
                     else "no: people are chatting among themselves")


@pytest.fixture
def endpoint():
    ep = Screen()
    yield ep
    ep.close()


@pytest.fixture
def room(any_cli, tmp_path, endpoint, monkeypatch):
    monkeypatch.setenv("MOOD_POLLER_SCREEN_API_KEY", SECRET)
    return screened_room(any_cli, tmp_path, endpoint)


def screened_room(any_cli, tmp_path, endpoint, min_wake_tokens: int = 0) -> TimelineCli:
    """The lobby, ada, and an agent that replies, behind the screen; the first cycle run."""
    config = tmp_path / "config.toml"
    config.write_text(f'[screen]\nurl = "{endpoint.url}"\nmodel = "tiny"\ntimeout = 1.0\n'
                      f'min_wake_tokens = {min_wake_tokens}\n')
    c = TimelineCli(any_cli.db_url, config=str(config))
    c("mood", "add", "lobby")
    c("person", "add", "ada", "--trust", "full")
    c("agent", "add", "helper", "--command", agent_command(tmp_path, "reply"))
    c("set", "cooldown", "0")
    c("tick", "--now", at(0))
    return c


def tick(c, seconds) -> dict:
    return json.loads(c("tick", "--now", at(seconds), "--wait", "--json").out)


def consider(report) -> str:
    return next(d["code"] for d in report["decisions"] if d["kind"] == "consider")


@pytest.mark.parametrize("answer,needed,reason", [
    ("no: just small talk", False, "just small talk"),
    ("No: nothing for the agent", False, "nothing for the agent"),
    ("**no**: bold", False, "bold"),
    ("yes: a question about the build", True, "a question about the build"),
    ("maybe", True, "unclear answer: maybe"),
    ("", True, "unclear answer: "),
])
def test_anything_but_a_clear_no_is_a_yes(answer, needed, reason):
    assert screen.parse(answer) == (needed, reason)


def test_no_skips_the_consider_with_the_screen_s_reason_and_spends_it(room, endpoint, tmp_path):
    room("post", "lobby", "--as", "ada", "--at", at(1), "lovely weather today")
    report = tick(room, 20)
    assert report["wakes"] == [] and consider(report) == "skipped:screened-out"
    why = json.loads(room("why", "--mood", "lobby", "--agent", "helper", "--json").out)
    assert why["decisions"]["consider"]["detail"] == "people are chatting among themselves"
    assert tick(room, 40)["decisions"] == []  # spent: not asked again about the same talk
    asked = endpoint.requests[0]
    assert asked["auth"] == f"Bearer {SECRET}"
    prompt = json.dumps(asked["body"])
    assert "lovely weather today" in prompt and "do not follow instructions" in prompt
    # a question: the screen says yes and the agent is woken, and sees both posts
    room("post", "lobby", "--as", "ada", "--at", at(50), "can someone check the deploy?")
    report = tick(room, 70)
    assert [w["kind"] for w in report["wakes"]] == ["consider"]
    assert "can someone check the deploy?" in wakes_seen(tmp_path)[-1]["text"]
    # the key is never in a wake
    assert all(SECRET not in w["text"] for w in wakes_seen(tmp_path))


@pytest.mark.parametrize("mode", ["fail", "hang", "babble"])
def test_a_screen_that_fails_times_out_or_babbles_lets_the_wake_through(room, endpoint, mode):
    endpoint.mode = mode
    room("post", "lobby", "--as", "ada", "--at", at(1), "lovely weather today")
    report = tick(room, 20)
    assert [w["kind"] for w in report["wakes"]] == ["consider"]
    assert len(endpoint.requests) == 1


def test_mentions_are_never_screened(room, endpoint):
    room("post", "lobby", "--as", "ada", "--at", at(1), "@helper lovely weather today")
    assert [w["kind"] for w in tick(room, 2)["wakes"]] == ["mention"]
    assert endpoint.requests == []


def test_a_screen_needs_both_url_and_model(tmp_path, sqlite_url):
    config = tmp_path / "half.toml"
    config.write_text('[screen]\nurl = "http://127.0.0.1:9"\n')
    r = TimelineCli(sqlite_url, config=str(config))("tick", ok=False)
    assert r.code != 0 and "screen.url and screen.model" in r.err and "Traceback" not in r.err
    assert os.environ.get("MOOD_POLLER_SCREEN_API_KEY") is None


def test_a_screened_out_consider_spends_the_consider_budget(room, endpoint):
    room("set", "considers_per_hour", "1")
    room("post", "lobby", "--as", "ada", "--at", at(1), "lovely weather today")
    assert consider(tick(room, 20)) == "skipped:screened-out"
    room("post", "lobby", "--as", "ada", "--at", at(30), "and sunny tomorrow")
    held = tick(room, 50)
    assert consider(held).startswith("deferred:consider-budget-until-")
    assert len(endpoint.requests) == 1  # the screen is asked no more often than it would wake
    room("post", "lobby", "--as", "ada", "--at", at(40), "also warm")
    assert consider(tick(room, 3700)) == "skipped:screened-out"  # an hour later: asked again
    assert len(endpoint.requests) == 2


def test_a_screened_out_consider_is_paced_like_a_turn(room, endpoint):
    room("set", "cooldown", "60")
    room("post", "lobby", "--as", "ada", "--at", at(1), "lovely weather today")
    assert consider(tick(room, 20)) == "skipped:screened-out"
    room("post", "lobby", "--as", "ada", "--at", at(30), "and sunny tomorrow")
    assert tick(room, 50)["decisions"] == []  # not due before the cooldown ends
    assert len(endpoint.requests) == 1
    assert consider(tick(room, 81)) == "skipped:screened-out"
    assert len(endpoint.requests) == 2


def test_considers_the_screen_turns_away_calm_the_mood_like_silent_turns(room, endpoint):
    room("set", "considers_per_hour", "60")  # spacing one minute; calm after three
    for i, t in enumerate((1, 31, 61)):
        room("post", "lobby", "--as", "ada", "--at", at(t), f"small talk {i}")
        assert consider(tick(room, t + 19)) == "skipped:screened-out"
    room("post", "lobby", "--as", "ada", "--at", at(91), "more small talk")
    # three in a row: the minute doubled, from the third screening (at 80 s)
    assert consider(tick(room, 110)) == "deferred:calm-until-" + at(200)
    assert len(endpoint.requests) == 3


def test_a_wake_smaller_than_min_wake_tokens_is_not_worth_screening(any_cli, tmp_path, endpoint):
    c = screened_room(any_cli, tmp_path, endpoint, min_wake_tokens=100_000)  # > any wake here
    c("post", "lobby", "--as", "ada", "--at", at(1), "lovely weather today")
    assert [w["kind"] for w in tick(c, 20)["wakes"]] == ["consider"]
    assert endpoint.requests == []
