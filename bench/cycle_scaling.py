"""Does a cycle with nothing new cost the same at 10 and at 10,000 Moods?

For 10, 1,000 and 10,000 Moods (3 agents, 20 posts per Mood, all older than
the 12-hour window so no quiet clocks start), runs the first cycle, then
times ``Poller.tick(now)`` cycles in which nothing is new and nothing is due.
Prints the median time per tick at each size and the ratio 10,000 / 10.
Target: ratio <= 3.   Run: ``python bench/cycle_scaling.py [--quick]``.
"""

from __future__ import annotations

import datetime as dt
import time

import _common
from _common import T0

from poller import loop  # noqa: E402

SIZES = (10, 1_000, 10_000)
AGENTS = ("ada-bot", "bea-bot", "cy-bot")
PEOPLE = ("alice", "bob", "carol", "dmitri")
POSTS_PER_MOOD = 20
TICKS = 60
TARGET = 3.0


def one_size(moods: int, ticks: int) -> float:
    _, store, cfg = _common.database()
    slugs = _common.build_world(store, moods, AGENTS, PEOPLE)
    old = T0 - dt.timedelta(days=2)
    items = [(slug, PEOPLE[(i + j) % len(PEOPLE)], _common.CHATTER[(i + j) % 10],
              old + dt.timedelta(seconds=j))
             for i, slug in enumerate(slugs) for j in range(POSTS_PER_MOOD)]
    _common.ingest(store, items, batch=5_000)
    poller = loop.Poller(store, cfg)
    poller.tick(T0)  # the first run: cursors start at the newest post
    for k in range(5):  # warm caches and connections
        poller.tick(T0 + dt.timedelta(seconds=1 + k))
    times = []
    for k in range(ticks):
        now = T0 + dt.timedelta(seconds=10 + k)
        started = time.perf_counter()
        report = poller.tick(now)
        times.append(time.perf_counter() - started)
        assert report.started and not report.wakes and report.posts_read == 0, report
    poller.release()
    store.engine.dispose()
    return _common.median(times)


def main() -> None:
    args = _common.parser(__doc__).parse_args()
    _common.quiet_logs()
    print(_common.machine())
    sizes = (10, 100, 1_000) if args.quick else SIZES
    ticks = 20 if args.quick else TICKS
    medians = {}
    for n in sizes:
        medians[n] = one_size(n, ticks)
        print(f"{n:>6} Moods x {len(AGENTS)} agents, {POSTS_PER_MOOD} posts each: "
              f"median tick {medians[n] * 1000:.2f} ms ({ticks} ticks, nothing new)")
    ratio = medians[sizes[-1]] / medians[sizes[0]]
    verdict = "met" if ratio <= TARGET else "MISSED"
    print(f"ratio {sizes[-1]:,} / {sizes[0]:,} Moods: {ratio:.2f} (target <= {TARGET:g}: {verdict})")


if __name__ == "__main__":
    main()
