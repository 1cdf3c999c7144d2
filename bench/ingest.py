"""Bulk ingest: posts per second through ``Store.add_posts`` (what ``post --stdin-jsonl``,
the API's group commit and bridges use).

50,000 posts (``--quick``: 5,000) across 1,000 Moods from 10 people, one in
ten naming one of 5 agents, in batches of 2,000 (one transaction each): the
text checked, its tokens counted, the posts inserted and their mentions
recorded.  Median of 3 runs, each on a fresh database; CPU time (this
process) beside wall time.  Targets: >= 5,000 posts/s on SQLite, >= 3,000/s
on PostgreSQL.  Run: ``python bench/ingest.py [--quick] [--db URL]``.
"""

from __future__ import annotations

import os
import time

import _common
from _common import T0

import datetime as dt  # noqa: E402

TARGETS = {"sqlite": 5_000, "postgresql": 3_000}
AGENTS = [f"agent{i}" for i in range(5)]
PEOPLE = [f"person{i}" for i in range(10)]


def items(n: int, slugs: list[str]) -> list:
    out = []
    for i in range(n):
        body = _common.CHATTER[i % len(_common.CHATTER)]
        if i % 10 == 0:
            body = f"@{AGENTS[i % len(AGENTS)]} {body}"
        out.append((slugs[i % len(slugs)], PEOPLE[i % len(PEOPLE)], body,
                    T0 + dt.timedelta(seconds=i)))
    return out


def one_run(db: str | None, n: int) -> tuple[float, float, str]:
    url, store, _ = _common.database(db)
    slugs = _common.build_world(store, 1_000, AGENTS, PEOPLE)
    batch = items(n, slugs)
    store.counter.count("warm up")  # the tokenizer loads once per process, not per batch
    wall, cpu = time.perf_counter(), time.process_time()
    _common.ingest(store, batch, batch=2_000)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    dialect = store.dialect
    store.engine.dispose()
    return wall, cpu, dialect


def main() -> None:
    p = _common.parser(__doc__)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    print(_common.machine(), f"load average {os.getloadavg()[0]:.2f}")
    n = 5_000 if args.quick else 50_000
    runs = [one_run(args.db, n) for _ in range(args.repeats)]
    dialect = runs[0][2]
    by_wall = _common.median(n / w for w, _, _ in runs)
    by_cpu = _common.median(n / c for _, c, _ in runs)
    target = TARGETS.get(dialect, 3_000)
    print(f"{dialect}: {n:,} posts in batches of 2,000, median of {len(runs)}: "
          f"{by_wall:,.0f} posts/s by wall, {by_cpu:,.0f} by CPU "
          f"(target >= {target:,}: {'met' if by_wall >= target else 'MISSED'})")


if __name__ == "__main__":
    main()
