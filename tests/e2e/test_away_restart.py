"""Away and back across crashes: the real ``mood-poller run`` as a subprocess, killed with
SIGKILL during an absence and during the return flow, and two pollers on PostgreSQL; an
absence comes back exactly once, and one past due at start-up only after the floor."""

from __future__ import annotations

import os
import signal
import threading

import pytest
import sqlalchemy as sa

from support.chatserver import ChatServer
from support.runs import start_run, stop, wait_cycles
from support.away import Room
from support.timeline import TimelineCli, at, since_t0
from support.waiting import HANG_GUARD_S, wait_for

CATALOG = """\
[[catalog]]
id = "creek_walk"
label = "out for a creek walk"
duration_minutes = [1, 1]
seed = "A short walk along the creek."
"""
ACCOUNT = "The creek was high and brown after the rain."


class HeldEndpoint(ChatServer):
    """An OpenAI-compatible endpoint on loopback that holds each request until released
    (then answers it, and every later one at once)."""

    def __init__(self):
        self.release = threading.Event()
        super().__init__(self.hold)

    def hold(self, body: dict) -> tuple[int, str]:
        self.release.wait(HANG_GUARD_S)
        return 200, ACCOUNT

    def close(self):
        self.release.set()
        super().close()


@pytest.fixture
def held():
    ep = HeldEndpoint()
    yield ep
    ep.close()


def write_config(tmp_path, floor: float, url: str = "") -> None:
    summarizer = f'[summarizer]\nurl = "{url}"\nmodel = "tiny"\ntimeout = 60.0\n' if url else ""
    (tmp_path / "config.toml").write_text(
        f"[poller]\nlease = 3.0\nshutdown_grace = 2.0\nreturn_floor = {floor}\n{summarizer}")


def returns(db_url: str) -> list[dict]:
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as c:
            return [dict(r._mapping) for r in c.execute(sa.text(
                "SELECT id, text, created_at FROM posts WHERE kind = 'return' ORDER BY id"))]
    finally:
        engine.dispose()


def absence(db_url: str) -> dict:
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as c:
            return dict(c.execute(sa.text("SELECT * FROM activities")).one()._mapping)
    finally:
        engine.dispose()


def kill_9(proc) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(HANG_GUARD_S)


def out_for_a_minute(cli: TimelineCli, tmp_path) -> Room:
    room = Room(cli, tmp_path, CATALOG)
    room.go_out()  # due back a minute after 2 s on the timeline
    return room


def test_killed_during_an_absence_it_comes_back_once_after_the_floor(sqlite_url, tmp_path):
    cli = TimelineCli(sqlite_url)
    cli("init")
    out_for_a_minute(cli, tmp_path)
    write_config(tmp_path, floor=2.0)
    poller = start_run(sqlite_url, tmp_path, now=at(10))
    try:
        wait_cycles(sqlite_url, 3)  # a poller at work during the absence
        kill_9(poller)
        assert returns(sqlite_url) == []
        # Restarted long after it was due: it comes back on the running loop, after the
        # floor, not inside the first cycle.
        poller = start_run(sqlite_url, tmp_path, name="run2", now=at(600))
        (back,) = wait_for(lambda: returns(sqlite_url), what="the return")
        wait_cycles(sqlite_url, 3)
    finally:
        assert stop(poller) == 0
    (again,) = returns(sqlite_url)
    assert again == back
    assert since_t0(back["created_at"].replace(" ", "T") + "Z") >= 602  # 600 + the floor
    a = absence(sqlite_url)
    assert a["status"] == "completed" and a["return_post_id"] == back["id"]


def test_killed_during_the_return_flow_it_comes_back_once(sqlite_url, tmp_path, held):
    cli = TimelineCli(sqlite_url)
    cli("init")
    out_for_a_minute(cli, tmp_path)
    write_config(tmp_path, floor=0.0, url=held.url)
    poller = start_run(sqlite_url, tmp_path, now=at(600))
    try:
        wait_for(lambda: held.requests, what="the account to be asked for")
        assert absence(sqlite_url)["return_holder"]  # claimed, not finished
        kill_9(poller)  # while its account is being written
        assert returns(sqlite_url) == []
        held.release.set()
        poller = start_run(sqlite_url, tmp_path, name="run2", now=at(700))
        (back,) = wait_for(lambda: returns(sqlite_url), what="the return after the restart")
        wait_cycles(sqlite_url, 3)
    finally:
        assert stop(poller) == 0
    assert returns(sqlite_url) == [back]
    assert back["text"] == f"[returned from a creek walk] {ACCOUNT}"
    assert len(held.requests) == 2 and absence(sqlite_url)["status"] == "completed"


def test_two_pollers_on_postgresql_bring_it_back_once_even_when_one_dies_midway(pg_url,
                                                                                tmp_path, held):
    cli = TimelineCli(pg_url)
    cli("init")
    room = out_for_a_minute(cli, tmp_path)
    pinged = room.post(30, "ada", "@helper in the attic", mood="attic")
    room.tick(31)  # noted for the return
    write_config(tmp_path, floor=1.0, url=held.url)
    # On the wall clock (two pollers share one timeline only there), long past due.
    pollers = {i: start_run(pg_url, tmp_path, name=f"p{i}", now=None) for i in range(2)}
    try:
        wait_for(lambda: held.requests, what="one poller to ask for the account")
        holder = absence(pg_url)["return_holder"]
        (dying,) = [i for i, p in pollers.items() if f":{p.pid}:" in holder]
        kill_9(pollers.pop(dying))  # the one bringing it back dies midway
        held.release.set()
        (back,) = wait_for(lambda: returns(pg_url), what="the survivor to bring it back")
        ws = wait_for(lambda: [w for w in room.wakes() if w["kind"] == "return"],
                      what="the return wake")
    finally:
        for p in pollers.values():
            stop(p)
    assert returns(pg_url) == [back]
    assert back["text"] == f"[returned from a creek walk] {ACCOUNT}"
    assert len(ws) == 1 and ws[0]["answers"] == [pinged]
    assert absence(pg_url)["status"] == "completed"
