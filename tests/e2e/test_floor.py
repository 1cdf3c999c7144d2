"""One floor per Mood: of several agents that could speak unasked at once, one does.

The law's floor rule and the initiative order as tables (pure), then two and
three agents through real turns on SQLite and PostgreSQL.

Here, the part run as processes; the rest sits under the same name in the other
layers.
"""

from __future__ import annotations


from support.agents import agent_command
from support.waiting import wait_for


# -- real turns ----------------------------------------------------------------------------------


def test_two_pollers_on_postgresql_never_give_one_mood_two_floor_holders(pg_url, tmp_path):
    import signal
    import time

    import sqlalchemy as sa

    from support.cli import Cli
    from poller.store import Store, db
    from poller.text import utcnow
    from support.runs import start_run, stop

    cli = Cli(pg_url)
    cli("init")
    moods = [f"m{i}" for i in range(4)]
    for m in moods:
        cli("mood", "add", m)
    cli("person", "add", "ada", "--trust", "full")
    for name in ("alpha", "beta", "gamma"):
        # a turn lasts a while, so a floor taken is held across both pollers' cycles
        cli("agent", "add", name, "--command", agent_command(tmp_path, "slow", "0.4"))
    for key, value in (("cooldown", "0"), ("consider_after", "0"), ("considers_per_hour", "60"),
                       ("max_wakes_per_hour", "600")):
        cli("set", key, value)
    cli("tick")
    # Two pollers share one timeline only on the wall clock.
    pollers = [start_run(pg_url, tmp_path, name=f"p{i}", now=None) for i in range(2)]
    engine = db.make_engine(pg_url)
    store = Store(engine)
    last: dict[str, int] = {}
    try:
        for round_ in range(3):
            for m in moods:
                last[m] = store.add_post(m, "ada", f"thoughts on round {round_}?", utcnow()).id
            time.sleep(0.3)

        def everyone_considered_the_last_post():
            with engine.connect() as c:
                rows = c.execute(sa.text(
                    "SELECT m.slug, p.handle, l.looked_id FROM listeners l "
                    "JOIN moods m ON m.id = l.mood_id JOIN participants p ON p.id = l.agent_id"
                )).all()
                busy = c.execute(sa.text(
                    "SELECT count(*) FROM wakes WHERE status IN ('pending', 'running')")).scalar()
            looked = {(m, a): seen for m, a, seen in rows}
            done = all((looked.get((m, a)) or 0) >= last[m]
                       for m in moods for a in ("alpha", "beta", "gamma"))
            return done and busy == 0

        wait_for(everyone_considered_the_last_post, timeout=600,
                 what="every agent to consider the last post of every Mood")
    finally:
        for p in pollers:
            p.send_signal(signal.SIGTERM)
        for p in pollers:
            stop(p)
    with engine.connect() as c:
        turns = c.execute(sa.text(
            "SELECT mood_id, agent_id, started_at, finished_at FROM wakes "
            "WHERE kind IN ('consider', 'quiet', 'arrival') ORDER BY mood_id, started_at")).all()
        deferred = c.execute(sa.text(
            "SELECT count(*) FROM decisions WHERE reason LIKE 'floor-taken-by-%'")).scalar()
    engine.dispose()
    assert all(t.started_at is not None and t.finished_at is not None for t in turns)
    overlaps = [(a, b) for a, b in zip(turns, turns[1:])
                if a.mood_id == b.mood_id and b.started_at < a.finished_at]
    assert overlaps == []  # in each Mood, one unprompted turn at a time
    assert deferred > 0  # and the floor was contended
    logs = [(tmp_path / f"p{i}.log").read_text() for i in range(2)]
    assert all(l.count("running every") == 1 and "Traceback" not in l for l in logs)
