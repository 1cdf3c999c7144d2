"""A mention whose turn was cut off is not lost: one look-only follow-up, never a second reply."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal

import sqlalchemy as sa

from support.agents import agent_command, open_gate, wakes_seen
from support.waiting import wait_for

T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


def at(seconds: float) -> str:
    return (T0 + dt.timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def wakes(cli) -> list[dict]:
    return sorted(json.loads(cli("wakes", "--json").out), key=lambda w: w["id"])


def posts(cli) -> list[dict]:
    return json.loads(cli("posts", "lobby", "--limit", "200", "--json").out)


def runner_pid(db_url: str, wake_id: int) -> int:
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as c:
            return c.exec_driver_sql("SELECT runner_pid FROM wakes WHERE id = ?",
                                     (wake_id,)).scalar()
    finally:
        engine.dispose()


def crash_the_turn(cli, tmp_path, wake_id: int, runs_before: int) -> None:
    """Wait until the agent is at work on *wake_id*, then kill -9 its runner."""
    wait_for(lambda: len(wakes_seen(tmp_path)) > runs_before, what="the agent to start")
    wait_for(lambda: runner_pid(cli.db_url, wake_id), what="the runner to claim the wake")
    os.kill(runner_pid(cli.db_url, wake_id), signal.SIGKILL)
    wait_for(lambda: not _alive(runner_pid(cli.db_url, wake_id)), what="the runner to die")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (not yet reaped by its parent) is dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def lobby(cli, tmp_path, gate):
    cli("mood", "add", "lobby", "--title", "The lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "bot", "--command", agent_command(tmp_path, "gate", str(gate)))
    cli("set", "cooldown", "0")
    cli("set", "idle_after", "0")  # no quiet looks: every wake here is the mention or its follow-up
    cli("tick", "--now", at(0))
    return cli


def test_a_crashed_turn_gets_one_look_only_follow_up_with_what_was_left(cli, tmp_path):
    gate = tmp_path / "gate"
    c = lobby(cli, tmp_path, gate)
    p = int(c("post", "lobby", "--as", "ada", "--at", at(1), "@bot rebuild the index").out)
    c("tick", "--now", at(2))  # the runner goes on in the background
    (first,) = wakes(c)
    crash_the_turn(c, tmp_path, first["id"], 0)
    c("tick", "--now", at(3), "--wait")  # recovery closes it as cut off
    (first,) = wakes(c)
    assert first["status"] == "cut_off"
    why = json.loads(c("why", "--mood", "lobby", "--agent", "bot", "--json").out)
    assert why["timers"]["due_at"] == at(63)  # the follow-up, a minute later
    open_gate(gate)
    c("tick", "--now", at(30), "--wait")
    assert len(wakes(c)) == 1
    c("tick", "--now", at(64), "--wait")
    first, follow = wakes(c)
    assert (follow["kind"], follow["tools"], follow["status"]) == ("cut-off", "look", "replied")
    assert (first["answers"], follow["answers"]) == ([], [p])  # answered in the first's place
    text = wakes_seen(tmp_path)[-1]["text"]
    assert 'reason="cut-off"' in text and "rebuild the index" in text and "cut off" in text
    for s in (200, 400, 4000):
        c("tick", "--now", at(s), "--wait")
    assert len(wakes(c)) == 2  # one follow-up per cut-off turn; the mention never again
    assert [w["answers"] for w in wakes(c)] == [[], [p]]


def test_a_follow_up_cut_off_too_is_held_for_an_operator(cli, tmp_path):
    gate = tmp_path / "gate"
    c = lobby(cli, tmp_path, gate)
    p = int(c("post", "lobby", "--as", "ada", "--at", at(1), "@bot rebuild the index").out)
    c("tick", "--now", at(2))
    crash_the_turn(c, tmp_path, wakes(c)[0]["id"], 0)
    c("tick", "--now", at(3), "--wait")
    c("tick", "--now", at(64))  # the follow-up starts, and crashes too
    follow = wakes(c)[1]
    assert follow["kind"] == "cut-off"
    crash_the_turn(c, tmp_path, follow["id"], 1)
    c("tick", "--now", at(65), "--wait")
    assert wakes(c)[1]["status"] == "cut_off"
    assert any("held for an operator" in x["text"] for x in posts(c) if x["kind"] == "system")
    st = json.loads(c("status", "--json", "--now", at(66)).out)
    assert [(q["kind"], q["ref"]) for q in st["quarantined"]] == [("cut-off", str(follow["id"]))]
    # Still owed, and said so: status counts it, why names it.
    assert [a["left_unanswered"] for a in st["agents"]] == [1]
    why = json.loads(c("why", "--mood", "lobby", "--agent", "bot", "--json").out)
    assert why["left_unanswered"] == [p]
    assert f"#p-{p}" in c("why", "--mood", "lobby", "--agent", "bot").out
    open_gate(gate)
    for s in (200, 400, 4000):
        c("tick", "--now", at(s), "--wait")
    assert len(wakes(c)) == 2
    # The question is not forgotten: the next mention here shows it and answers it too.
    later = int(c("post", "lobby", "--as", "ada", "--at", at(4001), "@bot and the logs?").out)
    c("tick", "--now", at(4002), "--wait")
    third = wakes(c)[2]
    assert third["status"] == "replied" and third["answers"] == [p, later]
    text = wakes_seen(tmp_path)[-1]["text"]
    assert "rebuild the index" in text and "and the logs?" in text
    st = json.loads(c("status", "--json", "--now", at(4003)).out)
    assert st["quarantined"] == []  # nothing held any more: the question has its wake


def test_a_mention_after_a_cut_off_turn_carries_what_it_left_unanswered(cli, tmp_path):
    """Question A is answered while B waits; B's turn is cut off; C comes before B's
    follow-up: C's wake shows B and answers it, and no follow-up comes after."""
    gate = tmp_path / "gate"
    c = lobby(cli, tmp_path, gate)
    a = int(c("post", "lobby", "--as", "ada", "--at", at(1), "@bot question A").out)
    c("tick", "--now", at(2))
    wait_for(lambda: wakes_seen(tmp_path), what="the agent to start on A")
    b = int(c("post", "lobby", "--as", "ada", "--at", at(5), "@bot question B").out)
    open_gate(gate)  # A's turn replies, after B was posted
    wait_for(lambda: wakes(c)[0]["status"] == "replied", what="A's reply")
    gate.unlink()
    c("tick", "--now", at(30))  # B's wake; its turn starts and is killed
    second = wakes(c)[1]
    assert second["answers"] == [b]
    crash_the_turn(c, tmp_path, second["id"], 1)
    c("tick", "--now", at(31), "--wait")
    assert wakes(c)[1]["status"] == "cut_off"
    open_gate(gate)
    q = int(c("post", "lobby", "--as", "ada", "--at", at(40), "@bot question C").out)
    c("tick", "--now", at(41), "--wait")
    third = wakes(c)[2]
    assert (third["kind"], third["answers"], third["status"]) == ("mention", [b, q], "replied")
    text = wakes_seen(tmp_path)[-1]["text"]
    assert "question B" in text and "question C" in text
    assert wakes(c)[1]["answers"] == []  # B is answered by C's wake now, once
    for s in (100, 200, 4000):
        c("tick", "--now", at(s), "--wait")
    assert len(wakes(c)) == 3  # no follow-up: nothing is left unanswered
    assert a not in third["answers"]


def test_an_emergency_stop_owes_no_follow_up(cli, tmp_path):
    gate = tmp_path / "gate"
    c = lobby(cli, tmp_path, gate)
    c("post", "lobby", "--as", "ada", "--at", at(1), "@bot rebuild the index")
    c("tick", "--now", at(2))
    wait_for(lambda: wakes_seen(tmp_path), what="the agent to start")
    c("scram", "--by", "ada", "--now", at(3))
    c("scram", "--lift", "--now", at(4))
    open_gate(gate)
    for s in (70, 200, 4000):
        c("tick", "--now", at(s), "--wait")
    (w,) = wakes(c)
    assert w["status"] == "cut_off"
