"""The real CLI as a subprocess: `run` under signals, kill -9, two pollers at once.

Here, the part run as processes; the rest sits under the same name in the other
layers.
"""

from __future__ import annotations

import json
import re
import os
import signal
import time

import sqlalchemy as sa

from support.agents import agent_command, agent_running, sandboxed, wakes_seen
from support.cli import Cli
from support.timeline import TimelineCli, at
from support.waiting import HANG_GUARD_S, wait_for
from support.runs import lease, start_run, stop, wait_cycles
from support.acceptance import wakes
from support.world import cli  # noqa: F401  (a fixture)

# A poller started with ``--now`` keeps its own clock from that instant on
# (and hands it to its runners); other commands run at T0 unless told a time.
# No test reads the wall clock's date, except where two pollers must share
# one timeline.


def test_kill_9_during_a_turn_closes_it_as_cut_off_and_never_wakes_twice(cli, sqlite_url, tmp_path):
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    # The agent would stay at work for 600 s: only the poller can end its turn.
    cli("agent", "add", "bot", "--command", agent_command(tmp_path, "slow", "600"))
    cli("set", "cooldown", "0")
    cli("tick", "--now", at(0))  # first run
    first = cli("post", "lobby", "--as", "ada", "--at", at(1), "@bot a long question").out.strip()
    poller = start_run(sqlite_url, tmp_path)
    try:
        wait_for(lambda: wakes_seen(tmp_path), what="the agent to start")
        wait_for(lambda: wakes(cli)[0]["status"] == "running", what="the turn to run")
        os.killpg(poller.pid, signal.SIGKILL)  # the poller and its runner, as a crash would
        poller.wait(HANG_GUARD_S)
        if sandboxed():  # its namespace ends with the runner that started it
            wait_for(lambda: not agent_running(tmp_path), what="the agent to end with its poller")
        else:
            assert agent_running(tmp_path)  # the agent's own process group outlived them
        # Restarted later on the same timeline (before any quiet look is due).
        poller = start_run(sqlite_url, tmp_path, name="run2", now=at(600))
        wait_for(lambda: wakes(cli)[0]["status"] == "cut_off", what="the turn to be closed")
        wait_for(lambda: not agent_running(tmp_path), what="the orphaned agent to be killed")
        wait_cycles(sqlite_url, 3)  # cycles after the one that closed it: room to wake twice
        ws = wakes(cli)
        assert len(ws) == 1 and ws[0]["answers"] == [int(first)]  # not woken twice
        notes = [p for p in json.loads(cli("posts", "lobby", "--json").out) if p["kind"] == "system"]
        assert any("cut off" in p["text"] for p in notes)
        cli("post", "lobby", "--as", "ada", "--at", at(601), "@bot are you back?")
        wait_for(lambda: len(wakes(cli)) == 2 and len(wakes_seen(tmp_path)) == 2,
                 what="the next wake")
        assert "was cut off before it finished" in wakes_seen(tmp_path)[-1]["text"]
    finally:
        code = stop(poller)
    assert code == 0


def test_sigterm_stops_cleanly_and_the_turn_is_recorded(cli, sqlite_url, tmp_path):
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    # The agent would stay at work for 600 s: the shutdown has to end its turn.
    cli("agent", "add", "bot", "--command", agent_command(tmp_path, "slow", "600"))
    cli("tick", "--now", at(0))
    cli("post", "lobby", "--as", "ada", "--at", at(1), "@bot slow one")
    poller = start_run(sqlite_url, tmp_path)
    try:
        wait_for(lambda: wakes_seen(tmp_path), what="the agent to start")
        poller.send_signal(signal.SIGTERM)
        # After its grace period (2 s) the poller ends the turn and exits cleanly.
        assert poller.wait(HANG_GUARD_S) == 0
    finally:
        stop(poller)
    (w,) = wakes(cli)
    assert w["status"] == "cut_off" and "stopped" in w["error"]
    assert not agent_running(tmp_path)


def test_a_second_sqlite_poller_waits_and_tick_exits_at_once(cli, sqlite_url, tmp_path):
    cli("mood", "add", "lobby")
    first = start_run(sqlite_url, tmp_path, name="first")
    second = None

    def held_by(proc):
        row = lease(sqlite_url)
        return row is not None and f":{proc.pid}:" in row[0]

    try:
        wait_for(lambda: held_by(first), what="the first poller to take the lease")
        r = TimelineCli(sqlite_url)("tick")
        assert r.code == 0 and "another poller holds the lock" in r.out
        second = start_run(sqlite_url, tmp_path, name="second")
        wait_for(lambda: "waiting" in (tmp_path / "second.log").read_text(), what="the second to wait")
        assert held_by(first)
        assert stop(first) == 0
        # The lease was released: the waiting poller takes over.
        wait_for(lambda: held_by(second), what="the second poller to take over")
        r = TimelineCli(sqlite_url)("tick")
        assert r.code == 0 and "another poller holds the lock" in r.out
    finally:
        for p in (first, second):
            if p is not None:
                stop(p)


def test_two_pollers_on_postgresql_answer_every_mention_exactly_once(pg_url, tmp_path):
    from poller.store import db
    from poller.store import Store
    from poller.text import utcnow

    cli = Cli(pg_url)
    cli("init")
    moods = [f"m{i}" for i in range(8)]
    for m in moods:
        cli("mood", "add", m)
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "alpha", "--command", agent_command(tmp_path, "reply"))
    cli("agent", "add", "beta", "--command", agent_command(tmp_path, "reply"))
    cli("set", "cooldown", "0")
    cli("set", "max_wakes_per_hour", "600")
    cli("tick")
    # Two pollers share one timeline only on the wall clock: a --now clock
    # starts at a different moment in each process.
    pollers = [start_run(pg_url, tmp_path, name=f"p{i}", now=None) for i in range(2)]
    engine = db.make_engine(pg_url)
    store = Store(engine)
    expected: set[tuple[str, int]] = set()
    try:
        for round_ in range(5):
            for i, m in enumerate(moods):
                who = ["@alpha", "@beta", "@alpha and @beta"][(i + round_) % 3]
                p = store.add_post(m, "ada", f"{who} round {round_}", utcnow())
                for name in ("alpha", "beta"):
                    if f"@{name}" in who:
                        expected.add((name, p.id))
            time.sleep(0.3)  # the mentions arrive over several cycles

        def answered():
            with engine.connect() as c:
                rows = c.execute(sa.text(
                    "SELECT p.handle, wp.post_id FROM wake_posts wp "
                    "JOIN participants p ON p.id = wp.agent_id")).all()
                busy = c.execute(sa.text(
                    "SELECT count(*) FROM wakes WHERE status IN ('pending', 'running')")).scalar()
            return rows if len(rows) >= len(expected) and busy == 0 else None

        # Generous: a wake whose runner lost its claim is started again only
        # after the poller's grace for unstarted wakes (60 s).
        rows = wait_for(answered, timeout=600, what="every mention to be answered")
    finally:
        for p in pollers:
            p.send_signal(signal.SIGTERM)
        for p in pollers:
            stop(p)
    assert sorted(rows) == sorted(expected)  # every mention once, none twice
    with engine.connect() as c:
        statuses = c.execute(sa.text("SELECT status, count(*) FROM wakes GROUP BY status")).all()
        overlaps = c.execute(sa.text(
            "SELECT count(*) FROM wakes a JOIN wakes b ON a.agent_id = b.agent_id "
            "AND a.mood_id = b.mood_id AND a.id < b.id AND b.started_at < a.finished_at")).scalar()
    assert dict(statuses) == {"replied": dict(statuses)["replied"]}
    assert overlaps == 0  # never two turns at once for one (agent, Mood)
    logs = [(tmp_path / f"p{i}.log").read_text() for i in range(2)]
    # Both ran throughout, contending for the same pairs.  Which one claims a pair
    # first is a race (a commit's NOTIFY reaches both; the loser skips the locked
    # rows), so on a busy machine one may win every time and start every turn.
    assert all(l.count("running every") == 1 and "Traceback" not in l for l in logs)
    assert any(re.search(r"started \(in process\)|started \(runner pid", l) for l in logs)
    engine.dispose()


