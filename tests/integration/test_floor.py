"""One floor per Mood: of several agents that could speak unasked at once, one does.

The law's floor rule and the initiative order as tables (pure), then two and
three agents through real turns on SQLite and PostgreSQL.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import json

import pytest

from support.agents import agent_command, open_gate, wakes_seen
from support.timeline import TimelineCli, at, since_t0
from support.waiting import wait_for
from support.floor import post, tick, wakes


# -- real turns ----------------------------------------------------------------------------------


@pytest.fixture
def crowd(any_cli, tmp_path):
    """One Mood, a person, three agents that reply; the first cycle run."""
    cli = TimelineCli(any_cli.db_url)
    cli("mood", "add", "lobby")
    cli("mood", "add", "den")
    cli("person", "add", "ada", "--trust", "full")
    for name in ("alpha", "beta", "gamma"):
        cli("agent", "add", name, "--command", agent_command(tmp_path, "reply"))
    cli("set", "cooldown", "0")
    cli("tick", "--now", at(0))
    return cli


def codes(report: dict, kind: str = "consider") -> dict[str, str]:
    return {d["agent"]: d["code"] for d in report["decisions"] if d["kind"] == kind}


def told(tmp_path) -> dict[str, str]:
    """What each agent's (last) wake said, as the agent read it."""
    return {w["MOOD_AGENT"]: w["text"] for w in wakes_seen(tmp_path)}


def test_three_agents_take_the_floor_in_turn_and_each_sees_the_replies_before(crowd, tmp_path):
    post(crowd, 1, "what do you all think of the new build?")
    first = tick(crowd, 20)
    assert [(w["agent"], w["kind"]) for w in first["wakes"]] == [("alpha", "consider")]
    assert codes(first) == {"alpha": "woke", "beta": "deferred:floor-taken-by-alpha",
                            "gamma": "deferred:floor-taken-by-alpha"}
    # alpha's reply makes the others due: beta next (it has not spoken, alpha just did)
    second = tick(crowd, 30)
    assert [(w["agent"], w["kind"]) for w in second["wakes"]] == [("beta", "consider")]
    assert codes(second)["gamma"] == "deferred:floor-taken-by-beta"
    third = tick(crowd, 40)
    assert [(w["agent"], w["kind"]) for w in third["wakes"]] == [("gamma", "consider")]
    seen = told(tmp_path)
    assert "alpha answering consider" in seen["beta"]
    assert "alpha answering consider" in seen["gamma"]
    assert "beta answering consider" in seen["gamma"]
    assert "answering" not in seen["alpha"]
    why = json.loads(crowd("why", "--mood", "lobby", "--agent", "gamma", "--json").out)
    assert why["decisions"]["consider"]["code"] == "woke"


def test_one_agent_per_mood_is_not_subject_to_anyone_elses_floor(crowd):
    crowd("set", "listening", "mentions", "--mood", "den")
    crowd("set", "listening", "on", "--mood", "den", "--agent", "beta")
    post(crowd, 1, "lobby talk")
    post(crowd, 1, "den talk", mood="den")
    report = tick(crowd, 20)
    # one floor per Mood: alpha in the lobby, beta alone in the den, at once
    assert sorted((w["agent"], w["mood"]) for w in report["wakes"]) == [
        ("alpha", "lobby"), ("beta", "den")]


def test_mentions_are_never_subject_to_the_floor(crowd):
    post(crowd, 1, "general chatter")
    first = tick(crowd, 20)
    assert [w["agent"] for w in first["wakes"]] == ["alpha"]
    post(crowd, 21, "@gamma what do you say?")
    second = tick(crowd, 22)
    got = sorted((w["agent"], w["kind"]) for w in second["wakes"])
    assert ("gamma", "mention") in got


def test_an_unprompted_turn_in_flight_holds_the_floor_across_cycles(any_cli, tmp_path):
    cli = TimelineCli(any_cli.db_url)
    gate = tmp_path / "gate"
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "alpha", "--command", agent_command(tmp_path, "gate", str(gate)))
    cli("agent", "add", "beta", "--command", agent_command(tmp_path, "reply"))
    cli("set", "cooldown", "0")
    cli("tick", "--now", at(0))
    post(cli, 1, "first thoughts?")
    first = json.loads(cli("tick", "--now", at(20), "--json").out)  # alpha's turn stays open
    assert [w["agent"] for w in first["wakes"]] == ["alpha"]
    assert codes(first) == {"alpha": "woke", "beta": "deferred:floor-taken-by-alpha"}
    post(cli, 25, "and more while alpha thinks")
    second = json.loads(cli("tick", "--now", at(40), "--json").out)
    assert second["wakes"] == []
    assert codes(second) == {"alpha": "deferred:busy", "beta": "deferred:floor-taken-by-alpha"}
    why = json.loads(cli("why", "--mood", "lobby", "--agent", "beta", "--json").out)
    assert why["decisions"]["consider"]["code"] == "deferred:floor-taken-by-alpha"
    floor = why["floor"]
    assert floor["holder"] == "alpha"
    # as it stands now: alpha's turn in flight is load, so beta (equally ready) is ahead
    assert [(s["agent"], s["score"], s["load"]) for s in floor["order"]] == [
        ("beta", 12.0, 0), ("alpha", 11.0, 1)]
    said = cli("why", "--mood", "lobby", "--agent", "beta").out
    assert "the floor is @alpha's; initiative order now: @beta 12, @alpha 11" in said
    open_gate(gate)
    wait_for(lambda: all(w["status"] not in ("pending", "running") for w in wakes(cli)),
             what="alpha's turn to end")
    third = tick(cli, 60)
    assert [(w["agent"], w["kind"]) for w in third["wakes"]] == [("beta", "consider")]
    assert "done when let go" in told(tmp_path)["beta"]  # alpha's reply is in beta's catch-up


# Recorded by running this scenario on b560f73, the commit before the floor existed.
BEFORE_THE_FLOOR = [
    (0, []),
    (5, []),
    (12, [('bot', 'lobby', 'consider', 'woke')]),
    (30, [('bot', 'lobby', 'consider', 'woke')]),
    (80, []),
    (82, [('bot', 'lobby', 'mention', 'woke')]),
    (101, [('bot', 'lobby', 'consider', 'deferred:consider-budget-until-2026-11-30T13:00:12Z')]),
    (200, [('bot', 'lobby', 'consider', 'deferred:consider-budget-until-2026-11-30T13:00:12Z')]),
    (215, [('bot', 'lobby', 'consider', 'deferred:consider-budget-until-2026-11-30T13:00:12Z')]),
    (300, [('bot', 'lobby', 'consider', 'deferred:consider-budget-until-2026-11-30T13:00:12Z')]),
    (302, [('bot', 'lobby', 'arrival', 'woke')]),
    (400, []),
    (1400, [('bot', 'lobby', 'quiet', 'woke')]),
    (2200, [('bot', 'lobby', 'quiet', 'woke')]),
    (4000, [('bot', 'lobby', 'quiet', 'woke')]),
    (4002, [('bot', 'lobby', 'mention', 'woke')]),
]


def test_with_one_agent_the_decisions_are_the_same_as_before_the_floor(cli, tmp_path):
    cli = TimelineCli(cli.db_url)
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("person", "add", "cy", "--trust", "look")
    cli("agent", "add", "bot", "--command", agent_command(tmp_path, "reply"))
    cli("set", "considers_per_hour", "2")
    cli("set", "idle_after", "600")
    cli("set", "cooldown", "0")
    out = []

    def step(s):
        out.append((s, [(d["agent"], d["mood"], d["kind"], d["code"])
                        for d in tick(cli, s)["decisions"]]))

    step(0)
    post(cli, 1, "hello there"); step(5); step(12)  # noqa: E702
    post(cli, 13, "more chatter"); step(30); step(80)  # noqa: E702
    post(cli, 81, "@bot a question"); step(82)  # noqa: E702
    post(cli, 90, "and chatter again"); step(101); step(200)  # noqa: E702
    post(cli, 201, "a third bit"); step(215); step(300)  # noqa: E702
    cli("signin", "cy", "--mood", "lobby", "--at", at(301)); step(302); step(400)  # noqa: E702
    step(1400); step(2200); step(4000)  # noqa: E702
    post(cli, 4001, "@bot again"); step(4002)  # noqa: E702
    assert out == BEFORE_THE_FLOOR


# -- status: each agent inspectable (issue 16, item 4) -----------------------------------


def test_status_json_gives_each_agent_its_load_next_ready_times_last_turn_and_why(any_cli, tmp_path):
    import json as json_mod

    from support.agents import agent_command, open_gate
    from support.timeline import TimelineCli, at, two_moods
    from support.waiting import wait_for

    c = two_moods(TimelineCli(any_cli.db_url))
    gate = tmp_path / "gate"
    c("agent", "add", "slow", "--command", agent_command(tmp_path, "gate", str(gate)))
    (tmp_path / "q").mkdir()
    c("agent", "add", "quick", "--command", agent_command(tmp_path / "q", "reply"))
    c("tick", "--now", at(0), "--wait")
    c("post", "lobby", "--as", "ada", "--at", at(1), "@quick hello")
    c("tick", "--now", at(2), "--wait")
    c("post", "attic", "--as", "ada", "--at", at(3), "@slow take your time")
    c("tick", "--now", at(4))  # slow's turn starts and stays open until the gate opens
    try:
        def slow_running():
            st = json_mod.loads(c("status", "--json", "--now", at(5)).out)
            return st if any(a["handle"] == "slow" and a["load"] == 1 for a in st["agents"]) else None

        st = wait_for(slow_running, what="slow's turn to be at work")
        agents = {a["handle"]: a for a in st["agents"]}
        assert agents["slow"]["state"] == "at work" and agents["slow"]["at_work"] == ["attic"]
        quick = agents["quick"]
        assert quick["load"] == 0 and quick["state"] == "idle"
        assert quick["last_turn"]["mood"] == "lobby" and quick["last_turn"]["status"] == "replied"
        assert quick["why"]["outcome"] in {"wake", "defer", "skip", "hold"}
        assert all(set(n) == {"mood", "at"} for n in quick["next_ready"])
        assert [n["at"] for n in quick["next_ready"]] == sorted(n["at"] for n in quick["next_ready"])
        assert agents["slow"]["last_turn"] is None  # none has ended yet
    finally:
        open_gate(gate)

        def slow_done():
            st = json_mod.loads(c("status", "--json", "--now", at(6)).out)
            return not st["in_flight"]

        wait_for(slow_done, what="slow's turn to end")  # no runner outlives the test


# -- calm slows, pressure quickens (real turns) --------------------------------------------------


def test_silent_unprompted_turns_slow_a_moods_considers_until_an_agent_is_named(any_cli, tmp_path):
    cli = TimelineCli(any_cli.db_url)
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    for name in ("alpha", "beta", "gamma"):
        cli("agent", "add", name, "--command", agent_command(tmp_path, "silent"))
    cli("set", "cooldown", "0")
    cli("tick", "--now", at(0))
    post(cli, 1, "people talking among themselves")
    # the floor passes along: three silent considers in a row
    assert [w["agent"] for w in tick(cli, 20)["wakes"]] == ["alpha"]
    assert [w["agent"] for w in tick(cli, 30)["wakes"]] == ["beta"]
    assert [w["agent"] for w in tick(cli, 40)["wakes"]] == ["gamma"]
    post(cli, 60, "more of the same")
    slowed = tick(cli, 80)
    assert slowed["wakes"] == []
    # three in a row: the 10-minute spacing doubled, from the end of gamma's silent turn
    (code,) = set(codes(slowed).values())
    assert code.startswith("deferred:calm-until-")
    until = since_t0(code.removeprefix("deferred:calm-until-"))
    assert 40 + 20 * 60 <= until < 80 + 20 * 60
    why = json.loads(cli("why", "--mood", "lobby", "--agent", "alpha", "--json").out)
    assert why["decisions"]["consider"]["code"].startswith("deferred:calm-until-")
    # the spacing passed: the Mood considers again
    assert len(tick(cli, 20 * 60 + 41)["wakes"]) == 1
    # pressure: a person names an agent; its turn ends the calm (even silent)
    post(cli, 1300, "@beta anything?")
    assert [w["kind"] for w in tick(cli, 1301)["wakes"]] == ["mention"]
    post(cli, 1320, "talk again")
    assert [w["agent"] for w in tick(cli, 1340)["wakes"]] != []
