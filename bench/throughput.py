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
every thread) are both printed; medians of the per-cycle rates are given
beside the totals.  Run: ``python bench/throughput.py [--quick] [--db URL]``.
"""

from __future__ import annotations

import datetime as dt
import random

import _common
from _common import T0

import sqlalchemy as sa  # noqa: E402

from poller import loop, models  # noqa: E402

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
        return s.scalar(sa.select(sa.func.count()).select_from(models.WakePost)) or 0


def main() -> None:
    args = _common.parser(__doc__).parse_args()
    _common.quiet_logs()
    print(_common.facts())
    posts, moods = (5_000, 100) if args.quick else (POSTS, MOODS)
    url, store, cfg = _common.database(args.db)
    print(f"database: {store.dialect}; {posts:,} posts, {moods:,} Moods, {len(AGENTS)} agents, "
          f"{len(PEOPLE)} people")
    slugs = _common.build_world(store, moods, AGENTS, PEOPLE)
    store.set_settings({"parallel_turns": "64", "max_wakes_per_hour": "600",
                        "considers_per_hour": "0", "cooldown": "0"}, T0)
    launcher = _common.ListLauncher()
    poller = loop.Poller(store, cfg, launcher=launcher)
    poller.tick(T0)  # first run: cursors at 0, before any post

    items = make_posts(posts, slugs, T0 + dt.timedelta(seconds=1))
    mentions = sum(1 for it in items if it[2].startswith("@"))
    wall = cpu = ingest_wall = ingest_cpu = 0.0
    per_cycle, due = [], 0
    for k in range(0, posts, SLICE):
        with _common.Timed() as ti:
            _common.ingest(store, items[k:k + SLICE], batch=2_000)
        ingest_wall, ingest_cpu = ingest_wall + ti.wall, ingest_cpu + ti.cpu
        now = items[min(k + SLICE, posts) - 1][3] + dt.timedelta(seconds=1)
        launcher.started.clear()
        with _common.Timed() as t:
            report = poller.tick(now)
        assert report.started and report.quarantined == 0, report
        wall, cpu = wall + t.wall, cpu + t.cpu
        due += report.due
        per_cycle.append((report.posts_read / t.cpu, t.wall, t.cpu, len(report.wakes), report.due))
        _common.settle(store, launcher.started, now)  # the agents answer between cycles
    poller.release()
    done = answered(store)
    rate = posts / ingest_wall
    print(f"ingest: {posts:,} posts in {ingest_wall:.2f} s wall, {ingest_cpu:.2f} s CPU = "
          f"{rate:,.0f} posts/s (target >= {INGEST_TARGET:,}: {verdict(rate, INGEST_TARGET)})")
    print(f"processing: {posts:,} posts in {len(per_cycle)} committing cycles: {wall:.2f} s wall, "
          f"{cpu:.2f} s CPU")
    print(f"  posts/s: {posts / wall:,.0f} by wall, {posts / cpu:,.0f} by CPU; median cycle "
          f"{_common.median(r for r, *_ in per_cycle):,.0f} by CPU "
          f"(target >= {POSTS_TARGET:,}: {verdict(posts / cpu, POSTS_TARGET)} by CPU, "
          f"{verdict(posts / wall, POSTS_TARGET)} by wall)")
    print(f"  mentions/s: {done:,} of {mentions:,} mentions answered, {done / wall:,.0f} by wall, "
          f"{done / cpu:,.0f} by CPU (target >= {MENTIONS_TARGET:,}: {verdict(done / cpu, MENTIONS_TARGET)})")
    wakes = sum(w for *_, w, _ in per_cycle)
    print(f"  wakes recorded: {wakes:,}; (agent, Mood) pairs decided: {due:,}; median cycle "
          f"{_common.median(c for _, _, c, *_ in per_cycle) * 1000:.0f} ms CPU, "
          f"{_common.median(w for _, w, *_ in per_cycle) * 1000:.0f} ms wall; {_common.load()}")
    store.engine.dispose()


if __name__ == "__main__":
    main()
