"""A commit wakes the loop at once: in process, across processes on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import threading

import pytest

from support.agents import agent_command
from support.machine import REPO
from support.runs import start_run, stop
from support.timeline import TimelineCli, at
from support.waiting import wait_for
from poller.store.bell import BELL, Doorbell
from poller.store import Store, db
from poller.store.core import insert_post

T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


@pytest.fixture
def bell():
    """The process's bell, silent at the start of the test."""
    BELL.sleep(0)
    yield BELL
    BELL.sleep(0)


def rung(bell: Doorbell) -> bool:
    return bell.pending()


def test_a_rung_bell_ends_the_next_sleep_once(bell):
    bell.ring()
    assert bell.sleep(60) is True  # would sleep a minute if the ring were lost
    assert bell.sleep(0) is False  # one ring, one early wake-up


def test_a_sleep_ends_when_another_thread_rings(bell):
    threading.Timer(0.05, bell.ring).start()
    assert bell.sleep(120) is True


def test_committing_a_post_rings_and_rolling_one_back_does_not(any_cli, bell):
    store = Store(db.make_engine(any_cli.db_url))
    mood = store.add_mood("lobby", "Lobby", T0)
    ada = store.add_person("ada", "full", T0)
    bell.sleep(0)
    with pytest.raises(RuntimeError), store.writing() as s:
        insert_post(s, store.counter, mood.id, ada.id, "hello", T0)
        s.flush()
        raise RuntimeError("changed my mind")
    assert not rung(bell)
    store.add_post("lobby", "ada", "hello", T0)
    assert rung(bell)
    store.engine.dispose()


SEND = """
import sys
from poller.store import Store, db
from poller.store.core import insert_post
import datetime as dt
import json
store = Store(db.make_engine(sys.argv[1]))
store.add_post("lobby", "ada", "from another process", dt.datetime(2026, 11, 30, 12, 1, tzinfo=dt.timezone.utc))
"""


def test_a_commit_in_another_process_rings_a_listening_loop(any_cli, bell):
    any_cli("mood", "add", "lobby")
    any_cli("person", "add", "ada")
    store = Store(db.make_engine(any_cli.db_url))
    from poller.cycle.loop import Poller
    from poller import config as config_mod

    poller = Poller(store, config_mod.Config())
    listener = poller.listen_for_commits()
    try:
        # PostgreSQL's listener rings once when its LISTEN is in place.
        wait_for(lambda: any_cli.db_url.startswith("sqlite") or bell.sleep(1),
                 what="the listener to be in place")
        assert not rung(bell)
        subprocess.run([sys.executable, "-c", SEND, any_cli.db_url], cwd=REPO, check=True)
        assert wait_for(lambda: bell.sleep(1), what="the other process's commit to ring")
    finally:
        listener.close()
        store.engine.dispose()


def test_run_answers_a_mention_at_once_though_its_interval_is_an_hour(any_cli, tmp_path):
    cli = TimelineCli(any_cli.db_url)
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "bot", "--command", agent_command(tmp_path, "reply"))
    cli("set", "cooldown", "0")
    cli("tick", "--now", at(0))  # the starting point: what was said before is history
    poller = start_run(any_cli.db_url, tmp_path, "--interval", "3600")
    try:
        for n, question in enumerate(["@bot first?", "@bot second?"], start=1):
            # The first may meet the loop's first cycle; the second finds it asleep
            # for an hour, so only the commit's ring can bring its answer.
            cli("post", "lobby", "--as", "ada", "--at", at(n), question)

            def replies():
                posts = json.loads(cli("posts", "lobby", "--json").out)
                return [p for p in posts if p["sender"] == "bot" and p["kind"] == "post"]

            wait_for(lambda: len(replies()) >= n, what=f"the agent's answer to mention {n}")
    finally:
        assert stop(poller) == 0


def test_a_burst_of_sigterms_stops_run_cleanly(any_cli, tmp_path):
    # A signal that arrives while the handler of the one before is ringing the bell
    # must not deadlock the loop it interrupted (a ring takes no lock).
    import os
    import signal as sig

    from support.waiting import HANG_GUARD_S

    cli = TimelineCli(any_cli.db_url)
    cli("mood", "add", "lobby")
    poller = start_run(any_cli.db_url, tmp_path, "--interval", "0.01")
    try:
        wait_for(lambda: "running every" in (tmp_path / "run.log").read_text(),
                 what="the poller to run")
        for _ in range(300):
            os.kill(poller.pid, sig.SIGTERM)
        assert poller.wait(HANG_GUARD_S) == 0
    finally:
        if poller.poll() is None:
            poller.kill()
