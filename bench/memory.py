"""Peak memory of ``mood-poller run`` (and of one ``tick``) over 1 M posts.

Builds 10,000 Moods with 3 agents (that reply at once) and 4 people, and
1,000,000 posts of history spread over the last 30 days, inserted in bulk
(Core executemany in chunks of 50,000; every chatter line's tokens counted
once).  Then starts ``mood-poller run`` at the shipped interval (1 s) as a
subprocess and ingests 20,000 new posts while it runs (``Store.add_posts``,
batches of 2,000), one in 500 mentioning an agent, so the poller reads them
all, decides, composes wakes that catch up on a Mood with 100 posts of
history each, and settles the replies; listening is ``mentions`` everywhere
so the chatter does not start thousands of turns on this machine.  When
everything is read and settled it prints the run process's peak resident
memory (``VmHWM``) and its RSS then, the CPU it used, and finally runs one
``mood-poller tick`` over the same store and prints that process's peak RSS.
Target: <= 200 MB.   Run: ``python bench/memory.py [--quick] [--db URL]``.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import _common
from _common import REPO
from latency import cpu_of, first_cycle_done, start_run

import sqlalchemy as sa  # noqa: E402

from poller import models, text  # noqa: E402
from poller.models import Owed, Participant, Post, Wake  # noqa: E402

MOODS = 10_000
HISTORY = 1_000_000
LIVE = 20_000
AGENTS = ("ada-bot", "bea-bot", "cy-bot")
PEOPLE = ("alice", "bob", "carol", "dmitri")
TARGET_MB = 200
INTERVAL = 1.0  # the shipped `run --interval`


def peak_kb(pid: int, field: str = "VmHWM") -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def build_history(store, moods: int, posts: int) -> float:
    """*posts* old posts by people across the Moods, in bulk; returns the seconds it took."""
    started = time.monotonic()
    counts = store.counter.count_many(_common.CHATTER)
    with store.reading() as s:
        people = list(s.scalars(sa.select(Participant.id).where(Participant.kind == "person")))
        mood_ids = list(s.scalars(sa.select(models.Mood.id)))[:moods]
    rng = random.Random(5)
    start = text.utcnow() - dt.timedelta(days=30)
    step = dt.timedelta(days=29) / posts
    chunk = 50_000
    for k in range(0, posts, chunk):
        rows = []
        for i in range(k, min(posts, k + chunk)):
            line = rng.randrange(len(_common.CHATTER))
            rows.append(dict(mood_id=mood_ids[i % len(mood_ids)], sender_id=rng.choice(people),
                             created_at=start + step * i, text=_common.CHATTER[line],
                             kind="post", reply_to=None, tokens=counts[line]))
        with store.writing() as s:
            s.connection().execute(sa.insert(Post.__table__), rows)
    return time.monotonic() - started


def settled(store) -> tuple[bool, int]:
    with store.reading() as s:
        cursor = s.get(models.Cursor, "posts")
        newest = s.scalar(sa.select(sa.func.max(Post.id)).where(Post.kind == "post")) or 0
        busy = s.scalar(sa.select(sa.func.count()).select_from(Wake)
                        .where(Wake.status.in_(("pending", "running"))))
        wakes = s.scalar(sa.select(sa.func.count()).select_from(Wake))
        owed = s.scalar(sa.select(sa.func.count()).select_from(Owed))
    return (cursor is not None and cursor.value >= newest and busy == 0 and owed == 0), wakes


def live_posts(store, slugs: list[str], n: int) -> float:
    """Ingest *n* posts now, in batches; returns the seconds it took."""
    rng = random.Random(3)
    started = time.monotonic()
    for i in range(0, n, 2_000):
        now = text.utcnow()
        batch = []
        for j in range(i, min(n, i + 2_000)):
            body = rng.choice(_common.CHATTER)
            if j % 500 == 499:
                body = f"@{rng.choice(AGENTS)} {body}"
            batch.append((rng.choice(slugs), rng.choice(PEOPLE), body,
                          now + dt.timedelta(microseconds=j - i)))
        store.add_posts(batch)
    return time.monotonic() - started


TICK = ("import resource, sys\n"
        "from poller.cli import main\n"
        "try:\n    main(['tick', '--wait'])\nexcept SystemExit:\n    pass\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n")


def one_tick(url: str) -> int:
    """Peak RSS (kB) of one `mood-poller tick --wait` over the store, as the process saw it."""
    env = dict(os.environ, PYTHONPATH=str(REPO), MOOD_POLLER_DB=url)
    env.pop("MOOD_POLLER_CONFIG", None)
    done = subprocess.run([sys.executable, "-c", TICK], env=env, cwd=REPO, text=True,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
    return int(done.stderr.strip().splitlines()[-1])


def main() -> None:
    args = _common.parser(__doc__).parse_args()
    print(_common.facts())
    moods, history, live = (1_000, 100_000, 4_000) if args.quick else (MOODS, HISTORY, LIVE)
    url, store, _ = _common.database(args.db)
    print(f"database: {store.dialect}; {moods:,} Moods, {len(AGENTS)} agents, {history:,} posts "
          f"of history, {live:,} live")
    slugs = _common.build_world(store, moods, AGENTS, PEOPLE, command="echo ok")
    store.set_settings({"listening": "mentions", "parallel_turns": "64",
                        "max_wakes_per_hour": "600", "cooldown": "0"}, text.utcnow())
    built = build_history(store, moods, history)
    print(f"history: {history:,} posts inserted in bulk in {built:.1f} s")
    proc = start_run(url, INTERVAL)
    done = False
    try:
        deadline = time.monotonic() + 120
        while not first_cycle_done(store):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the poller did not start its first cycle (see run.log)")
            time.sleep(0.1)
        cpu0 = cpu_of(proc.pid)
        ingest_s = live_posts(store, slugs, live)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            done, wakes = settled(store)
            if done:
                break
            time.sleep(0.5)
        peak, now_rss, cpu = peak_kb(proc.pid), peak_kb(proc.pid, "VmRSS"), cpu_of(proc.pid) - cpu0
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
    print(f"live: {live:,} posts ingested in {ingest_s:.1f} s while `run --interval {INTERVAL:g}` "
          f"ran; {wakes} wakes settled{'' if done else ' (NOT all settled)'}; run used {cpu:.1f} s CPU "
          f"for them; {_common.load()}")
    mb = peak / 1024
    print(f"run process: peak RSS {mb:.1f} MB, RSS at the end {now_rss / 1024:.1f} MB "
          f"(target <= {TARGET_MB} MB: {'met' if mb <= TARGET_MB else 'MISSED'})")
    tick_mb = one_tick(url) / 1024
    print(f"one `tick --wait` over the same store: peak RSS {tick_mb:.1f} MB "
          f"(target <= {TARGET_MB} MB: {'met' if tick_mb <= TARGET_MB else 'MISSED'})")
    store.engine.dispose()


if __name__ == "__main__":
    main()
