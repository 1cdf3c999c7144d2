"""A running Matrix bridge for tests: ``mood-poller bridge matrix`` on 127.0.0.1, a store
with one linked room, and what a homeserver would send it.

The homeserver the bridge would speak to is a closed port: taking a transaction in
needs only the store, and the test plays the homeserver that PUTs transactions.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time

import httpx
import sqlalchemy as sa

from support import pg
from support.cli import Cli
from support.machine import REPO
from support.waiting import HANG_GUARD_S, wait_for

HS_TOKEN = "hs_" + secrets.token_hex(16)
AS_TOKEN = "as_" + secrets.token_hex(16)
SERVER = "hs.example"
ROOM = f"!room:{SERVER}"
UNLINKED = f"!elsewhere:{SERVER}"
ADA = f"@ada:{SERVER}"  # trust full
AGENT = f"@mood_helper:{SERVER}"
GOOD_TOKEN = {"authorization": f"Bearer {HS_TOKEN}"}


class Seq:
    n = 0

    @classmethod
    def next(cls) -> int:
        cls.n += 1
        return cls.n


def fresh_id(tag: str) -> str:
    return f"${tag}-{Seq.next()}-{secrets.token_hex(3)}"


def base_message(body: str, sender: str = ADA, **content) -> dict:
    return {"type": "m.room.message", "room_id": ROOM, "sender": sender,
            "event_id": fresh_id("m"), "origin_server_ts": int(time.time() * 1000),
            "content": {"msgtype": "m.text", "body": body, **content}}


class Bridge:
    """A ``mood-poller bridge matrix`` process on a store with one linked room."""

    def __init__(self, root, db_url: str):
        self.root, self.db = root, db_url
        self.cli = Cli(db_url)
        self.cli("init", "--answer-from-now")
        self.cli("agent", "add", "helper", "--command", "cat")
        self.cli("person", "add", "ada", "--trust", "full", "--matrix", ADA)
        self.cli("mood", "add", "lobby", "--matrix-room", ROOM)
        self.port = pg.free_port()
        config = root / "bridge.toml"
        config.write_text(f'[bridges.matrix]\nhomeserver = "http://127.0.0.1:{pg.free_port()}"\n'
                          f'server_name = "{SERVER}"\nlisten_port = {self.port}\npoll = 0.2\n')
        self.log_path = root / "bridge.log"
        self.log = open(self.log_path, "ab")
        env = dict(os.environ, PYTHONPATH=str(REPO), MOOD_POLLER_MATRIX_AS_TOKEN=AS_TOKEN,
                   MOOD_POLLER_MATRIX_HS_TOKEN=HS_TOKEN)
        self.proc = subprocess.Popen([sys.executable, "-m", "poller", "--db", db_url, "bridge",
                                      "matrix", "--config", str(config)], stdout=self.log,
                                     stderr=self.log, env=env, cwd=root, start_new_session=True)
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=HANG_GUARD_S)
        self.engine = sa.create_engine(db_url)
        wait_for(self.listening, what="the bridge's appservice endpoint")
        with self.engine.connect() as c:
            self.helper = c.exec_driver_sql(
                "SELECT id FROM participants WHERE handle = 'helper'").scalar_one()
        self.log_seen = 0

    def listening(self) -> bool:
        assert self.proc.poll() is None, self.log_path.read_text()
        try:
            return self.http.post("/_matrix/app/v1/ping", json={},
                                  headers={"authorization": f"Bearer {HS_TOKEN}"}).status_code == 200
        except httpx.TransportError:
            return False

    def put(self, path: str, headers: dict, raw: bytes) -> httpx.Response:
        return self.http.put(path, headers=headers, content=raw)

    def taken(self) -> dict[str, int]:
        """External id -> post id of every event stored."""
        with self.engine.connect() as c:
            return dict(c.exec_driver_sql(
                "SELECT external_id, post_id FROM bridge_events WHERE bridge = 'matrix'").all())

    def refused(self) -> dict[str, tuple[str, int]]:
        with self.engine.connect() as c:
            return {ref: (error, count) for ref, error, count in c.exec_driver_sql(
                "SELECT ref, error, count FROM quarantine WHERE kind = 'matrix-event'").all()}

    def posts(self) -> int:
        with self.engine.connect() as c:
            return c.exec_driver_sql("SELECT count(*) FROM posts").scalar_one()

    def mentioned(self, post_id: int) -> bool:
        with self.engine.connect() as c:
            return c.exec_driver_sql(
                "SELECT count(*) FROM mentions WHERE post_id = ? AND participant_id = ?"
                if self.db.startswith("sqlite") else
                "SELECT count(*) FROM mentions WHERE post_id = %s AND participant_id = %s",
                (post_id, self.helper)).scalar_one() == 1

    def new_log(self) -> str:
        text = self.log_path.read_bytes()[self.log_seen:].decode("utf-8", "replace")
        self.log_seen += len(text.encode())
        return text

    def close(self) -> None:
        self.http.close()
        self.engine.dispose()
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=HANG_GUARD_S)
        self.log.close()


def refusal(r: httpx.Response) -> dict:
    assert r.headers["content-type"].startswith("application/json"), r.text[:300]
    body = r.json()
    assert isinstance(body, dict) and body.get("errcode", "").startswith("M_"), body
    return body


def mention(n: int) -> tuple[dict, bytes]:
    """A trusted mention of the agent, and a transaction that holds it."""
    event = base_message(f"helper: question {n}", **{"m.mentions": {"user_ids": [AGENT]}})
    return event, json.dumps({"events": [event]}).encode()
