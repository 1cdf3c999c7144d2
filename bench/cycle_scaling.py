"""How a cycle's cost grows: with the number of Moods and posts (idle), and per due pair (busy).

**Idle** (target: flat).  For 10, 1,000 and 10,000 Moods (3 agents, 4 people)
and 2 or 20 posts per Mood (and 200 at 1,000 Moods), the posts are made
*after* the poller's first cycle and read by it, so every (agent, Mood) has a
listener with its timers; considers are off, so the first cycle that finds
them due skips them and the next due time is the quiet look, 50 minutes on.
Then ``Poller.tick(now)`` cycles in which nothing is new and nothing is due
are timed (wall and CPU).  Target: median CPU per tick at the largest size /
the smallest <= 3.

**Busy** (target: <= 0.3 ms CPU per due pair, issue 13).  The issue's case:
1,000 Moods x 20 agents with ``listening = mentions`` everywhere; a person
posts in every Mood, so every listener arms a consider that comes due and is
skipped by the setting (20,000 due pairs, each decided and recorded).  Three
rounds (the second and third repeat the first's decisions, which only move
``last_at`` and ``count``); the median CPU per due pair of the deciding cycle
is the figure.  The issue measured it over 1 M posts; the decision reads no
posts, so here each Mood has 1 post per round (``bench/memory.py`` runs at
1 M posts).  ``--busy-moods N`` scales it.

Run: ``python bench/cycle_scaling.py [--quick] [--db URL] [--only idle|busy]``.
"""

from __future__ import annotations

import datetime as dt
import statistics

import _common
from _common import T0

from poller.cycle import loop  # noqa: E402

SIZES = ((10, 2), (1_000, 2), (10_000, 2), (10, 20), (1_000, 20), (10_000, 20), (1_000, 200))
QUICK_SIZES = ((10, 2), (100, 2), (1_000, 2), (10, 20), (1_000, 20))
AGENTS = ("ada-bot", "bea-bot", "cy-bot")
PEOPLE = ("alice", "bob", "carol", "dmitri")
TICKS = 40
TARGET = 3.0
BUSY_MOODS, BUSY_AGENTS, ROUNDS = 1_000, 20, 3
BUSY_TARGET_MS = 0.3


def chatter(slugs: list[str], per_mood: int, start: dt.datetime, people=PEOPLE) -> list[tuple]:
    return [(slug, people[(i + j) % len(people)], _common.CHATTER[(i + j) % 10],
             start + dt.timedelta(milliseconds=j))
            for j in range(per_mood) for i, slug in enumerate(slugs)]


def idle(url: str | None, moods: int, per_mood: int, ticks: int) -> tuple[float, float]:
    """Median (CPU, wall) seconds of a tick with nothing new and nothing due."""
    _, store, cfg = _common.fresh_database(url)
    slugs = _common.build_world(store, moods, AGENTS, PEOPLE)
    store.set_settings({"considers_per_hour": "0"}, T0)
    poller = loop.Poller(store, cfg, launcher=_common.ListLauncher())
    poller.tick(T0)  # the first run: cursors start here, before the posts
    _common.ingest(store, chatter(slugs, per_mood, T0 + dt.timedelta(seconds=1)), batch=5_000)
    poller.tick(T0 + dt.timedelta(seconds=30))  # reads them: listeners and timers
    poller.tick(T0 + dt.timedelta(seconds=60))  # the considers are due and skipped
    cpu, wall = [], []
    for k in range(ticks):
        with _common.Timed() as t:
            report = poller.tick(T0 + dt.timedelta(seconds=90 + k))
        assert report.started and not report.wakes and not report.due, report
        cpu.append(t.cpu)
        wall.append(t.wall)
    poller.release()
    store.engine.dispose()
    return statistics.median(cpu), statistics.median(wall)


def busy(url: str | None, moods: int, agents: int) -> list[tuple[int, float, float]]:
    """(due pairs, CPU s, wall s) of the deciding cycle of each round."""
    _, store, cfg = _common.fresh_database(url)
    handles = [f"bot{i:02d}" for i in range(agents)]
    slugs = _common.build_world(store, moods, handles, PEOPLE)
    store.set_setting("listening", "mentions", T0)
    poller = loop.Poller(store, cfg, launcher=_common.ListLauncher())
    poller.tick(T0)
    out = []
    for r in range(ROUNDS):
        start = T0 + dt.timedelta(minutes=10 * r + 1)
        _common.ingest(store, chatter(slugs, 1, start), batch=5_000)
        poller.tick(start + dt.timedelta(seconds=1))  # read: every listener arms a consider
        with _common.Timed() as t:
            report = poller.tick(start + dt.timedelta(seconds=60))
        assert not report.wakes and report.due == moods * agents, report
        out.append((report.due, t.cpu, t.wall))
    poller.release()
    store.engine.dispose()
    return out


def main() -> None:
    p = _common.parser(__doc__)
    p.add_argument("--only", choices=("idle", "busy"))
    p.add_argument("--busy-moods", type=int)
    args = p.parse_args()
    _common.quiet_logs()
    print(_common.facts())
    print(f"database: {args.db.split('://')[0] if args.db else 'sqlite'}")
    if args.only != "busy":
        sizes = QUICK_SIZES if args.quick else SIZES
        ticks = 15 if args.quick else TICKS
        medians = {}
        for n, per_mood in sizes:
            cpu, wall = idle(args.db, n, per_mood, ticks)
            medians[(n, per_mood)] = cpu
            print(f"idle: {n:>6,} Moods x {len(AGENTS)} agents, {per_mood:>3} posts each: median "
                  f"tick {cpu * 1000:.2f} ms CPU, {wall * 1000:.2f} ms wall ({ticks} ticks)")
        ratio = max(medians.values()) / min(medians.values())
        print(f"idle: largest / smallest median CPU per tick: {ratio:.2f} "
              f"(target <= {TARGET:g}: {'met' if ratio <= TARGET else 'MISSED'}); {_common.load()}")
    if args.only != "idle":
        moods = args.busy_moods or (100 if args.quick else BUSY_MOODS)
        rounds = busy(args.db, moods, BUSY_AGENTS)
        for k, (due, cpu, wall) in enumerate(rounds):
            print(f"busy round {k + 1}: {due:,} due pairs, all skipped by listening=mentions: "
                  f"{cpu:.2f} s CPU, {wall:.2f} s wall = {cpu / due * 1000:.3f} ms CPU per pair")
        per_pair = statistics.median(cpu / due for due, cpu, _ in rounds) * 1000
        print(f"busy: {moods:,} Moods x {BUSY_AGENTS} agents: median {per_pair:.3f} ms CPU per due "
              f"pair (target <= {BUSY_TARGET_MS}: {'met' if per_pair <= BUSY_TARGET_MS else 'MISSED'}); "
              f"{_common.load()}")


if __name__ == "__main__":
    main()
