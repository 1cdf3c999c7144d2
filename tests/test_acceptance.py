"""The real CLI as a subprocess: `run` under signals, kill -9, two pollers at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import sqlalchemy as sa

from agents import agent_command, wakes_seen
from conftest import REPO, Cli


def start_run(db_url: str, tmp_path, *extra: str, name: str = "run") -> subprocess.Popen:
    config = tmp_path / "config.toml"
    if not config.exists():
        config.write_text("[poller]\nlease = 3.0\nshutdown_grace = 2.0\n")
    log = open(tmp_path / f"{name}.log", "ab")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen([sys.executable, "-m", "poller", "--db", db_url, "--config", str(config),
                             "run", "--interval", "0.2", *extra], stdout=log, stderr=log, env=env,
                            cwd=tmp_path, start_new_session=True)


def wait_for(check, timeout: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def wakes(cli) -> list[dict]:
    return sorted(json.loads(cli("wakes", "--json", "--limit", "1000").out), key=lambda w: w["id"])


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().split()[2] != "Z"


def test_kill_9_during_a_turn_closes_it_as_cut_off_and_never_wakes_twice(cli, sqlite_url, tmp_path):
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "bot", "--command", agent_command(tmp_path, "slow", "60"))
    cli("set", "cooldown", "0")
    cli("tick")  # first run
    first = cli("post", "lobby", "--as", "ada", "@bot a long question").out.strip()
    poller = start_run(sqlite_url, tmp_path)
    try:
        seen = wait_for(lambda: wakes_seen(tmp_path), what="the agent to start")
        agent_pid = seen[0]["pid"]
        wait_for(lambda: wakes(cli)[0]["status"] == "running", what="the turn to run")
        os.killpg(poller.pid, signal.SIGKILL)  # the poller and its runner, as a crash would
        poller.wait(10)
        assert alive(agent_pid)  # the agent's own process group outlived them
        poller = start_run(sqlite_url, tmp_path, name="run2")
        wait_for(lambda: wakes(cli)[0]["status"] == "cut_off", what="the turn to be closed")
        wait_for(lambda: not alive(agent_pid), what="the orphaned agent to be killed")
        time.sleep(1.0)
        ws = wakes(cli)
        assert len(ws) == 1 and ws[0]["answers"] == [int(first)]  # not woken twice
        notes = [p for p in json.loads(cli("posts", "lobby", "--json").out) if p["kind"] == "system"]
        assert any("cut off" in p["text"] for p in notes)
        cli("post", "lobby", "--as", "ada", "@bot are you back?")
        wait_for(lambda: len(wakes(cli)) == 2 and len(wakes_seen(tmp_path)) == 2,
                 what="the next wake")
        assert "was cut off before it finished" in wakes_seen(tmp_path)[-1]["text"]
    finally:
        os.killpg(poller.pid, signal.SIGTERM)
        poller.wait(20)
    assert poller.returncode == 0


def test_sigterm_stops_cleanly_and_the_turn_is_recorded(cli, sqlite_url, tmp_path):
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "bot", "--command", agent_command(tmp_path, "slow", "60"))
    cli("tick")
    cli("post", "lobby", "--as", "ada", "@bot slow one")
    poller = start_run(sqlite_url, tmp_path)
    wait_for(lambda: wakes_seen(tmp_path), what="the agent to start")
    agent_pid = wakes_seen(tmp_path)[0]["pid"]
    start = time.monotonic()
    poller.send_signal(signal.SIGTERM)
    assert poller.wait(30) == 0
    assert time.monotonic() - start < 15  # grace (2 s) + ending the turn
    (w,) = wakes(cli)
    assert w["status"] == "cut_off" and "stopped" in w["error"]
    assert not alive(agent_pid)


def test_a_second_sqlite_poller_waits_and_tick_exits_at_once(cli, sqlite_url, tmp_path):
    cli("mood", "add", "lobby")
    first = start_run(sqlite_url, tmp_path, name="first")
    try:
        wait_for(lambda: "running every" in (tmp_path / "first.log").read_text(), what="start")
        time.sleep(0.5)
        r = Cli(sqlite_url)("tick")
        assert r.code == 0 and "another poller holds the lock" in r.out
        second = start_run(sqlite_url, tmp_path, name="second")
        wait_for(lambda: "waiting" in (tmp_path / "second.log").read_text(), what="the second to wait")
        first.send_signal(signal.SIGTERM)
        first.wait(20)
        # The lease was released: the waiting poller takes over.
        wait_for(lambda: "waiting" in (tmp_path / "second.log").read_text()
                 and Cli(sqlite_url)("tick").out.startswith("another poller"), what="takeover")
    finally:
        for p in (first, locals().get("second")):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.wait(20)


def test_two_pollers_on_postgresql_answer_every_mention_exactly_once(pg_url, tmp_path):
    from poller import db
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
    pollers = [start_run(pg_url, tmp_path, name=f"p{i}") for i in range(2)]
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
            time.sleep(0.3)

        def answered():
            with engine.connect() as c:
                rows = c.execute(sa.text(
                    "SELECT p.handle, wp.post_id FROM wake_posts wp "
                    "JOIN participants p ON p.id = wp.agent_id")).all()
                busy = c.execute(sa.text(
                    "SELECT count(*) FROM wakes WHERE status IN ('pending', 'running')")).scalar()
            return rows if len(rows) >= len(expected) and busy == 0 else None

        rows = wait_for(answered, timeout=120, what="every mention to be answered")
    finally:
        for p in pollers:
            p.send_signal(signal.SIGTERM)
        for p in pollers:
            p.wait(30)
    assert sorted(rows) == sorted(expected)  # every mention once, none twice
    with engine.connect() as c:
        statuses = c.execute(sa.text("SELECT status, count(*) FROM wakes GROUP BY status")).all()
        overlaps = c.execute(sa.text(
            "SELECT count(*) FROM wakes a JOIN wakes b ON a.agent_id = b.agent_id "
            "AND a.mood_id = b.mood_id AND a.id < b.id AND b.started_at < a.finished_at")).scalar()
    assert dict(statuses) == {"replied": dict(statuses)["replied"]}
    assert overlaps == 0  # never two turns at once for one (agent, Mood)
    logs = [(tmp_path / f"p{i}.log").read_text() for i in range(2)]
    assert all("turn_started" in l or "started (runner pid" in l for l in logs), \
        "both pollers should have taken a share of the work"
    engine.dispose()


def test_postgresql_posts_committed_out_of_order_are_never_skipped(pg_url, tmp_path):
    import threading

    from poller import db
    from poller.store import Store
    from poller.text import utcnow

    cli = Cli(pg_url)
    cli("init")
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "bot", "--command", agent_command(tmp_path, "reply"))
    cli("set", "considers_per_hour", "0")
    cli("tick")
    store = Store(db.make_engine(pg_url))
    inserted, release = threading.Event(), threading.Event()

    def slow_writer():
        with store.writing() as s:  # the mention's transaction stays open a while
            store._insert_post(s, store._mood(s, "lobby"), store._participant(s, "ada"),
                               "@bot the slow one", utcnow(), None, "post", 4)
            inserted.set()
            release.wait(10)

    slow = threading.Thread(target=slow_writer)
    slow.start()
    inserted.wait(10)
    fast = threading.Thread(target=lambda: store.add_post("lobby", "ada", "a quick one", utcnow()))
    fast.start()
    time.sleep(0.5)
    cli("tick")  # runs while the slow post is not yet committed
    release.set()
    slow.join(10)
    fast.join(10)
    cli("tick", "--wait")
    ws = wakes(cli)
    posts = {p["text"]: p["id"] for p in json.loads(cli("posts", "lobby", "--json").out)}
    assert [w["answers"] for w in ws] == [[posts["@bot the slow one"]]]
    store.engine.dispose()
