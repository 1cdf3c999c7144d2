"""The real CLI as a subprocess: `run` under signals, kill -9, two pollers at once."""

from __future__ import annotations

import datetime as dt
import json
import re
import os
import signal
import subprocess
import sys
import time

import pytest
import sqlalchemy as sa

from agents import agent_command, wakes_seen
from conftest import REPO, Cli
from timeline import T0, TimelineCli, at
from waiting import HANG_GUARD_S, wait_for

# A poller started with ``--now`` keeps its own clock from that instant on
# (and hands it to its runners); other commands run at T0 unless told a time.
# No test reads the wall clock's date, except where two pollers must share
# one timeline.


@pytest.fixture
def cli(sqlite_url):
    """A CLI on a fresh SQLite database whose commands run at T0 unless told a time."""
    c = TimelineCli(sqlite_url)
    c("init")
    return c


def start_run(db_url: str, tmp_path, *extra: str, name: str = "run",
              now: str | None = at(0)) -> subprocess.Popen:
    """``mood-poller run`` in its own process group; *now* None runs it on the wall clock."""
    config = tmp_path / "config.toml"
    if not config.exists():
        config.write_text("[poller]\nlease = 3.0\nshutdown_grace = 2.0\n")
    log = open(tmp_path / f"{name}.log", "ab")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    clock = ["--now", now] if now else []
    return subprocess.Popen([sys.executable, "-m", "poller", "--db", db_url, "--config", str(config),
                             *clock, "run", "--interval", "0.2", *extra], stdout=log, stderr=log,
                            env=env, cwd=tmp_path, start_new_session=True)


def lease(db_url: str):
    """The SQLite poller lease as (holder, expires_at), or None."""
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as c:
            return c.exec_driver_sql("SELECT holder, expires_at FROM leases WHERE name = 'poller'").first()
    finally:
        engine.dispose()


def wait_cycles(db_url: str, n: int) -> None:
    """Wait until the running SQLite poller has begun *n* more cycles.

    Each cycle renews the lease to its own clock's time, so every change seen
    is a cycle begun; when the n-th is seen, the n-1 before it have finished.
    """
    seen = [lease(db_url)]

    def renewed():
        row = lease(db_url)
        if row is not None and row != seen[-1]:
            seen.append(row)
        return len(seen) > n

    wait_for(renewed, what=f"{n} more cycles of the poller")


def stop(proc: subprocess.Popen) -> int:
    """SIGTERM to the poller's process group; its exit code once it has shut down."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    return proc.wait(HANG_GUARD_S)


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
    # The agent would stay at work for 600 s: only the poller can end its turn.
    cli("agent", "add", "bot", "--command", agent_command(tmp_path, "slow", "600"))
    cli("set", "cooldown", "0")
    cli("tick", "--now", at(0))  # first run
    first = cli("post", "lobby", "--as", "ada", "--at", at(1), "@bot a long question").out.strip()
    poller = start_run(sqlite_url, tmp_path)
    try:
        seen = wait_for(lambda: wakes_seen(tmp_path), what="the agent to start")
        agent_pid = seen[0]["pid"]
        wait_for(lambda: wakes(cli)[0]["status"] == "running", what="the turn to run")
        os.killpg(poller.pid, signal.SIGKILL)  # the poller and its runner, as a crash would
        poller.wait(HANG_GUARD_S)
        assert alive(agent_pid)  # the agent's own process group outlived them
        # Restarted later on the same timeline (before any quiet look is due).
        poller = start_run(sqlite_url, tmp_path, name="run2", now=at(600))
        wait_for(lambda: wakes(cli)[0]["status"] == "cut_off", what="the turn to be closed")
        wait_for(lambda: not alive(agent_pid), what="the orphaned agent to be killed")
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
        agent_pid = wait_for(lambda: wakes_seen(tmp_path), what="the agent to start")[0]["pid"]
        poller.send_signal(signal.SIGTERM)
        # After its grace period (2 s) the poller ends the turn and exits cleanly.
        assert poller.wait(HANG_GUARD_S) == 0
    finally:
        stop(poller)
    (w,) = wakes(cli)
    assert w["status"] == "cut_off" and "stopped" in w["error"]
    assert not alive(agent_pid)


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


def test_postgresql_posts_committed_out_of_order_are_never_skipped(pg_url, tmp_path):
    import threading

    from poller.store import core, db
    from poller.store import Store

    cli = TimelineCli(pg_url)
    cli("init")
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "bot", "--command", agent_command(tmp_path, "reply"))
    cli("set", "considers_per_hour", "0")
    cli("tick", "--now", at(0))
    store = Store(db.make_engine(pg_url))
    inserted, release = threading.Event(), threading.Event()

    def slow_writer():
        with store.writing() as s:  # the mention's transaction stays open until released
            core.ingest(s, store.counter, [core.NewPost("lobby", "ada", "@bot the slow one",
                                                        T0 + dt.timedelta(seconds=1))])
            inserted.set()
            release.wait(HANG_GUARD_S)

    def committed(text: str) -> bool:
        with store.engine.connect() as c:
            return c.execute(sa.text("SELECT count(*) FROM posts WHERE text = :t"),
                             {"t": text}).scalar() == 1

    def fast_done_or_waiting() -> bool:
        # The quick post has committed, or its writer waits on a lock the slow one holds.
        with store.engine.connect() as c:
            waiting = c.execute(sa.text("SELECT count(*) FROM pg_locks WHERE NOT granted")).scalar()
        return waiting > 0 or committed("a quick one")

    slow = threading.Thread(target=slow_writer)
    fast = threading.Thread(target=lambda: store.add_post(
        "lobby", "ada", "a quick one", T0 + dt.timedelta(seconds=2)))
    slow.start()
    try:
        assert inserted.wait(HANG_GUARD_S)
        fast.start()
        wait_for(fast_done_or_waiting, what="the quick post to commit or wait for the slow one")
        assert not committed("@bot the slow one")
        cli("tick", "--now", at(3))  # runs while the slow post is not yet committed
    finally:
        release.set()
        slow.join(HANG_GUARD_S)
        if fast.ident is not None:
            fast.join(HANG_GUARD_S)
    assert committed("@bot the slow one") and committed("a quick one")
    cli("tick", "--now", at(4), "--wait")
    ws = wakes(cli)
    posts = {p["text"]: p["id"] for p in json.loads(cli("posts", "lobby", "--json").out)}
    assert [w["answers"] for w in ws] == [[posts["@bot the slow one"]]]
    store.engine.dispose()
