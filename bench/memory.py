"""Peak memory of ``mood-poller run`` over 10,000 Moods and 100,000 posts.

Builds 10,000 Moods with 3 agents (that reply at once) and 4 people, starts
``mood-poller run --interval 0.2`` as a subprocess, then ingests 100,000
posts while it runs, in batches of 2,000.  One post in 2,000 mentions an
agent, so the poller also composes wakes (each catching up on its Mood's
history) and settles replies; listening is ``mentions`` everywhere so the
chatter does not start tens of thousands of turns on this machine.  When the
poller has read every post and every turn has settled, prints the run
process's peak resident memory (``VmHWM`` in ``/proc/PID/status``; the
runners are separate processes, their peak is printed apart).
Target: <= 200 MB.   Run: ``python bench/memory.py [--quick]``.
"""

from __future__ import annotations

import datetime as dt
import random
import signal
import subprocess
import time
from pathlib import Path

import _common
from latency import start_run, wait_for_first_cycle

import sqlalchemy as sa  # noqa: E402

from poller import models, text  # noqa: E402
from poller.models import Owed, Post, Wake  # noqa: E402

MOODS = 10_000
POSTS = 100_000
AGENTS = ("ada-bot", "bea-bot", "cy-bot")
PEOPLE = ("alice", "bob", "carol", "dmitri")
TARGET_MB = 200


def peak_kb(pid: int, field: str = "VmHWM") -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def children_of(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def settled(store) -> tuple[bool, int, int]:
    with store.reading() as s:
        cursor = s.get(models.Cursor, "posts")
        newest = s.scalar(sa.select(sa.func.max(Post.id)).where(Post.kind == "post")) or 0
        busy = s.scalar(sa.select(sa.func.count()).select_from(Wake)
                        .where(Wake.status.in_(("pending", "running"))))
        wakes = s.scalar(sa.select(sa.func.count()).select_from(Wake))
        owed = s.scalar(sa.select(sa.func.count()).select_from(Owed))
    return (cursor is not None and cursor.value >= newest and busy == 0 and owed == 0), wakes, busy


def ingest_retrying(store, batch) -> float:
    """Ingest *batch*; when the poller holds SQLite's write lock past the busy
    timeout, try again.  Returns the seconds spent waiting beyond the first try."""
    started = time.monotonic()
    while True:
        try:
            store.add_posts(batch)
            return time.monotonic() - started if time.monotonic() - started > 10 else 0.0
        except sa.exc.OperationalError as exc:
            if "locked" not in str(exc):
                raise


def main() -> None:
    args = _common.parser(__doc__).parse_args()
    print(_common.machine())
    moods, posts = (1_000, 10_000) if args.quick else (MOODS, POSTS)
    url, store, _ = _common.database(args.db)
    slugs = _common.build_world(store, moods, AGENTS, PEOPLE, command="echo ok")
    store.set_settings({"listening": "mentions", "parallel_turns": "64",
                        "max_wakes_per_hour": "600", "cooldown": "0"}, text.utcnow())
    proc = start_run(url)
    runner_peak = 0
    locked_s = 0.0
    try:
        wait_for_first_cycle(store, proc)
        rng = random.Random(3)
        started = time.monotonic()
        for i in range(0, posts, 2_000):
            now = text.utcnow()
            batch = []
            for j in range(i, min(posts, i + 2_000)):
                body = rng.choice(_common.CHATTER)
                if j % 2_000 == 1_999:
                    body = f"@{rng.choice(AGENTS)} {body}"
                batch.append((rng.choice(slugs), rng.choice(PEOPLE), body,
                              now + dt.timedelta(microseconds=j - i)))
            locked_s = max(locked_s, ingest_retrying(store, batch))
            for child in children_of(proc.pid):
                runner_peak = max(runner_peak, peak_kb(child, "VmRSS"))
        ingest_s = time.monotonic() - started
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            done, wakes, busy = settled(store)
            for child in children_of(proc.pid):
                runner_peak = max(runner_peak, peak_kb(child, "VmRSS"))
            if done:
                break
            time.sleep(0.5)
        peak = peak_kb(proc.pid)
        now_rss = peak_kb(proc.pid, "VmRSS")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
    print(f"{moods:,} Moods, {len(AGENTS)} agents, {posts:,} posts ingested in {ingest_s:.1f} s "
          f"while running; {wakes} wakes settled{'' if done else ' (NOT all settled)'}")
    mb = peak / 1024
    print(f"run process: peak RSS {mb:.1f} MB, RSS at the end {now_rss / 1024:.1f} MB "
          f"(target <= {TARGET_MB} MB: {'met' if mb <= TARGET_MB else 'MISSED'})")
    if locked_s:
        print(f"ingest waited up to {locked_s:.1f} s for SQLite's write lock held by a cycle "
              f"(past the 10 s busy timeout; retried)")
    print(f"largest runner seen: {runner_peak / 1024:.1f} MB RSS (one per turn, separate processes)")
    store.engine.dispose()


if __name__ == "__main__":
    main()
