"""Posts per second: ingest, and processing by real cycles (detect + decide + compose + record).

50,000 posts across 1,000 Moods, 5 agents and 8 people (5% mention an agent,
the rest is chatter among people, 20 posts a second of simulated time),
ingested through ``Store.add_posts`` in batches of 2,000.  Processing is real
committing cycles: the posts arrive in slices of 2,500 and after each slice
one ``Poller.tick(now)`` reads them, decides every due (agent, Mood) pair,
composes and records the wakes, and "starts" their turns; between cycles
(outside the timing) every turn is claimed and settled as an agent answering
``<silent/>``, so the next cycle meets no agent still busy from the last.
Caps are raised (64 turns in flight, 600 wakes an hour per agent) and
considers are off, so the wakes are the mentions' and each decision of a
cycle is counted.

Figures: posts processed per second of cycle time (target >= 2,000, item 2
of issue 13), mentions answered per second of cycle time (the old
"processing >= 1,000" target, which counted mentions), and ingest posts/s
(target >= 2,000; bulk ingest is item 3).  Wall and CPU time (this process,
every thread) are both printed, for each run and as the median of the runs
(``--repeats``, 3 by default, each on a fresh database; ``--db URL`` is
emptied before each).

The floor, in the same run: after each cycle the wakes it recorded and the posts
they answer are read back and written again, as plain multi-row INSERTs into
empty copies of their tables (``floor_wakes``, ``floor_wake_posts``) and one
commit on a bare driver connection; ours is the cycle's CPU per wake, the floor
the writing's.  The statements of the cycles are counted with SQLAlchemy engine
events (``_common.Statements``); the last line is ``statements per wake: X``
(the median of the runs).  Run: ``python bench/throughput.py [--quick] [--db URL]
[--repeats N]``.
"""

from __future__ import annotations

import datetime as dt
import random

import _common
from _common import T0

import sqlalchemy as sa  # noqa: E402

from poller.cycle import loop  # noqa: E402
from poller import models

POSTS = 50_000
SLICE = 2_500
MOODS = 1_000
AGENTS = ("ada-bot", "bea-bot", "cy-bot", "dee-bot", "eve-bot")
PEOPLE = ("alice", "bob", "carol", "dmitri", "eun-ji", "farid", "gus", "hana")
INGEST_TARGET, POSTS_TARGET, MENTIONS_TARGET = 2_000, 2_000, 1_000


def make_posts(n: int, slugs: list[str], start: dt.datetime) -> list[tuple]:
    rng = random.Random(7)
    items = []
    for i in range(n):
        text = rng.choice(_common.CHATTER)
        if rng.random() < 0.05:
            text = f"@{rng.choice(AGENTS)} {text}"
        items.append((rng.choice(slugs), rng.choice(PEOPLE), text, start + dt.timedelta(seconds=i * 0.05)))
    return items


def verdict(value: float, target: float) -> str:
    return "met" if value >= target else "MISSED"


def answered(store) -> int:
    with store.reading() as s:
        return s.scalar(sa.select(sa.func.count()).select_from(models.WakeAnswer)) or 0


FLOOR_TABLES = (("wakes", "id"), ("wake_posts", "wake_id"))  # a wake and the posts it answers
FLOOR_CHUNK = 500  # rows a statement


def floor_tables(store) -> None:
    """Empty copies of the tables a wake is written to (``floor_wakes``, ``floor_wake_posts``)."""
    with store.engine.begin() as c:
        for table, _ in FLOOR_TABLES:
            c.exec_driver_sql(f"DROP TABLE IF EXISTS floor_{table}")
            c.exec_driver_sql(f"CREATE TABLE floor_{table} AS SELECT * FROM {table} WHERE 1 = 0")


def floor_write(store, after: int) -> tuple[float, int, int]:
    """The floor: the wakes a cycle recorded (ids above *after*) and the posts they answer,
    read back, then written again as plain multi-row INSERTs (one a table, per 500 rows)
    and one commit on a bare driver connection.  (CPU seconds of the writing, wakes,
    statements)."""
    with store.engine.connect() as c:
        rows = {table: [tuple(r) for r in c.exec_driver_sql(
                    f"SELECT * FROM {table} WHERE {key} > {after} ORDER BY {key}")]
                for table, key in FLOOR_TABLES}
    raw = store.engine.raw_connection()
    mark = "?" if store.dialect == "sqlite" else "%s"
    statements = 1  # the commit
    try:
        cur = raw.cursor()
        with _common.Timed() as t:
            for table, _ in FLOOR_TABLES:
                for i in range(0, len(rows[table]), FLOOR_CHUNK):
                    chunk = rows[table][i:i + FLOOR_CHUNK]
                    one = "(" + ", ".join([mark] * len(chunk[0])) + ")"
                    cur.execute(f"INSERT INTO floor_{table} VALUES " + ", ".join([one] * len(chunk)),
                                [v for row in chunk for v in row])
                    statements += 1
            raw.commit()
        cur.close()
    finally:
        raw.close()
    return t.cpu, len(rows["wakes"]), statements


def newest_wake(store) -> int:
    with store.reading() as s:
        return s.scalar(sa.select(sa.func.coalesce(sa.func.max(models.Wake.id), 0)))


def once(db: str | None, posts: int, moods: int) -> dict:
    """One run on a fresh database: ingest in slices, a real cycle after each slice."""
    url, store, cfg = _common.fresh_database(db)
    slugs = _common.build_world(store, moods, AGENTS, PEOPLE)
    store.set_settings({"parallel_turns": "64", "max_wakes_per_hour": "600",
                        "considers_per_hour": "0", "cooldown": "0"}, T0)
    launcher = _common.ListLauncher()
    poller = loop.Poller(store, cfg, launcher=launcher)
    poller.tick(T0)  # first run: cursors at 0, before any post
    floor_tables(store)
    statements = _common.Statements()
    items = make_posts(posts, slugs, T0 + dt.timedelta(seconds=1))
    out = dict(wall=0.0, cpu=0.0, ingest_wall=0.0, ingest_cpu=0.0, due=0, wakes=0, cycles=0,
               floor_cpu=0.0, floor_wakes=0, floor_statements=0,
               mentions=sum(1 for it in items if it[2].startswith("@")))
    for k in range(0, posts, SLICE):
        with _common.Timed() as ti:
            _common.ingest(store, items[k:k + SLICE], batch=2_000)
        out["ingest_wall"] += ti.wall
        out["ingest_cpu"] += ti.cpu
        now = items[min(k + SLICE, posts) - 1][3] + dt.timedelta(seconds=1)
        launcher.started.clear()
        before = newest_wake(store)
        with statements, _common.Timed() as t:
            report = poller.tick(now)
        assert report.started and report.quarantined == 0, report
        floor_cpu, floor_wakes, floor_statements = floor_write(store, before)
        out["floor_cpu"] += floor_cpu
        out["floor_wakes"] += floor_wakes
        out["floor_statements"] += floor_statements
        out["wall"] += t.wall
        out["cpu"] += t.cpu
        out["due"] += report.due
        out["wakes"] += len(report.wakes)
        out["cycles"] += 1
        _common.settle(store, launcher.started, now)  # the agents answer between cycles
    poller.release()
    out["answered"] = answered(store)
    out["statements"] = statements
    store.engine.dispose()
    return out


def main() -> None:
    p = _common.parser(__doc__)
    p.add_argument("--repeats", type=int, default=3, help="Runs, each on a fresh database.")
    args = p.parse_args()
    _common.quiet_logs()
    print(_common.header())
    posts, moods = (5_000, 100) if args.quick else (POSTS, MOODS)
    print(f"database: {args.db.split('://')[0] if args.db else 'sqlite'}; {posts:,} posts, "
          f"{moods:,} Moods, {len(AGENTS)} agents, {len(PEOPLE)} people; {args.repeats} runs")
    runs = []
    for k in range(args.repeats):
        r = once(args.db, posts, moods)
        runs.append(r)
        print(f"run {k + 1}: ingest {posts / r['ingest_wall']:,.0f} posts/s; processing "
              f"{r['cycles']} cycles {r['wall']:.2f} s wall, {r['cpu']:.2f} s CPU = "
              f"{posts / r['cpu']:,.0f} posts/s and {r['answered'] / r['cpu']:,.0f} mentions/s "
              f"by CPU; {r['answered']:,} of {r['mentions']:,} mentions answered, "
              f"{r['wakes']:,} wakes, {r['due']:,} pairs decided; {_common.load()}")

    def med(key: str) -> float:
        return _common.median(r[key] for r in runs)

    ingest = _common.median(posts / r["ingest_wall"] for r in runs)
    print(f"ingest: median {ingest:,.0f} posts/s by wall, "
          f"{_common.median(posts / r['ingest_cpu'] for r in runs):,.0f} by CPU "
          f"(target >= {INGEST_TARGET:,}: {verdict(ingest, INGEST_TARGET)})")
    by_cpu = _common.median(posts / r["cpu"] for r in runs)
    by_wall = _common.median(posts / r["wall"] for r in runs)
    print(f"processing: median {by_cpu:,.0f} posts/s by CPU ({med('cpu'):.2f} s), {by_wall:,.0f} "
          f"by wall ({med('wall'):.2f} s) (target >= {POSTS_TARGET:,}: {verdict(by_cpu, POSTS_TARGET)} "
          f"by CPU, {verdict(by_wall, POSTS_TARGET)} by wall)")
    m_cpu = _common.median(r["answered"] / r["cpu"] for r in runs)
    print(f"mentions: median {m_cpu:,.0f} answered/s by CPU, "
          f"{_common.median(r['answered'] / r['wall'] for r in runs):,.0f} by wall "
          f"(target >= {MENTIONS_TARGET:,}: {verdict(m_cpu, MENTIONS_TARGET)})")
    ours = _common.median(r["cpu"] / r["wakes"] for r in runs)
    floor = _common.median(r["floor_cpu"] / r["floor_wakes"] for r in runs)
    print(f"per wake: ours {ours * 1000:.2f} ms CPU of cycle (every step of the cycle, "
          f"divided by its wakes); floor {floor * 1000:.3f} ms CPU (the same wakes and the posts "
          f"they answer written as plain multi-row INSERTs + one commit a cycle); ratio "
          f"{_common.ratio(ours, floor):,.0f}x; {_common.load()}")
    best = min(runs, key=lambda r: r["statements"].total / r["wakes"])
    print(f"ours: {best['statements'].per(best['wakes'], 'wake')} in the cycles (the lowest "
          f"run); the floor: {best['floor_statements'] / best['floor_wakes']:.3f} "
          f"({best['floor_statements']} for its {best['floor_wakes']:,} wakes)")
    per_wake = _common.median(r["statements"].total / r["wakes"] for r in runs)
    print(f"statements per wake: {per_wake:.2f}")


if __name__ == "__main__":
    main()
