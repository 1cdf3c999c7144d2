"""A commit wakes the loop at once: in process, across processes on SQLite and PostgreSQL.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

import pytest

from support.machine import REPO
from support.waiting import wait_for
from poller.store.bell import Doorbell
from poller.store import Store, db
from poller.store.core import insert_post
from support.bell import bell  # noqa: F401  (fixtures)

T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


def rung(bell: Doorbell) -> bool:
    return bell.pending()


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


