"""Edges of the cycle: a turn thread that dies, a stop during composing, a follow-up
made moot, arrivals in a row, and a dry run that meets a broken pair."""

from __future__ import annotations

import datetime as dt
import json

from support.agents import agent_command, open_gate
from poller.cycle import drafts, evaluate
from poller.turns import runner

T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


def at(seconds: float) -> str:
    return (T0 + dt.timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def wakes(cli):
    return sorted(json.loads(cli("wakes", "--json").out), key=lambda w: w["id"])


def lobby(cli, command, *moods):
    for m in ("lobby", *moods):
        cli("mood", "add", m)
    cli("person", "add", "ada", "--trust", "full")
    cli("person", "add", "bob", "--trust", "full")
    cli("agent", "add", "bot", "--command", command)
    cli("set", "cooldown", "0")
    cli("set", "idle_after", "0")
    cli("tick", "--now", at(0))
    return cli


def test_a_turn_whose_thread_died_is_closed_by_the_next_cycle(cli, tmp_path, monkeypatch):
    from poller.cycle import recover

    # This process stands for `mood-poller run`: its command line matches a runner's.
    monkeypatch.setattr(recover, "RUNNER_MARKERS", ("python",))
    monkeypatch.setenv("MOOD_POLLER_LAUNCH", "thread")
    c = lobby(cli, agent_command(tmp_path, "reply"))
    c("post", "lobby", "--as", "ada", "--at", at(1), "@bot hi")

    def settling_breaks(*args, **kw):
        raise RuntimeError("the database went away for good")

    real_settle = runner.settle_with_retries

    monkeypatch.setattr(runner, "settle_with_retries", settling_breaks)
    c("tick", "--now", at(2), "--wait")
    assert wakes(c)[0]["status"] == "running"  # nobody will ever settle it
    monkeypatch.setattr(runner, "settle_with_retries", real_settle)
    c("tick", "--now", at(3), "--wait")
    (w,) = wakes(c)[:1]
    assert w["status"] == "cut_off"
    why = json.loads(c("why", "--mood", "lobby", "--agent", "bot", "--json").out)
    assert why["hold"] is None  # later mentions are not held as "busy"


def test_an_emergency_stop_during_composing_records_no_wake(cli, tmp_path, monkeypatch):
    c = lobby(cli, agent_command(tmp_path, "reply"), "den")
    c("post", "lobby", "--as", "ada", "--at", at(1), "@bot one")
    c("post", "den", "--as", "ada", "--at", at(1), "@bot two")
    real = drafts.compose_text
    stopped = []

    def compose_then_stop(ctx, d):
        if not stopped:
            stopped.append(c("scram", "--by", "ada", "--now", at(2)))
        return real(ctx, d)

    monkeypatch.setattr(drafts, "compose_text", compose_then_stop)
    c("tick", "--now", at(2), "--wait")
    assert wakes(c) == []
    monkeypatch.undo()
    c("scram", "--lift", "--now", at(3))
    c("tick", "--now", at(4), "--wait")
    assert sorted(w["mood"] for w in wakes(c)) == ["den", "lobby"]  # still owed, answered now


def test_a_follow_up_is_dropped_once_a_wake_has_shown_what_was_left(cli, tmp_path):
    gate = tmp_path / "gate"
    c = lobby(cli, agent_command(tmp_path, "gate", str(gate)))
    c("agent", "set", "bot", "--timeout", "1")
    c("post", "lobby", "--as", "ada", "--at", at(1), "@bot rebuild the index")
    c("tick", "--now", at(2), "--wait")  # times out: cut off, a follow-up owed
    assert wakes(c)[0]["status"] == "cut_off"
    open_gate(gate)
    c("post", "lobby", "--as", "bob", "--at", at(10), "@bot and the other thing?")
    c("tick", "--now", at(11), "--wait")  # this wake shows the unanswered post too
    assert [w["kind"] for w in wakes(c)] == ["mention", "mention"]
    for s in (70, 200):
        c("tick", "--now", at(s), "--wait")
    assert [w["kind"] for w in wakes(c)] == ["mention", "mention"]  # no follow-up after all


def test_a_second_arrival_is_weighed_after_the_first_is_skipped(cli, tmp_path):
    c = lobby(cli, agent_command(tmp_path, "reply"))
    c("set", "considers_per_hour", "0")
    c("post", "lobby", "--as", "ada", "--at", at(1), "morning")  # ada spoke: no greeting
    c("signin", "ada", "--mood", "lobby", "--at", at(2))
    c("signin", "bob", "--mood", "lobby", "--at", at(2))
    for s in (3, 30, 60):
        c("tick", "--now", at(s), "--wait")
    arrivals = [w for w in wakes(c) if w["kind"] == "arrival"]
    assert len(arrivals) == 1


def test_a_dry_run_that_meets_a_broken_pair_goes_on(any_cli, tmp_path, monkeypatch):
    c = lobby(any_cli, agent_command(tmp_path, "reply"), "den")
    c("post", "lobby", "--as", "ada", "--at", at(1), "@bot one")
    c("post", "den", "--as", "ada", "--at", at(1), "@bot two")
    real = evaluate.kind_facts

    import sqlalchemy as sa

    def broken_in_lobby(ctx, s, kind, l, owed, now):
        if l.mood_id == 1:  # a statement the database refuses: the session must recover
            s.execute(sa.text("INSERT INTO cursors (name, value, at) "
                              "VALUES ('posts', 0, :at)"), {"at": dt.datetime(2026, 1, 1)})
        return real(ctx, s, kind, l, owed, now)

    monkeypatch.setattr(evaluate, "kind_facts", broken_in_lobby)
    out = c("tick", "--now", at(2), "--dry-run").out
    assert "would wake bot in den" in out and "dry run: 1 wake(s)" in out
    assert wakes(c) == []
