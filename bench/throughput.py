"""Posts per second: ingest (with token counting) and processing (detect + decide + compose).

50,000 posts across 1,000 Moods and 5 agents (about 5% mention an agent, the
rest is chatter among people), ingested through ``Store.add_posts`` in
batches of 2,000, then processed by dry-run cycles (``Poller.tick(now,
dry_run=True)``: detect, decide and compose every wake, record nothing).

A cycle drains the backlog (``scan.BATCH`` posts per transaction) and
then evaluates every due (agent, Mood) pair once, composing a wake for each
that the law lets through; a dry run does all of that in one transaction and
rolls it back, so the per-agent caps it meets are the ones a real cycle would
meet.  The caps are raised here (64 turns in flight, 600 wakes an hour per
agent) so composing is part of what is measured.  Should a dry run stop short
of the end, the harness moves the posts cursor past what it read and runs
another.

Targets on SQLite: ingest >= 2,000 posts/s, processing >= 1,000 posts/s.
Run: ``python bench/throughput.py [--quick] [--db URL]``.
"""

from __future__ import annotations

import datetime as dt
import random
import time

import _common
from _common import T0

from poller import loop, models  # noqa: E402

POSTS = 50_000
MOODS = 1_000
AGENTS = ("ada-bot", "bea-bot", "cy-bot", "dee-bot", "eve-bot")
PEOPLE = ("alice", "bob", "carol", "dmitri", "eun-ji", "farid", "gus", "hana")
INGEST_TARGET, PROCESS_TARGET = 2_000, 1_000


def make_posts(n: int, slugs: list[str], start: dt.datetime) -> list[tuple]:
    rng = random.Random(7)
    items = []
    for i in range(n):
        text = rng.choice(_common.CHATTER)
        if rng.random() < 0.05:
            text = f"@{rng.choice(AGENTS)} {text}"
        items.append((rng.choice(slugs), rng.choice(PEOPLE), text, start + dt.timedelta(seconds=i * 0.05)))
    return items


def main() -> None:
    args = _common.parser(__doc__).parse_args()
    _common.quiet_logs()
    print(_common.machine())
    posts, moods = (5_000, 100) if args.quick else (POSTS, MOODS)
    url, store, cfg = _common.database(args.db)
    print(f"database: {store.dialect}; {posts:,} posts, {moods:,} Moods, {len(AGENTS)} agents")
    slugs = _common.build_world(store, moods, AGENTS, PEOPLE)
    # Lift the per-agent caps so the cycles compose as many wakes as the law allows
    # (with the defaults, 8 parallel turns per agent, most mentions would simply be held).
    store.set_settings({"parallel_turns": "64", "max_wakes_per_hour": "600"}, T0)
    poller = loop.Poller(store, cfg)
    poller.tick(T0)  # first run: cursors at 0, before any post
    poller.release()

    items = make_posts(posts, slugs, T0 + dt.timedelta(seconds=1))
    started = time.perf_counter()
    ids = _common.ingest(store, items, batch=2_000)
    ingest_s = time.perf_counter() - started
    ingest_rate = posts / ingest_s
    print(f"ingest: {posts:,} posts in {ingest_s:.2f} s = {ingest_rate:,.0f} posts/s "
          f"(target >= {INGEST_TARGET:,}: {'met' if ingest_rate >= INGEST_TARGET else 'MISSED'})")

    now = items[-1][3] + dt.timedelta(seconds=60)  # every consider has settled
    read = wakes = cycles = due = 0
    spent = 0.0
    while read < len(ids):
        started = time.perf_counter()
        report = poller.tick(now, dry_run=True)
        spent += time.perf_counter() - started
        cycles += 1
        wakes += len(report.wakes)
        due += report.due
        read += report.posts_read
        if report.posts_read == 0:
            raise SystemExit(f"a dry run read nothing at post {read}: {report}")
        with store.writing() as s:  # what the real cycle would have committed for its scan
            cur = s.get(models.Cursor, "posts")
            cur.value = ids[read - 1]
    rate = posts / spent
    print(f"processing: {posts:,} posts in {cycles} dry-run cycles, {spent:.2f} s = {rate:,.0f} posts/s "
          f"(target >= {PROCESS_TARGET:,}: {'met' if rate >= PROCESS_TARGET else 'MISSED'})")
    print(f"  wakes composed: {wakes:,}; (agent, Mood) pairs evaluated: {due:,}; "
          f"mean cycle {spent / cycles * 1000:.0f} ms")
    store.engine.dispose()


if __name__ == "__main__":
    main()
