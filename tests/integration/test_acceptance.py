"""The real CLI as a subprocess: `run` under signals, kill -9, two pollers at once.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import datetime as dt
import json

import sqlalchemy as sa

from support.agents import agent_command
from support.timeline import T0, TimelineCli, at
from support.waiting import HANG_GUARD_S, wait_for
from support.acceptance import wakes
from support.world import cli  # noqa: F401  (a fixture)

# A poller started with ``--now`` keeps its own clock from that instant on
# (and hands it to its runners); other commands run at T0 unless told a time.
# No test reads the wall clock's date, except where two pollers must share
# one timeline.


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
