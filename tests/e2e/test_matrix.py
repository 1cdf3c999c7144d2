"""The Matrix bridge against a real Synapse on loopback.

One homeserver serves the session (see tests/support/homeserver.py); it loads the
appservice registration ``bridge matrix --write-registration`` wrote.  Each
test makes its own room, people and store, and runs the real processes:
``mood-poller bridge matrix`` and ``mood-poller run``, with an agent that is a
real subprocess.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from support import pg
from support import homeserver as synapse
from support.agents import agent_command, open_gate, wakes_seen
from support.cli import Cli
from support.machine import REPO, unavailable
from support.waiting import HANG_GUARD_S, wait_for

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
    shutil.rmtree(hs.root, ignore_errors=True)


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
    assert reply["m.mentions"] == {"user_ids": [bridged.person.user_id]}  # the asker is pinged
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
    forged = httpx.put(f"http://127.0.0.1:{bridged.home.as_port}/_matrix/app/v1/transactions/x",
                       json={"events": []}, headers={"Authorization": "Bearer not-the-token"},
                       timeout=30)
    assert forged.status_code == 403
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


def test_replies_due_while_the_homeserver_is_down_wait_and_arrive_in_order_once(bridged):
    bridged.setup()
    bridged.cli("person", "add", "ada", "--trust", "full")
    bridged.start_bridge()
    bridged.start_poller()
    hs = bridged.home.hs
    hs.stop()
    try:
        for n in range(3):
            bridged.cli("post", "lobby", "--as", "ada", f"@helper question {n}")
            wait_for(lambda: len([w for w in bridged.wakes() if w["status"] == "replied"]) > n,
                     what=f"reply {n}")
        items = [i for i in json.loads(bridged.cli("outbox", "--json").out)
                 if i["event"] == "reply"]
        assert len(items) == 3 and all(i["status"] == "pending" for i in items)
        # The oldest is tried again and again; the newer ones wait behind it.
        wait_for(lambda: json.loads(bridged.cli("outbox", "--json").out)[0]["attempts"] >= 2,
                 what="attempts that failed")
        # The homeserver stays down while the retries back off (0.5 s, doubling): it is
        # tried again, and again later, with nothing sent out of order meanwhile.
        wait_for(lambda: json.loads(bridged.cli("outbox", "--json").out)[0]["attempts"] >= 4,
                 what="retries backing off while the homeserver is down")
        assert all(i["status"] == "pending" for i in json.loads(bridged.cli("outbox", "--json").out)
                   if i["event"] == "reply")
    finally:
        hs.start()
    said = wait_for(lambda: len(bridged.said_by("helper")) >= 3 and bridged.said_by("helper"),
                    what="the three replies")
    replies = {i["post_id"]: i["external_id"] for i in json.loads(
        bridged.cli("outbox", "--json").out) if i["event"] == "reply"}
    assert [e["event_id"] for e in said] == [replies[k] for k in sorted(replies)]
    assert len(said) == 3


POISON = [  # what any member of a room can send: Synapse takes each, the bridge must not choke
    {"msgtype": "m.text", "body": "x", "m.relates_to": "just a string"},
    {"msgtype": "m.text", "body": "x", "m.relates_to": {"m.in_reply_to": "s"}},
    {"msgtype": "m.text", "body": "* x", "m.new_content": "s",
     "m.relates_to": {"rel_type": "m.replace", "event_id": "$x"}},
]  # (Synapse itself refuses a malformed m.mentions)


def put_transaction(b: Bridged, events: list[dict]) -> httpx.Response:
    return httpx.put(f"http://127.0.0.1:{b.home.as_port}/_matrix/app/v1/transactions/t-"
                     f"{secrets.token_hex(4)}", json={"events": events},
                     headers={"Authorization": f"Bearer {HS_TOKEN}"}, timeout=30)


def test_a_poison_event_is_refused_and_a_mention_behind_it_is_still_answered(bridged):
    bridged.setup()
    bridged.start_bridge()
    bridged.start_poller()
    stranger = bridged.home.hs.register()  # any member of the room, trusted or not
    stranger.join(bridged.room)
    first = stranger.send(bridged.room, {"msgtype": "m.text", "body": "hello"})
    bad = [stranger.send(bridged.room, json.loads(json.dumps(content).replace("$x", first)))
           for content in POISON]
    bridged.mention("helper", "helper: still with us?")
    wait_for(lambda: seen_in_a_wake(bridged, "still with us?"),
             what="the mention behind them in a wake")
    status = json.loads(bridged.cli("status", "--json").out)
    refused = {q["ref"]: q for q in status["quarantined"] if q["kind"] == "matrix-event"}
    assert set(bad) <= set(refused)
    assert refused[bad[0]]["error"] == "content.m.relates_to is not an object"
    assert refused[bad[0]]["mood"] == "lobby" and refused[bad[0]]["count"] == 1
    # The same poison again, in one transaction with a good mention: acknowledged, and
    # the mention goes in.
    poison = bridged.person.call("GET", f"/rooms/{bridged.room}/event/{bad[0]}")
    good = dict(poison, event_id="$after-" + secrets.token_hex(4), sender=bridged.person.user_id,
                content={"msgtype": "m.text", "body": "helper: and in one go?",
                         "m.mentions": {"user_ids": [bridged.agent_id("helper")]}})
    r = put_transaction(bridged, [poison, good])
    assert r.status_code == 200, r.text
    wait_for(lambda: seen_in_a_wake(bridged, "and in one go?"), what="the second mention")
    assert "Traceback" not in (bridged.tmp / "bridge.log").read_text()


def seen_in_a_wake(b: Bridged, words: str) -> bool:
    return any(words in w["text"] for w in wakes_seen(b.tmp))


def test_a_sender_with_no_trust_wakes_nobody_and_why_says_so(bridged):
    bridged.setup()
    bridged.start_bridge()
    bridged.start_poller()
    stranger = bridged.home.hs.register()
    stranger.join(bridged.room)
    stranger.send(bridged.room, {"msgtype": "m.text", "body": "helper: hello?",
                                 "m.mentions": {"user_ids": [bridged.agent_id("helper")]}})
    wait_for(lambda: any(p["text"] == "helper: hello?" for p in posts(bridged)),
             what="the stranger's post stored")
    people = json.loads(bridged.cli("person", "list", "--json").out)
    assert [p["trust"] for p in people if p["handle"] == stranger.user_id[1:].split(":")[0]] == ["none"]
    # The stranger is told, once, in a notice, that the agent answers only people added.
    told = wait_for(lambda: [e for e in bridged.said_by("helper")
                             if e["content"]["msgtype"] == "m.notice"], what="the notice")
    assert "answers only people the operators of this room have added" in told[0]["content"]["body"]
    bridged.mention("helper", "helper: and me?")
    wait_for(lambda: [e for e in bridged.said_by("helper") if e["content"]["msgtype"] == "m.text"],
             what="the trusted person's answer")
    seen = wakes_seen(bridged.tmp)
    assert len(seen) == 1 and "and me?" in seen[0]["text"]
    answered = {a for w in bridged.wakes() for a in w["answers"]}
    hello = [p["id"] for p in posts(bridged) if p["text"] == "helper: hello?"][0]
    assert hello not in answered
    why = bridged.cli("why", "helper", "lobby").out
    assert f"not heard: 1 mention(s) here by people with trust none (newest: post {hello}" in why


def test_an_edit_never_wakes_again_and_a_room_ping_wakes_no_agent(bridged):
    bridged.setup()
    bridged.start_bridge()
    bridged.start_poller()
    asked = bridged.mention("helper", "helper: first")
    wait_for(lambda: bridged.said_by("helper"), what="the first reply")
    bridged.person.send(bridged.room, {
        "msgtype": "m.text", "body": "* helper: first, edited",
        "m.new_content": {"msgtype": "m.text", "body": "helper: first, edited",
                          "m.mentions": {"user_ids": [bridged.agent_id("helper")]}},
        "m.mentions": {"user_ids": [bridged.agent_id("helper")]},
        "m.relates_to": {"rel_type": "m.replace", "event_id": asked}})
    wait_for(lambda: any(p["text"] == "helper: first, edited" for p in posts(bridged)),
             what="the edit stored")
    pinged = bridged.person.send(bridged.room, {"msgtype": "m.text", "body": "@room hello all",
                                                "m.mentions": {"room": True}})
    wait_for(lambda: any(p["text"] == "@room hello all" for p in posts(bridged)),
             what="the room ping stored")
    bridged.mention("helper", "helper: second")
    wait_for(lambda: len(bridged.said_by("helper")) == 2, what="the second reply")
    texts = [w["text"] for w in wakes_seen(bridged.tmp)]
    assert len(texts) == 2
    ping = [p["id"] for p in posts(bridged) if p["text"] == "@room hello all"][0]
    assert ping not in {a for w in bridged.wakes() for a in w["answers"]} and pinged


def test_a_redacted_post_is_gone_from_later_wakes(bridged):
    bridged.setup()
    bridged.start_bridge()
    bridged.start_poller()
    secret_word = "zanzibar-" + secrets.token_hex(3)
    said = bridged.person.send(bridged.room, {"msgtype": "m.text", "body": f"the code is {secret_word}"})
    bridged.person.call("PUT", f"/rooms/{bridged.room}/redact/{said}/r{secrets.token_hex(4)}", {})
    wait_for(lambda: any(p["text"] == "[this post was removed]" for p in posts(bridged)),
             what="the redaction stored")
    bridged.mention("helper", "helper: what was said?")
    wait_for(lambda: bridged.said_by("helper"), what="the reply")
    text = wakes_seen(bridged.tmp)[0]["text"]
    assert secret_word not in text and "what was said?" in text


def test_a_join_is_a_sign_in_and_the_agent_types_while_its_turn_runs(bridged):
    gate = bridged.tmp / "gate"
    bridged.setup("gate", str(gate))
    bridged.start_bridge()
    bridged.start_poller()
    newcomer = bridged.home.hs.register()
    assert signins(bridged.db) == []
    newcomer.join(bridged.room)
    wait_for(lambda: signins(bridged.db), what="the join recorded as a sign-in")
    assert len(signins(bridged.db)) == 1  # the newcomer's join, once
    bridged.mention("helper", "helper: take your time")
    wait_for(lambda: bridged.agent_id("helper") in typing(bridged), what="the agent typing")
    assert not bridged.said_by("helper")  # typing while the turn runs, before any reply
    open_gate(gate)
    said = wait_for(lambda: bridged.said_by("helper"), what="the reply")
    assert said[0]["content"]["body"] == "done when let go"
    wait_for(lambda: bridged.agent_id("helper") not in typing(bridged), what="typing cleared")


def signins(db_url: str) -> list:
    import sqlalchemy as sa

    engine = sa.create_engine(db_url)
    with engine.connect() as c:
        rows = c.exec_driver_sql("SELECT label FROM signins").all()
    engine.dispose()
    return rows


def typing(b: Bridged) -> list[str]:
    """Who the person's client sees typing in the room now (an incremental /sync: a
    typing event comes when who types changes)."""
    params = {"timeout": "0"} | ({"since": b.since} if getattr(b, "since", None) else {})
    data = b.person.call("GET", "/sync", **params)
    b.since = data["next_batch"]
    room = (data.get("rooms", {}).get("join", {}) or {}).get(b.room, {})
    for event in room.get("ephemeral", {}).get("events", []):
        if event["type"] == "m.typing":
            b.typing_now = event["content"]["user_ids"]
    return getattr(b, "typing_now", [])


def test_bot_account_mode_speaks_for_the_agent_without_an_appservice(bridged):
    bridged.setup()
    bot = bridged.home.hs.register()
    config = bridged.tmp / "bot.toml"
    config.write_text(f'[bridges.matrix]\nhomeserver = "{bridged.home.hs.url}"\n'
                      f'server_name = "{synapse.SERVER_NAME}"\nmode = "bot"\n'
                      f'bot_user = "{bot.user_id}"\npoll = 0.1\n')
    log = open(bridged.tmp / "bot.log", "ab")
    env = bridged.env() | {"MOOD_POLLER_MATRIX_BOT_TOKEN": bot.token}
    bridged.procs["bot"] = subprocess.Popen(
        [sys.executable, "-m", "poller", "--db", bridged.db, "bridge", "matrix", "--config",
         str(config)], stdout=log, stderr=log, env=env, cwd=bridged.tmp, start_new_session=True)
    members = lambda: bridged.person.call(  # noqa: E731
        "GET", f"/rooms/{bridged.room}/joined_members")["joined"]
    wait_for(lambda: bot.user_id in members(), what="the bot in the room")
    bridged.start_poller()
    asked = bridged.person.send(bridged.room, {"msgtype": "m.text", "body": "@helper hi there"})
    said = wait_for(lambda: [e for e in bridged.person.messages(bridged.room)
                             if e["sender"] == bot.user_id], what="the bot's reply")
    assert said[0]["content"]["body"] == "helper: helper answering mention"
    assert said[0]["content"]["m.relates_to"]["m.in_reply_to"]["event_id"] == asked
    assert len(wakes_seen(bridged.tmp)) == 1
    assert bot.token not in (bridged.tmp / "bot.log").read_text()


def test_a_mention_in_a_thread_is_answered_there_blocks_hidden_and_a_refusal_is_a_notice(bridged):
    bridged.setup("say", "Done,", "**as** asked.\n```settings\nverbosity: loud\n```")
    bridged.start_bridge()
    bridged.start_poller()
    root = bridged.person.send(bridged.room, {"msgtype": "m.text", "body": "a thread"})
    asked = bridged.mention("helper", "helper: in here please", **{
        "m.relates_to": {"rel_type": "m.thread", "event_id": root, "is_falling_back": True,
                         "m.in_reply_to": {"event_id": root}}})
    said = wait_for(lambda: len(bridged.said_by("helper")) >= 2 and bridged.said_by("helper"),
                    what="the reply and the notice")
    reply, notice = said[0]["content"], said[1]["content"]
    assert reply["msgtype"] == "m.text" and reply["body"] == "Done, **as** asked."
    assert "settings" not in reply["body"] and "<strong>as</strong>" in reply["formatted_body"]
    assert reply["m.relates_to"] == {"rel_type": "m.thread", "event_id": root,
                                     "is_falling_back": False,
                                     "m.in_reply_to": {"event_id": asked}}
    assert notice["msgtype"] == "m.notice" and "settings block was refused" in notice["body"]


def test_a_person_typing_in_the_room_is_the_moods_typing_signal(bridged):
    bridged.setup()
    bridged.start_bridge()
    assert typing_at(bridged.db) is None
    bridged.person.call("PUT", f"/rooms/{bridged.room}/typing/{bridged.person.user_id}",
                        {"typing": True, "timeout": 30000})
    wait_for(lambda: typing_at(bridged.db), what="the typing signal stored")


def typing_at(db_url: str):
    import sqlalchemy as sa

    engine = sa.create_engine(db_url)
    with engine.connect() as c:
        at = c.exec_driver_sql("SELECT typing_at FROM moods").scalar()
    engine.dispose()
    return at


def test_an_agent_invited_to_a_private_room_joins_it(bridged):
    bridged.setup()
    private = bridged.person.call("POST", "/createRoom", {"preset": "private_chat"})["room_id"]
    bridged.cli("mood", "add", "den", "--matrix-room", private)
    bridged.start_bridge()  # joins the public lobby; the den needs an invitation
    members = lambda: bridged.person.call(  # noqa: E731
        "GET", f"/rooms/{private}/joined_members")["joined"]
    assert bridged.agent_id("helper") not in members()
    bridged.person.call("POST", f"/rooms/{private}/invite", {"user_id": bridged.agent_id("helper")})
    wait_for(lambda: bridged.agent_id("helper") in members(), what="the agent in the den")


def test_a_silent_turn_says_nothing_and_marks_the_mention_read(bridged):
    bridged.setup("silent")
    bridged.start_bridge()
    bridged.start_poller()
    asked = bridged.mention("helper", "helper: anything?")
    wait_for(lambda: read_by(bridged, asked), what="the agent's read receipt")
    assert bridged.said_by("helper") == []
    assert [w["status"] for w in bridged.wakes()] == ["silent"]


def read_by(b: Bridged, event_id: str) -> bool:
    """Has the agent's read receipt for *event_id* reached the person's client?  (An
    incremental /sync: the homeserver may answer a repeated initial sync from a cache.)"""
    params = {"timeout": "0"} | ({"since": b.since} if getattr(b, "since", None) else {})
    data = b.person.call("GET", "/sync", **params)
    b.since = data["next_batch"]
    room = (data.get("rooms", {}).get("join", {}) or {}).get(b.room, {})
    for event in room.get("ephemeral", {}).get("events", []):
        if event["type"] == "m.receipt":
            readers = event["content"].get(event_id, {}).get("m.read", {})
            b.read = getattr(b, "read", False) or b.agent_id("helper") in readers
    return getattr(b, "read", False)


AWAY_CATALOG = """\
[[catalog]]
id = "creek_walk"
label = "out for a creek walk"
duration_minutes = [30, 30]
seed = "A short walk along the creek."
"""


def test_an_agent_out_on_an_activity_shows_it_in_its_presence(bridged):
    catalog = bridged.tmp / "activities.toml"
    catalog.write_text(AWAY_CATALOG)
    bridged.setup("say", "Off for a walk, back soon.\n```away\nactivity: creek_walk\n```")
    bridged.cli("agent", "set", "helper", "--activities", str(catalog))
    bridged.start_bridge()

    def presence(state: str):
        p = bridged.person.call("GET", f"/presence/{bridged.agent_id('helper')}/status")
        return p if p.get("presence") == state else None

    wait_for(lambda: presence("online"), what="the agent's user to show online")
    bridged.start_poller()
    bridged.mention("helper", "helper: take a break")
    shown = wait_for(lambda: presence("unavailable"), what="the agent's presence to show it out")
    assert shown["status_msg"].startswith("out for a creek walk, back about ")
    assert wait_for(lambda: bridged.said_by("helper"), what="its goodbye")[0]["content"][
        "body"].startswith("Off for a walk")


def ask_approval(b: Bridged, tool: str = "Bash", command: str = "make deploy"):
    """A turn of helper's in lobby, running, that asks to use *tool*: its notice is posted."""
    import datetime as dt

    from poller.models import Wake
    from poller.store import capabilities, db
    from poller.store.core import Store
    from poller.toolserver import approvals
    from poller import tokens

    store = Store(db.make_engine(b.db), tokens.counter())
    now = dt.datetime.now(dt.timezone.utc)
    with store.writing() as s:
        agent = store.agent("helper").id
        mood = store.mood("lobby").id
        w = Wake(agent_id=agent, mood_id=mood, kind="mention", tools="full", status="running",
                 created_at=now, started_at=now, text="", host="here", error="")
        s.add(w)
        s.flush()
        wake_id = w.id
    secret = capabilities.mint(store, wake_id, "full", now, dt.timedelta(hours=1))
    cap, _ = capabilities.find(store, secret, now)
    shown = approvals.shown(tool, {"command": command})
    asked = capabilities.ask(store, cap, tool, shown, approvals.notice(cap, tool, shown, 600), now)
    store.engine.dispose()
    return asked


def react(user, room: str, event_id: str, key: str) -> str:
    return user.send(room, {"m.relates_to": {"rel_type": "m.annotation", "event_id": event_id,
                                             "key": key}}, etype="m.reaction")


def test_a_check_mark_on_an_approval_notice_from_a_full_trust_person_approves_it(bridged):
    bridged.setup()
    bridged.start_bridge()
    asked = ask_approval(bridged)
    notice = wait_for(lambda: [e for e in bridged.said_by("helper")
                               if "asks to use Bash" in e["content"]["body"]],
                      what="the approval notice in the room")[0]
    assert notice["content"]["msgtype"] == "m.notice" and "make deploy" in notice["content"]["body"]
    # Someone the operators never added reacts first: ignored.
    stranger = bridged.home.hs.register()
    stranger.join(bridged.room)
    react(stranger, bridged.room, notice["event_id"], "✅")
    marker = bridged.person.send(bridged.room, {"msgtype": "m.text", "body": "looking at it"})
    wait_for(lambda: any(p["text"] == "looking at it" for p in posts(bridged)),
             what="a later message taken in")
    state = lambda: json.loads(bridged.cli("approvals", "--wake", str(asked.wake_id),
                                           "--json").out)[0]
    assert state()["status"] == "pending" and marker
    react(bridged.person, bridged.room, notice["event_id"], "✅\ufe0f")
    done = wait_for(lambda: (s := state())["status"] != "pending" and s, what="the approval")
    assert (done["status"], done["via"]) == ("approved", "matrix")
    assert done["decided_by"] == bridged.person.user_id[1:].split(":")[0]


def readme_bridging_commands() -> list[str]:
    """The commands of README's "Bridging Matrix" set-up block, as written."""
    text = (REPO / "README.md").read_text()
    section = text.split("## Bridging Matrix", 1)[1].split("\nWhat counts:", 1)[0]
    import re

    return [line.split("  #", 1)[0].strip() for line in
            re.findall(r"(?m)^    ((?:pip|mood-poller) .*)$", section)]


def test_the_readmes_bridging_commands_run_as_written(bridged):
    """README's set-up lines run as written, with this homeserver's names in place of
    example.org's and the test's files in place of /etc's; then a mention is answered."""
    from importlib import metadata

    b = bridged
    commands = readme_bridging_commands()
    assert commands[0] == "pip install '.[matrix]'"
    assert "matrix" in (metadata.metadata("mood-poller").get_all("Provides-Extra") or [])
    server = synapse.SERVER_NAME
    ada = b.home.hs.register(f"ada{secrets.token_hex(3)}")
    den = f"den{secrets.token_hex(3)}"
    den_room = ada.call("POST", "/createRoom", {"preset": "public_chat",
                                                "room_alias_name": den})["room_id"]
    lobby = ada.create_room()
    registration = b.tmp / "mood-poller.yaml"
    names = {"!abc123:example.org": lobby, "#den:example.org": f"#{den}:{server}",
             "@ada:example.org": ada.user_id, "/etc/mood-poller/config.toml": str(b.home.config),
             "/etc/matrix-synapse/mood-poller.yaml": str(registration),
             " [--legacy-mentions]": "", "example.org": server}
    # What the earlier sections did: the schema, an agent, a Mood to link.
    b.cli("init", "--answer-from-now")
    b.cli("agent", "add", "helper", "--command", agent_command(b.tmp, "reply"))
    b.cli("mood", "add", "den")
    env = dict(b.env(), MOOD_POLLER_DB=b.db)
    bindir = Path(sys.executable).parent
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    for line in commands[1:-1]:
        for old, new in names.items():
            line = line.replace(old, new)
        r = subprocess.run(line, shell=True, env=env, cwd=b.tmp, capture_output=True, text=True,
                           timeout=HANG_GUARD_S)
        assert r.returncode == 0, f"{line}: {r.stderr}"
    assert oct(registration.stat().st_mode & 0o777) == "0o600"
    last = commands[-1]
    for old, new in names.items():
        last = last.replace(old, new)
    import shlex

    assert shlex.split(last)[:3] == ["mood-poller", "bridge", "matrix"]
    b.start("bridge", *shlex.split(last)[1:])
    wait_for(lambda: b.agent_id("helper") in ada.call(
        "GET", f"/rooms/{lobby}/joined_members")["joined"], what="the agent joining the lobby")
    moods = {m["slug"]: m for m in json.loads(b.cli("mood", "list", "--json").out)}
    assert {"lobby", "den"} <= set(moods) and den_room
    b.start_poller()
    asked = ada.send(lobby, {"msgtype": "m.text", "body": "helper: are you there?",
                             "m.mentions": {"user_ids": [b.agent_id("helper")]}})
    reply = wait_for(lambda: [e for e in ada.messages(lobby)
                              if e["sender"] == b.agent_id("helper")], what="the reply")[0]
    assert reply["content"]["m.relates_to"]["m.in_reply_to"]["event_id"] == asked
