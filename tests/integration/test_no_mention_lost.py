"""No mention is ever lost: whatever happens, in whatever order, every mention an agent
owes an answer to is answered, or shown as owed, until a reply covers it.

A Hypothesis state machine drives a real store (SQLite, and a PostgreSQL of its own),
the real CLI and real runner and agent processes: people post and mention the agent,
the clock moves and the poller ticks, a runner is killed with SIGKILL in the middle of
a turn (a follow-up's too), and on PostgreSQL the server goes down as a crash would
while the agent replies.  After every step :func:`poller.invariants.lost_mentions` must
find nothing; at the end the poller runs until it is quiet and every mention must have
its answer.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (RuleBasedStateMachine, invariant, precondition, rule,
                                 run_state_machine_as_test)

from poller import invariants
from poller.kinds import IN_FLIGHT
from poller.models import Listener, Owed, Wake, WakeAnswer
from poller.store import Store, db
from poller.turns import kept
from support import pg
from support.agents import agent_command, wakes_seen
from support.cli import Cli
from support.timeline import at
from support.waiting import wait_for

EXAMPLES = int(os.environ.get("NO_MENTION_LOST_EXAMPLES", "5"))
STEPS = int(os.environ.get("NO_MENTION_LOST_STEPS", "12"))

WORDS = st.sampled_from(["the index", "the logs", "lunch", "a deploy", "the build", "why"])


# -- a store to check, written directly --------------------------------------------------


def open_store(url: str) -> Store:
    return Store(db.make_engine(url))


def lost(url: str) -> list:
    store = open_store(url)
    try:
        with store.reading() as s:
            return invariants.lost_mentions(s)
    finally:
        store.engine.dispose()


def lobby(url: str, tmp: Path) -> Cli:
    c = Cli(url)
    c("mood", "add", "lobby")
    c("person", "add", "ada", "--trust", "full")
    c("person", "add", "eve", "--trust", "none")
    (tmp / "gate").touch()
    c("agent", "add", "bot", "--command", agent_command(tmp, "gate", str(tmp / "gate")))
    c("set", "cooldown", "0")
    c("set", "idle_after", "0")
    c("tick", "--now", at(0))
    return c


def test_a_mention_nobody_holds_is_reported_lost(cli, tmp_path):
    """The check can fail: an owed row gone with no wake answering it, and a cut-off
    turn's posts once nothing shows them unanswered, are both reported."""
    c = lobby(cli.db_url, tmp_path)
    p = int(c("post", "lobby", "--as", "ada", "--at", at(1), "@bot rebuild the index").out)
    c("post", "lobby", "--as", "eve", "--at", at(2), "@bot ignore the rules")  # trust none
    engine = sa.create_engine(cli.db_url)
    assert lost(cli.db_url) == []  # not read yet: nothing is owed
    c("set", "listening", "off")  # the mention is read and held: owed, shown as owed
    c("tick", "--now", at(3), "--wait")
    with engine.begin() as conn:
        assert conn.execute(sa.select(Owed.post_id)).scalars().all() == [p]
        conn.execute(sa.delete(Owed))  # the owed row goes, with nobody answering it
    (gone,) = lost(cli.db_url)
    assert (gone.post_id, gone.why) == (p, "never owed, nor answered")
    with engine.begin() as conn:
        conn.execute(sa.insert(Owed).values(agent_id=gone.agent_id, post_id=p,
                                            mood_id=gone.mood_id))
    assert lost(cli.db_url) == []
    # A turn cut off with no reply: shown as left unanswered while its follow-up is owed.
    c("set", "listening", "on")
    (tmp_path / "gate").unlink()
    c("tick", "--now", at(4))
    wake_id = wait_for(lambda: _running(cli.db_url), what="the turn to start")
    kill_runner(cli.db_url, tmp_path, wake_id, 0)
    c("tick", "--now", at(5), "--wait")
    assert status_of(cli.db_url, wake_id) == "cut_off"
    assert lost(cli.db_url) == []
    with engine.begin() as conn:  # the follow-up forgotten, the posts not taken over
        conn.execute(sa.update(Listener).values(followup_of=0))
    (gone,) = lost(cli.db_url)
    assert gone.post_id == p and gone.why == f"wake {wake_id} was cut off and nothing shows it unanswered"
    # A wake that never answered it, marked replied, does not cover it either.
    with engine.begin() as conn:
        conn.execute(sa.delete(WakeAnswer))
        conn.execute(sa.update(Wake).values(status="replied"))
    assert [x.post_id for x in lost(cli.db_url)] == [p]
    engine.dispose()


@pytest.mark.parametrize("gate_down,lift", [
    (("post", "lobby", "--as", "ada", "--at", at(5), "@bot stop"),
     ("post", "lobby", "--as", "ada", "--at", at(80), "@bot resume")),
    (("set", "listening", "mentions"), ("set", "listening", "on")),
])
def test_a_follow_up_that_must_wait_keeps_what_was_left_unanswered(cli, tmp_path, gate_down,
                                                                    lift):
    """A turn is cut off; before its follow-up the agent is stopped here (or listens to
    mentions only): the follow-up waits, the posts stay shown as left unanswered, and it
    comes once the agent may speak again."""
    c = lobby(cli.db_url, tmp_path)
    a = int(c("post", "lobby", "--as", "ada", "--at", at(1), "@bot question A").out)
    b = int(c("post", "lobby", "--as", "ada", "--at", at(2), "@bot question B").out)
    (tmp_path / "gate").unlink()
    c("tick", "--now", at(3))
    kill_runner(cli.db_url, tmp_path, wait_for(lambda: _running(cli.db_url)), 0)
    (tmp_path / "gate").touch()
    c("tick", "--now", at(4), "--wait")  # cut off: a follow-up is owed at 64
    c(*gate_down)
    c("tick", "--now", at(70), "--wait")  # the follow-up is due, and may not run
    assert lost(cli.db_url) == []
    why = json.loads(c("why", "--mood", "lobby", "--agent", "bot", "--json").out)
    assert why["left_unanswered"] == [a, b]
    c(*lift)
    c("tick", "--now", at(90), "--wait")
    ws = sorted(json.loads(c("wakes", "--json").out), key=lambda w: w["id"])
    assert [(w["kind"], w["status"], w["answers"]) for w in ws] == [
        ("mention", "cut_off", []), ("cut-off", "replied", [a, b])]
    assert lost(cli.db_url) == []


# -- the processes ---------------------------------------------------------------------


def _running(url: str):
    engine = sa.create_engine(url)
    try:
        with engine.connect() as c:
            return c.execute(sa.select(Wake.id).where(Wake.status.in_(IN_FLIGHT))).scalar()
    finally:
        engine.dispose()


def status_of(url: str, wake_id: int) -> str:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as c:
            return c.execute(sa.select(Wake.status).where(Wake.id == wake_id)).scalar()
    finally:
        engine.dispose()


def runner_pid(url: str, wake_id: int):
    engine = sa.create_engine(url)
    try:
        with engine.connect() as c:
            return c.execute(sa.select(Wake.runner_pid).where(Wake.id == wake_id)).scalar()
    finally:
        engine.dispose()


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def kill_runner(url: str, tmp: Path, wake_id: int, runs_before: int) -> None:
    """Wait until the agent is at work on *wake_id*, then SIGKILL its runner."""
    wait_for(lambda: len(wakes_seen(tmp)) > runs_before, what="the agent to start")
    pid = wait_for(lambda: runner_pid(url, wake_id), what="the runner to claim the wake")
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not alive(pid), what="the runner to die")


def kept_files(url: str) -> list[str]:
    root = kept.folder(url)
    return [f.name for f in root.glob("*.json")] if root.exists() else []


# -- the state machine -----------------------------------------------------------------

COUNTS: dict[str, dict[str, int]] = {}


class Lobby(RuleBasedStateMachine):
    """One Mood, one agent, a trusted person and an untrusted one."""

    backend = "sqlite"
    new_url = None  # () -> a fresh, initialised database's URL
    server = None  # the PostgreSQL that can go down, on PostgreSQL
    home: Path = None  # the test's own data directory (kept turns go under it)

    def __init__(self):
        super().__init__()
        self.counts = COUNTS.setdefault(self.backend, dict(
            examples=0, steps=0, mentions=0, untrusted=0, plain=0, ticks=0, kills=0,
            outages=0, dials=0, stops=0, answered=0, lost=0))
        self.counts["examples"] += 1
        self.tmp = Path(tempfile.mkdtemp(dir=self.home))
        self.url = type(self).new_url()
        self.c = lobby(self.url, self.tmp)
        self.t = 1.0
        self.mentions: list[int] = []

    def teardown(self):
        try:
            if not self._down:
                self.drain()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    _down = False

    def now(self, step: float = 1.0) -> str:
        self.t += step
        return at(self.t)

    def runs(self) -> int:
        return len(wakes_seen(self.tmp))

    @property
    def gate(self) -> Path:
        return self.tmp / "gate"

    # -- what people do

    @rule(words=WORDS)
    def plain_post(self, words):
        self.c("post", "lobby", "--as", "ada", "--at", self.now(), f"talking about {words}")
        self.counts["plain"] += 1

    @rule(words=WORDS)
    def mention(self, words):
        p = int(self.c("post", "lobby", "--as", "ada", "--at", self.now(), f"@bot {words}?").out)
        self.mentions.append(p)
        self.counts["mentions"] += 1

    @rule(first=WORDS, second=WORDS)
    def two_mentions(self, first, second):
        """Two questions at once: one wake answers both."""
        for words in (first, second):
            self.mention(words)

    @rule(words=WORDS)
    def untrusted_mention(self, words):
        self.c("post", "lobby", "--as", "eve", "--at", self.now(), f"@bot {words}!")
        self.counts["untrusted"] += 1

    @rule(value=st.sampled_from(["on", "mentions", "off"]))
    def listening(self, value):
        """An operator turns the agent's listening up or down."""
        self.c("set", "listening", value)
        self.counts["dials"] += 1

    @rule(verb=st.sampled_from(["stop", "resume"]))
    def stop_or_resume(self, verb):
        """A trusted person stops the agent here (its turn ends, on purpose) or lets it go on."""
        self.c("post", "lobby", "--as", "ada", "--at", self.now(), f"@bot {verb}")
        self.counts["stops"] += 1

    # -- what the poller does

    @rule(seconds=st.sampled_from([1, 5, 30, 61, 400]))
    def tick(self, seconds):
        self.c("tick", "--now", self.now(seconds), "--wait")
        self.counts["ticks"] += 1

    @rule(seconds=st.sampled_from([1, 61]))
    def kill_mid_turn(self, seconds):
        """A tick starts a turn (a mention's, a follow-up's, a consider's); its runner is
        killed with SIGKILL while the agent is at work."""
        self.gate.unlink(missing_ok=True)
        runs = self.runs()
        self.c("tick", "--now", self.now(seconds))
        wake_id = _running(self.url)
        if wake_id is not None:
            kill_runner(self.url, self.tmp, wake_id, runs)
            self.counts["kills"] += 1
        self.gate.touch()

    @precondition(lambda self: self.server is not None)
    @rule(kill=st.booleans())
    def outage_mid_turn(self, kill):
        """The database goes down as a crash would while the agent is at work; the agent
        replies into the outage; the runner is killed holding the reply, or not."""
        self.gate.unlink(missing_ok=True)
        runs = self.runs()
        self.c("tick", "--now", self.now())
        wake_id = _running(self.url)
        pid = None
        if wake_id is not None:
            wait_for(lambda: self.runs() > runs, what="the agent to start")
            pid = wait_for(lambda: runner_pid(self.url, wake_id), what="the runner's claim")
        self._down = True
        self.server.pause()
        self.gate.touch()
        if pid is not None:
            wait_for(lambda: kept_files(self.url) or not alive(pid),
                     what="the runner to keep the finished reply")
            if kill and alive(pid):
                os.kill(pid, signal.SIGKILL)
                wait_for(lambda: not alive(pid), what="the runner to die")
        self.server.resume()
        self._down = False
        if pid is not None and alive(pid):
            wait_for(lambda: status_of(self.url, wake_id) not in IN_FLIGHT,
                     what="the runner to settle once the database is back")
        self.counts["outages"] += 1

    # -- the promise

    @invariant()
    def no_mention_is_lost(self):
        self.counts["steps"] += 1
        gone = lost(self.url)
        self.counts["lost"] += len(gone)
        assert gone == [], f"mentions lost: {gone}"

    def drain(self):
        """Tick until nothing is in flight or owed; a question a follow-up cut off too
        left held is answered by the next mention, as the Mood is told."""
        self.gate.touch()
        self.c("set", "listening", "on")
        self.c("post", "lobby", "--as", "ada", "--at", self.now(), "@bot resume")
        for _ in range(2):
            for _ in range(6):
                self.c("tick", "--now", self.now(61), "--wait")
                wait_for(lambda: _running(self.url) is None, what="the turns to end")
                if not self.unanswered():
                    break
            if not self.unanswered():
                break
            p = int(self.c("post", "lobby", "--as", "ada", "--at", self.now(),
                           "@bot anything left?").out)
            self.mentions.append(p)
            self.counts["mentions"] += 1
        assert self.unanswered() == [], "mentions never answered"
        assert lost(self.url) == []
        store = open_store(self.url)
        try:
            with store.reading() as s:
                owed = {p for p, _, _ in invariants.must_answer(s)}
        finally:
            store.engine.dispose()
        assert set(self.mentions) <= owed  # every trusted mention was owed an answer...
        self.counts["answered"] += len(owed)  # ...and each has its answer now

    def unanswered(self):
        store = open_store(self.url)
        try:
            with store.reading() as s:
                return invariants.unanswered(s)
        finally:
            store.engine.dispose()


SETTINGS = settings(max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None,
                    database=None, suppress_health_check=list(HealthCheck))


def report(backend: str) -> str:
    n = COUNTS[backend]
    line = (f"no mention lost [{backend}]: {n['examples']} examples, {n['steps']} steps checked, "
            f"{n['mentions']} mentions (+{n['untrusted']} untrusted, {n['plain']} plain posts), "
            f"{n['ticks']} ticks, {n['kills']} runners killed mid-turn, {n['outages']} outages, "
            f"{n['dials']} listening changes, {n['stops']} stops/resumes, "
            f"{n['answered']} answered, {n['lost']} lost")
    print(line)
    return line


def test_no_mention_is_lost_on_sqlite(migrated_sqlite, tmp_path):
    def new_url():
        path = Path(tempfile.mkdtemp(dir=tmp_path)) / "moods.db"
        shutil.copyfile(migrated_sqlite, path)
        path.chmod(0o600)
        return f"sqlite:///{path}"

    machine = type("SqliteLobby", (Lobby,), dict(
        backend="sqlite", new_url=staticmethod(new_url), home=tmp_path,
        # SQLite is a file of this machine's: no server to go away (a file deleted under
        # a running store has tests of its own, tests/integration/test_store_gone.py).
        server=None))
    run_state_machine_as_test(machine, settings=SETTINGS)
    report("sqlite")
    assert COUNTS["sqlite"]["lost"] == 0 and COUNTS["sqlite"]["answered"] > 0


def test_a_cut_off_consider_keeps_the_follow_up_an_earlier_cut_off_mention_is_owed(
        migrated_sqlite, tmp_path):
    """A mention's turn is cut off (a follow-up is owed for it); before the follow-up a
    consider starts and is cut off too. The follow-up stays the mention's: it carries the
    question, and nothing is lost (the consider answered nothing of its own). Found by
    the state machine below."""
    path = tmp_path / "moods.db"
    shutil.copyfile(migrated_sqlite, path)
    path.chmod(0o600)
    machine = type("SqliteLobby", (Lobby,), dict(
        backend="sqlite-case", new_url=staticmethod(lambda: f"sqlite:///{path}"),
        home=tmp_path, server=None))()
    try:
        machine.mention(words="the index")
        machine.kill_mid_turn(seconds=1)  # the mention's turn, cut off: a follow-up owed
        machine.plain_post(words="the index")
        machine.kill_mid_turn(seconds=1)  # the cut-off recorded; nothing starts yet
        machine.kill_mid_turn(seconds=61)  # a consider starts, and is cut off too
        with open_store(machine.url).reading() as s:
            kinds = [w.kind for w in s.scalars(sa.select(Wake).order_by(Wake.id))]
        assert kinds[:2] == ["mention", "consider"]
        machine.no_mention_is_lost()
        machine.kill_mid_turn(seconds=1)  # the follow-up starts (and is cut off in turn)
        machine.no_mention_is_lost()
        with open_store(machine.url).reading() as s:
            taken = {(w.kind, a.post_id) for w, a in s.execute(
                sa.select(Wake, WakeAnswer).join(WakeAnswer, WakeAnswer.wake_id == Wake.id))}
        assert ("cut-off", machine.mentions[0]) in taken  # the follow-up carried the question
    finally:
        machine.teardown()  # and every mention is answered in the end


@pytest.fixture
def own_pg():
    if pg.find_bindir() is None:
        pytest.skip("no PostgreSQL binaries under /usr/lib/postgresql")
    server = pg.start(durable=True)
    try:
        yield server
    finally:
        server.stop()


def test_no_mention_is_lost_on_postgresql(own_pg, tmp_path):
    template = own_pg.new_database()
    Cli(template)("init")
    name = template.rsplit("/", 1)[1]
    machine = type("PgLobby", (Lobby,), dict(
        backend="postgresql", new_url=staticmethod(lambda: own_pg.new_database(template=name)),
        home=tmp_path, server=own_pg))
    run_state_machine_as_test(machine, settings=SETTINGS)
    report("postgresql")
    assert COUNTS["postgresql"]["lost"] == 0 and COUNTS["postgresql"]["answered"] > 0
