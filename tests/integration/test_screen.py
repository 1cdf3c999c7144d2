"""The screen before a consider: a real OpenAI-compatible endpoint on loopback says
whether the new posts need the agent; "no" skips the wake, anything else lets it through.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import json

import pytest

from support.agents import agent_command, wakes_seen
from support.timeline import TimelineCli, at
from support.screen import consider, tick
from support.screen import endpoint  # noqa: F401  (fixtures)

SECRET = "sk-screen-secret-123"


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
    # A hung screen is given up on by the poller before the server's thread may have
    # recorded the request: wait for the record, on a busy machine too.
    from support.waiting import wait_for

    wait_for(lambda: len(endpoint.requests) >= 1, what="the screen's request recorded")
    assert len(endpoint.requests) == 1


def test_mentions_are_never_screened(room, endpoint):
    room("post", "lobby", "--as", "ada", "--at", at(1), "@helper lovely weather today")
    assert [w["kind"] for w in tick(room, 2)["wakes"]] == ["mention"]
    assert endpoint.requests == []


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
