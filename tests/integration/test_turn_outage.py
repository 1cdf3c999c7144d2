"""A reply the agent finished is never thrown away because its database was down.

A real PostgreSQL of the test's own is stopped as a crash would stop it
(``pg_ctl -m immediate``) while a runner process waits on its agent; the agent
replies into the outage.  The runner keeps the outcome on disk and settles it
when the server is back; if the runner dies meanwhile, the next cycle's
recovery settles it from disk instead of calling the turn cut off.
"""

from __future__ import annotations

import json
import os
import signal

import pytest
import sqlalchemy as sa

from support import pg
from support.agents import agent_command, open_gate, wakes_seen
from support.cli import Cli
from support.timeline import at
from support.waiting import wait_for


@pytest.fixture
def own_pg():
    server = pg.start(durable=True)
    try:
        yield server
    finally:
        server.stop()


def wake_row(url: str, wake_id: int) -> dict:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as c:
            row = c.execute(sa.text("SELECT status, runner_pid, reply_post_id FROM wakes "
                                    "WHERE id = :w"), {"w": wake_id}).mappings().first()
            return dict(row)
    finally:
        engine.dispose()


def kept_files(tmp_path) -> list[str]:
    root = tmp_path / "xdg-data" / "memory-lane" / "settling"
    return [f for _, _, files in os.walk(root) for f in files if f.endswith(".json")]


def lobby(url: str, tmp_path, gate) -> Cli:
    c = Cli(url)
    c("init")
    c("mood", "add", "lobby")
    c("person", "add", "ada", "--trust", "full")
    c("agent", "add", "bot", "--command", agent_command(tmp_path, "gate", str(gate)))
    c("set", "cooldown", "0")
    c("set", "idle_after", "0")
    c("tick", "--now", at(0))
    return c


def reply_into_an_outage(c: Cli, server, tmp_path, gate) -> int:
    """A mention's turn starts; the database goes down; the agent replies. The wake id."""
    c("post", "lobby", "--as", "ada", "--at", at(1), "@bot rebuild the index")
    c("tick", "--now", at(2))  # a runner process, detached
    wait_for(lambda: wakes_seen(tmp_path), what="the agent to start")
    (w,) = json.loads(c("wakes", "--json").out)
    wait_for(lambda: wake_row(c.db_url, w["id"])["runner_pid"], what="the runner's claim")
    pid = wake_row(c.db_url, w["id"])["runner_pid"]
    server.pause()
    open_gate(gate)
    wait_for(lambda: kept_files(tmp_path), what="the runner to keep the finished reply")
    return w["id"], pid


def test_a_reply_finished_while_the_database_is_down_is_posted_when_it_is_back(own_pg, tmp_path):
    gate = tmp_path / "gate"
    c = lobby(own_pg.new_database(), tmp_path, gate)
    wake_id, _ = reply_into_an_outage(c, own_pg, tmp_path, gate)
    own_pg.resume()
    wait_for(lambda: wake_row(c.db_url, wake_id)["status"] == "replied",
             what="the runner to settle once the database is back")
    assert wake_row(c.db_url, wake_id)["reply_post_id"]
    texts = [p["text"] for p in json.loads(c("posts", "lobby", "--json").out)]
    assert "done when let go" in texts
    assert not any("without a reply" in t for t in texts)
    wait_for(lambda: not kept_files(tmp_path), what="the kept outcome to be removed")


def test_a_kept_reply_outlives_its_runner_and_recovery_posts_it(own_pg, tmp_path):
    gate = tmp_path / "gate"
    c = lobby(own_pg.new_database(), tmp_path, gate)
    wake_id, pid = reply_into_an_outage(c, own_pg, tmp_path, gate)
    os.kill(pid, signal.SIGKILL)  # the runner dies holding the reply
    wait_for(lambda: not os.path.exists(f"/proc/{pid}") or
             open(f"/proc/{pid}/stat").read().split(") ", 1)[1][0] == "Z",
             what="the runner to die")
    own_pg.resume()
    assert wake_row(c.db_url, wake_id)["status"] == "running"
    c("tick", "--now", at(30), "--wait")  # recovery: settled from disk, not cut off
    row = wake_row(c.db_url, wake_id)
    assert row["status"] == "replied" and row["reply_post_id"]
    texts = [p["text"] for p in json.loads(c("posts", "lobby", "--json").out)]
    assert texts.count("done when let go") == 1
    assert not any("without a reply" in t or "cut off" in t for t in texts)
    assert not kept_files(tmp_path)
    for s in (100, 200):
        c("tick", "--now", at(s), "--wait")
    assert len(json.loads(c("wakes", "--json").out)) == 1  # no follow-up: it was answered
