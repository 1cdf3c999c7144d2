"""The Matrix bridge against a real Synapse on loopback.

One homeserver serves the session (see tests/synapse.py); it loads the
appservice registration ``bridge matrix --write-registration`` wrote.  Each
test makes its own room, people and store, and runs the real processes:
``mood-poller bridge matrix`` and ``mood-poller run``, with an agent that is a
real subprocess.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

import pg
import homeserver as synapse
from agents import agent_command, open_gate, wakes_seen
from conftest import REPO, Cli, unavailable
from waiting import HANG_GUARD_S, wait_for

AS_TOKEN = "as_" + secrets.token_hex(16)
HS_TOKEN = "hs_" + secrets.token_hex(16)


@dataclass
class Homeserver:
    hs: synapse.Synapse
    config: Path
    as_port: int


def bridge_toml(hs_url: str, as_port: int) -> str:
    return (f'[bridges.matrix]\nhomeserver = "{hs_url}"\nserver_name = "{synapse.SERVER_NAME}"\n'
            f'listen_port = {as_port}\npoll = 0.1\n')


@pytest.fixture(scope="session")
def homeserver(tmp_path_factory):
    import importlib.util

    if importlib.util.find_spec("synapse") is None:  # matrix-synapse, from the test extra
        unavailable("matrix-synapse is not installed (pip install '.[test]')")
    root = tmp_path_factory.mktemp("matrix")
    hs_port, as_port = pg.free_port(), pg.free_port()
    config = root / "bridge.toml"
    config.write_text(bridge_toml(f"http://127.0.0.1:{hs_port}", as_port))
    registration = root / "registration.yaml"
    env = dict(os.environ, PYTHONPATH=str(REPO), MOOD_POLLER_MATRIX_AS_TOKEN=AS_TOKEN,
               MOOD_POLLER_MATRIX_HS_TOKEN=HS_TOKEN)
    subprocess.run([sys.executable, "-m", "poller", "--db", f"sqlite:///{root}/unused.db",
                    "bridge", "matrix", "--config", str(config), "--write-registration",
                    str(registration)], check=True, env=env, timeout=HANG_GUARD_S,
                   capture_output=True)
    hs = synapse.start([str(registration)], hs_port, secrets.token_hex(16))
    yield Homeserver(hs, config, as_port)
    hs.stop()


class Bridged:
    """A store, a Mood linked to a fresh room, and the processes a test starts."""

    def __init__(self, home: Homeserver, tmp_path: Path, db_url: str):
        self.home, self.tmp, self.db = home, tmp_path, db_url
        self.cli = Cli(db_url)
        self.procs: dict[str, subprocess.Popen] = {}
        self.person = home.hs.register()
        self.room = self.person.create_room()

    def setup(self, agent_mode: str = "reply", *extra: str, agents=("helper",)) -> None:
        self.cli("init", "--answer-from-now")
        for handle in agents:
            self.cli("agent", "add", handle, "--command", agent_command(self.tmp, agent_mode, *extra))
        self.cli("person", "add", "--matrix", self.person.user_id, "--trust", "full")
        self.cli("mood", "add", "lobby", "--matrix-room", self.room)

    def env(self) -> dict:
        return dict(os.environ, PYTHONPATH=str(REPO), MOOD_POLLER_MATRIX_AS_TOKEN=AS_TOKEN,
                    MOOD_POLLER_MATRIX_HS_TOKEN=HS_TOKEN)

    def start(self, name: str, *args: str) -> subprocess.Popen:
        log = open(self.tmp / f"{name}.log", "ab")
        proc = subprocess.Popen([sys.executable, "-m", "poller", "--db", self.db, *args],
                                stdout=log, stderr=log, env=self.env(), cwd=self.tmp,
                                start_new_session=True)
        self.procs[name] = proc
        return proc

    def start_bridge(self) -> subprocess.Popen:
        proc = self.start("bridge", "bridge", "matrix", "--config", str(self.home.config))
        wait_for(lambda: self.joined("helper"), what="the agent's user to join the room")
        return proc

    def start_poller(self) -> subprocess.Popen:
        return self.start("run", "run", "--interval", "1")

    def stop(self, name: str, sig=signal.SIGTERM) -> None:
        proc = self.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        os.killpg(proc.pid, sig)
        proc.wait(timeout=HANG_GUARD_S)

    def close(self) -> None:
        for name in list(self.procs):
            self.stop(name, signal.SIGKILL)

    def agent_id(self, handle: str) -> str:
        return f"@mood_{handle}:{synapse.SERVER_NAME}"

    def joined(self, handle: str) -> bool:
        members = self.person.call("GET", f"/rooms/{self.room}/joined_members")["joined"]
        return self.agent_id(handle) in members

    def mention(self, handle: str, body: str, **content) -> str:
        return self.person.send(self.room, {"msgtype": "m.text", "body": body,
                                            "m.mentions": {"user_ids": [self.agent_id(handle)]},
                                            **content})

    def said_by(self, handle: str) -> list[dict]:
        return [e for e in self.person.messages(self.room) if e["sender"] == self.agent_id(handle)]

    def wakes(self) -> list[dict]:
        return json.loads(self.cli("wakes", "--json").out)


@pytest.fixture
def bridged(homeserver, tmp_path, sqlite_url):
    b = Bridged(homeserver, tmp_path, sqlite_url)
    yield b
    b.close()


def test_a_mention_wakes_the_agent_once_and_its_reply_answers_it_in_the_room(bridged):
    bridged.setup()
    bridged.start_bridge()
    bridged.start_poller()
    asked = bridged.mention("helper", "helper: what's new?")
    replies = wait_for(lambda: bridged.said_by("helper"), what="the agent's reply in the room")
    reply = replies[0]["content"]
    assert reply["msgtype"] == "m.text"
    assert reply["body"] == "helper answering mention"
    assert reply["m.relates_to"]["m.in_reply_to"]["event_id"] == asked
    assert "<p>helper answering mention</p>" == reply["formatted_body"]
    seen = wakes_seen(bridged.tmp)
    assert len(seen) == 1 and "what's new?" in seen[0]["text"]


def posts(b: Bridged) -> list[dict]:
    return json.loads(b.cli("posts", "lobby", "--json", "--limit", "500").out)


def replay(b: Bridged, event_id: str) -> None:
    """Deliver an event to the bridge again, as a homeserver retrying a transaction does."""
    event = b.person.call("GET", f"/rooms/{b.room}/event/{event_id}")
    r = httpx.put(f"http://127.0.0.1:{b.home.as_port}/_matrix/app/v1/transactions/retry-"
                  f"{secrets.token_hex(4)}", json={"events": [event]},
                  headers={"Authorization": f"Bearer {HS_TOKEN}"}, timeout=30)
    assert r.status_code == 200, r.text


def test_the_same_event_delivered_again_wakes_nobody_and_stores_nothing(bridged):
    bridged.setup()
    bridged.start_bridge()
    bridged.start_poller()
    asked = bridged.mention("helper", "helper: once please")
    wait_for(lambda: bridged.said_by("helper"), what="the reply")
    before = posts(bridged)
    replay(bridged, asked)
    replay(bridged, asked)
    sentinel = bridged.mention("helper", "helper: and now?")
    wait_for(lambda: len(bridged.said_by("helper")) == 2, what="the second reply")
    assert len(wakes_seen(bridged.tmp)) == 2
    after = posts(bridged)
    assert [p["text"] for p in after].count("helper: once please") == 1
    assert len(after) == len(before) + 2  # the sentinel and its answer only
    wake = [w for w in bridged.wakes() if w["status"] == "replied"][0]
    assert wake["answers"] and sentinel  # each wake answered posts of its own
    assert len({a for w in bridged.wakes() for a in w["answers"]}) == sum(
        len(w["answers"]) for w in bridged.wakes())


def test_a_reply_written_while_the_bridge_is_down_is_sent_once_when_it_is_back(bridged):
    gate = bridged.tmp / "gate"
    bridged.setup("gate", str(gate))
    bridged.start_bridge()
    bridged.start_poller()
    bridged.mention("helper", "helper: are you there?")
    wait_for(lambda: wakes_seen(bridged.tmp), what="the agent at work")
    bridged.stop("bridge", signal.SIGKILL)
    open_gate(gate)
    pending = wait_for(lambda: [i for i in json.loads(bridged.cli("outbox", "--json").out)
                                if i["event"] == "reply"], what="the reply in the outbox")
    assert pending[0]["status"] == "pending" and bridged.said_by("helper") == []
    bridged.start_bridge()
    wait_for(lambda: bridged.said_by("helper"), what="the reply in the room")
    item = wait_for(lambda: [i for i in json.loads(bridged.cli("outbox", "--json").out)
                             if i["status"] == "sent"], what="the item marked sent")[0]
    # Killed after sending but before recording it: the resend uses the same
    # transaction id, and the homeserver keeps the one event it has.
    bridged.stop("bridge", signal.SIGKILL)
    forget_sent(bridged.db, item["id"])
    bridged.start_bridge()
    wait_for(lambda: json.loads(bridged.cli("outbox", "--json").out)[0]["status"] == "sent",
             what="the item sent again")
    said = bridged.said_by("helper")
    assert len(said) == 1 and said[0]["event_id"] == item["external_id"]


def forget_sent(db_url: str, item_id: int) -> None:
    import sqlalchemy as sa

    engine = sa.create_engine(db_url)
    with engine.begin() as c:
        c.exec_driver_sql("UPDATE outbox SET status = 'pending', external_id = NULL "
                          f"WHERE id = {int(item_id)}")
    engine.dispose()
