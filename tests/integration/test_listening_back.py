"""When a consider comes: posts said while an agent listened only for mentions (or not
at all) are considered when its listening is back on, and a consider waits while the
agent is at work in another Mood."""

from __future__ import annotations

import json

import pytest

from support.agents import agent_command, wakes_seen
from support.timeline import TimelineCli, at, two_moods


@pytest.fixture
def room(any_cli, tmp_path):
    c = TimelineCli(any_cli.db_url)
    c("mood", "add", "lobby")
    c("person", "add", "ada", "--trust", "full")
    c("person", "add", "bob", "--trust", "full")
    c("set", "cooldown", "0")
    c("agent", "add", "helper", "--command", agent_command(tmp_path, "reply"))
    c("tick", "--now", at(0), "--wait")
    return c


def wakes(c) -> list[dict]:
    return sorted(json.loads(c("wakes", "--json").out), key=lambda w: w["id"])


@pytest.mark.parametrize("away", ["mentions", "off"])
def test_what_was_said_while_not_listening_is_considered_when_listening_is_back(
        room, tmp_path, away):
    c = room
    c("set", "listening", away, "--agent", "helper", "--mood", "lobby")
    c("post", "lobby", "--as", "ada", "--at", at(10), "the deploy is stuck again")
    c("post", "lobby", "--as", "bob", "--at", at(11), "same here, since noon")
    c("tick", "--now", at(30), "--wait")
    c("tick", "--now", at(60), "--wait")
    assert wakes(c) == []  # nothing unprompted while it listened only for mentions, or not at all
    c.now = 100
    c("set", "listening", "on", "--agent", "helper", "--mood", "lobby")
    c("tick", "--now", at(101), "--wait")  # the switch is seen: a consider comes due
    why = c("why", "helper", "lobby", "--now", at(102)).out
    assert "consider" in why
    c("tick", "--now", at(101 + 10 + 1), "--wait")  # consider_after (10 s) from then
    (w,) = wakes(c)
    assert w["kind"] == "consider"
    (seen,) = wakes_seen(tmp_path)
    assert "the deploy is stuck again" in seen["text"] and "same here, since noon" in seen["text"]


@pytest.mark.parametrize("lapse", [False, True])
def test_the_consider_comes_consider_after_from_the_switch_not_from_the_next_cycle(
        room, tmp_path, lapse):
    c = room
    if lapse:  # listening back on because "mentions until 100" lapsed
        c("set", "listening", "mentions", "--until", at(100), "--agent", "helper", "--mood", "lobby")
    else:
        c("set", "listening", "mentions", "--agent", "helper", "--mood", "lobby")
    c("post", "lobby", "--as", "ada", "--at", at(10), "the deploy is stuck again")
    c("post", "lobby", "--as", "bob", "--at", at(11), "same here, since noon")
    c("tick", "--now", at(30), "--wait")
    assert wakes(c) == []
    if not lapse:
        c.now = 100
        c("set", "listening", "on", "--agent", "helper", "--mood", "lobby")
    # The first cycle after the switch comes a minute later: consider_after (10 s) from
    # the switch has passed, so the consider is woken in this very cycle.
    c("tick", "--now", at(160), "--wait")
    (w,) = wakes(c)
    assert w["kind"] == "consider"
    (seen,) = wakes_seen(tmp_path)
    assert "the deploy is stuck again" in seen["text"] and "same here, since noon" in seen["text"]


def test_listening_on_all_along_considers_as_before(room, tmp_path):
    c = room
    c("post", "lobby", "--as", "ada", "--at", at(10), "the deploy is stuck again")
    c("tick", "--now", at(30), "--wait")
    assert [w["kind"] for w in wakes(c)] == ["consider"]


def test_a_consider_waits_while_the_agent_is_at_work_in_another_mood(any_cli, tmp_path):
    from support.agents import open_gate
    from support.waiting import wait_for

    c = two_moods(TimelineCli(any_cli.db_url))
    gate = tmp_path / "gate"
    c("agent", "add", "helper", "--command", agent_command(tmp_path, "gate", str(gate)))
    c("tick", "--now", at(0), "--wait")
    c("post", "attic", "--as", "ada", "--at", at(1), "@helper a long job, please")
    c("tick", "--now", at(2))  # its turn in the attic starts and stays open
    wait_for(lambda: any(w["status"] == "running" for w in wakes(c)), what="the attic turn to run")
    c("post", "lobby", "--as", "ada", "--at", at(3), "meanwhile in the lobby")
    c("tick", "--now", at(20))  # the lobby talk has settled: a consider would be due
    assert "busy-elsewhere" in c("why", "helper", "lobby", "--now", at(21)).out
    assert [w["kind"] for w in wakes(c)] == ["mention"]
    open_gate(gate)
    wait_for(lambda: all(w["status"] != "running" for w in wakes(c)), what="the attic turn to end")
    c("tick", "--now", at(60), "--wait")
    assert [w["kind"] for w in wakes(c)] == ["mention", "consider"]
