"""One floor per Mood: of several agents that could speak unasked at once, one does.

The law's floor rule and the initiative order as tables (pure), then two and
three agents through real turns on SQLite and PostgreSQL.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

from support.agents import agent_command, open_gate, wakes_seen
from poller import law, settings
from support.timeline import TimelineCli, at, since_t0
from support.waiting import wait_for

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)
DEFAULTS = {k: spec.default for k, spec in settings.KEYS.items()}


def facts(kind: str, **kw) -> law.Facts:
    return law.Facts(kind=kind, now=NOW, settings={**DEFAULTS, **kw.pop("settings", {})}, **kw)


# -- the law: the floor --------------------------------------------------------------------


@pytest.mark.parametrize("kind, floor_holder, extra, code", [
    ("consider", "alpha", {}, "deferred:floor-taken-by-alpha"),
    ("quiet", "alpha", {}, "deferred:floor-taken-by-alpha"),
    ("arrival", "alpha", {}, "deferred:floor-taken-by-alpha"),
    ("mention", "alpha", {}, "woke"),  # a mention is owed: never subject to the floor
    ("cut-off", "alpha", {}, "woke"),  # nor the follow-up of a turn cut off
    ("consider", None, {}, "woke"),  # no floor taken: as before
    ("quiet", None, {}, "woke"),
    # The floor is the last rule: an agent that could not speak anyway says why.
    ("consider", "alpha", {"settings": {"considers_per_hour": 0}}, "skipped:considers-off"),
    ("consider", "alpha", {"cooldown_until": NOW + dt.timedelta(minutes=1)},
     "deferred:cooldown-until-2026-11-30T12:01:00Z"),
    ("consider", "alpha", {"busy_here": True}, "deferred:busy"),
    ("quiet", "alpha", {"person_recent": False}, "skipped:no-person-recently"),
    ("arrival", "alpha", {"arrival_is_self": True}, "skipped:arrival-is-self"),
    ("arrival", None, {"arrival_untrusted": True}, "skipped:arrival-untrusted"),
    ("mention", "alpha", {"busy_here": True}, "held:busy"),
])
def test_the_floor_table(kind, floor_holder, extra, code):
    assert law.decide(facts(kind, floor_holder=floor_holder, **extra)).code == code


def test_a_long_handle_still_fits_the_reason_column():
    d = law.decide(facts("consider", floor_holder="a" * 64))
    assert len(d.reason) == law.REASON_MAX and d.reason.startswith("floor-taken-by-aaa")


# -- the initiative order --------------------------------------------------------------------


def ago(hours: float) -> dt.datetime:
    return NOW - dt.timedelta(hours=hours)


C = law.Contender


@pytest.mark.parametrize("contenders, order", [
    # equal in everything: the lower agent id first, whatever order they come in
    ([C(3, "c"), C(1, "a"), C(2, "b")], ["a", "b", "c"]),
    # readiness: the one that spoke longest ago (or never) first
    ([C(1, "a", last_spoke=ago(0.1)), C(2, "b", last_spoke=ago(2)), C(3, "c")], ["c", "b", "a"]),
    # readiness stops at the cap: 13 h and never are equal, then by id
    ([C(2, "b", last_spoke=ago(13)), C(1, "a")], ["a", "b"]),
    # speed multiplies readiness
    ([C(1, "a", last_spoke=ago(1)), C(2, "b", speed=3.0, last_spoke=ago(1))], ["b", "a"]),
    # heat adds: the Mood's own agent runs hot even having just spoken
    ([C(1, "a"), C(2, "b", heat=20.0, last_spoke=ago(0))], ["b", "a"]),
    # load takes away: busy elsewhere yields to an idle one
    ([C(1, "a", load=2, last_spoke=ago(1)), C(2, "b", last_spoke=ago(1))], ["b", "a"]),
    # speed 0: only heat and load count
    ([C(1, "a", speed=0.0), C(2, "b", speed=0.0, heat=0.5)], ["b", "a"]),
])
def test_the_initiative_table(contenders, order):
    assert [s.handle for s in law.initiative(contenders, NOW)] == order


def test_a_standing_shows_what_its_score_is_made_of():
    (s,) = law.initiative([C(7, "a", speed=2.0, heat=1.5, last_spoke=ago(3), load=1)], NOW)
    assert (s.score, s.readiness_h, s.speed, s.heat, s.load) == (6.5, 3.0, 2.0, 1.5, 1)


@pytest.mark.parametrize("key, raw, ok", [
    ("initiative_speed", "2.5", 2.5), ("initiative_speed", "0", 0.0), ("heat", "-3", -3.0),
    ("initiative_speed", "-1", None), ("initiative_speed", "nan", None), ("heat", "hot", None),
    ("heat", "101", None),
])
def test_the_initiative_settings(key, raw, ok):
    from poller import errors

    if ok is None:
        with pytest.raises(errors.InvalidSetting):
            settings.validate(key, raw)
    else:
        assert settings.validate(key, raw) == ok


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


def tick(cli, seconds, *extra) -> dict:
    return json.loads(cli("tick", "--now", at(seconds), "--wait", "--json", *extra).out)


def post(cli, seconds, text, mood="lobby"):
    return int(cli("post", mood, "--as", "ada", "--at", at(seconds), text).out)


def codes(report: dict, kind: str = "consider") -> dict[str, str]:
    return {d["agent"]: d["code"] for d in report["decisions"] if d["kind"] == kind}


def wakes(cli) -> list[dict]:
    return sorted(json.loads(cli("wakes", "--json", "--limit", "100").out), key=lambda w: w["id"])


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


def test_two_pollers_on_postgresql_never_give_one_mood_two_floor_holders(pg_url, tmp_path):
    import signal
    import time

    import sqlalchemy as sa

    from support.cli import Cli
    from poller.store import Store, db
    from poller.text import utcnow
    from support.runs import start_run, stop

    cli = Cli(pg_url)
    cli("init")
    moods = [f"m{i}" for i in range(4)]
    for m in moods:
        cli("mood", "add", m)
    cli("person", "add", "ada", "--trust", "full")
    for name in ("alpha", "beta", "gamma"):
        # a turn lasts a while, so a floor taken is held across both pollers' cycles
        cli("agent", "add", name, "--command", agent_command(tmp_path, "slow", "0.4"))
    for key, value in (("cooldown", "0"), ("consider_after", "0"), ("considers_per_hour", "60"),
                       ("max_wakes_per_hour", "600")):
        cli("set", key, value)
    cli("tick")
    # Two pollers share one timeline only on the wall clock.
    pollers = [start_run(pg_url, tmp_path, name=f"p{i}", now=None) for i in range(2)]
    engine = db.make_engine(pg_url)
    store = Store(engine)
    last: dict[str, int] = {}
    try:
        for round_ in range(3):
            for m in moods:
                last[m] = store.add_post(m, "ada", f"thoughts on round {round_}?", utcnow()).id
            time.sleep(0.3)

        def everyone_considered_the_last_post():
            with engine.connect() as c:
                rows = c.execute(sa.text(
                    "SELECT m.slug, p.handle, l.looked_id FROM listeners l "
                    "JOIN moods m ON m.id = l.mood_id JOIN participants p ON p.id = l.agent_id"
                )).all()
                busy = c.execute(sa.text(
                    "SELECT count(*) FROM wakes WHERE status IN ('pending', 'running')")).scalar()
            looked = {(m, a): seen for m, a, seen in rows}
            done = all((looked.get((m, a)) or 0) >= last[m]
                       for m in moods for a in ("alpha", "beta", "gamma"))
            return done and busy == 0

        wait_for(everyone_considered_the_last_post, timeout=600,
                 what="every agent to consider the last post of every Mood")
    finally:
        for p in pollers:
            p.send_signal(signal.SIGTERM)
        for p in pollers:
            stop(p)
    with engine.connect() as c:
        turns = c.execute(sa.text(
            "SELECT mood_id, agent_id, started_at, finished_at FROM wakes "
            "WHERE kind IN ('consider', 'quiet', 'arrival') ORDER BY mood_id, started_at")).all()
        deferred = c.execute(sa.text(
            "SELECT count(*) FROM decisions WHERE reason LIKE 'floor-taken-by-%'")).scalar()
    engine.dispose()
    assert all(t.started_at is not None and t.finished_at is not None for t in turns)
    overlaps = [(a, b) for a, b in zip(turns, turns[1:])
                if a.mood_id == b.mood_id and b.started_at < a.finished_at]
    assert overlaps == []  # in each Mood, one unprompted turn at a time
    assert deferred > 0  # and the floor was contended
    logs = [(tmp_path / f"p{i}.log").read_text() for i in range(2)]
    assert all(l.count("running every") == 1 and "Traceback" not in l for l in logs)


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
