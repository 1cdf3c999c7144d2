"""From post to reply: how long does a mention wait for its answer?

Starts ``mood-poller run --interval 0.2`` as a subprocess on a fresh SQLite
database, with one agent that replies at once (``echo``), then posts 200
mentions of it, round-robin across 50 Moods, at a steady rate (default 2 a
second: each turn runs in its own runner process, and this machine's CPUs
bound how many can start per second).  Latency is the reply post's time minus
the mention post's time, both as recorded in the database.  Prints p50, p90,
p99 and the maximum.  Target: p99 <= 1 s.
Run: ``python bench/latency.py [--quick] [--rate PER_SECOND]``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import _common
from _common import REPO

import sqlalchemy as sa  # noqa: E402

from poller import models, text  # noqa: E402
from poller.models import Post, Wake, WakePost  # noqa: E402

MENTIONS = 200
MOODS = 50
TARGET_P99 = 1.0


def start_run(url: str) -> subprocess.Popen:
    """``mood-poller run --interval 0.2`` on *url*; its log goes to run.log beside the database
    (a pipe nobody reads would fill up and stop the poller)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), MOOD_POLLER_DB=url)
    env.pop("MOOD_POLLER_CONFIG", None)
    log = open(Path(url.removeprefix("sqlite:///")).with_name("run.log"), "w") \
        if url.startswith("sqlite:///") else subprocess.DEVNULL
    return subprocess.Popen([sys.executable, "-m", "poller", "run", "--interval", "0.2"],
                            env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log)


def wait_for_first_cycle(store, proc, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with store.reading() as s:
            if s.get(models.Cursor, "posts") is not None:
                return
        if proc.poll() is not None:
            raise SystemExit(f"run exited with {proc.returncode}: see run.log beside the database")
        time.sleep(0.1)
    raise SystemExit("run did not start its first cycle")


def latencies(store, posted: list[int]) -> list[float]:
    """Seconds from each answered mention to the reply of the wake that answered it."""
    reply = sa.orm.aliased(Post)
    q = (sa.select(Post.created_at, reply.created_at)
         .select_from(WakePost)
         .join(Post, Post.id == WakePost.post_id)
         .join(Wake, Wake.id == WakePost.wake_id)
         .join(reply, reply.id == Wake.reply_post_id)
         .where(WakePost.post_id.in_(posted)))
    with store.reading() as s:
        return [(r - p).total_seconds() for p, r in s.execute(q)]


def breakdown(store, posted: list[int]) -> dict[str, float]:
    """Median seconds of each leg: post -> wake recorded -> runner claimed it -> settled."""
    q = (sa.select(Post.created_at, Wake.created_at, Wake.started_at, Wake.finished_at)
         .select_from(WakePost).join(Post, Post.id == WakePost.post_id)
         .join(Wake, Wake.id == WakePost.wake_id)
         .where(WakePost.post_id.in_(posted), Wake.finished_at.is_not(None)))
    with store.reading() as s:
        rows = s.execute(q).all()
    legs = {"post -> wake recorded (waiting for a cycle)": [(w - p).total_seconds() for p, w, _, _ in rows],
            "wake recorded -> runner started the turn": [(st - w).total_seconds() for _, w, st, _ in rows],
            "turn started -> reply settled": [(f - st).total_seconds() for _, _, st, f in rows]}
    return {k: _common.median(v) for k, v in legs.items() if v}


def main() -> None:
    p = _common.parser(__doc__)
    p.add_argument("--rate", type=float, default=2.0, help="Mentions per second (default 2).")
    p.add_argument("--mentions", type=int, default=MENTIONS, help=f"How many (default {MENTIONS}).")
    args = p.parse_args()
    print(_common.machine())
    mentions = 20 if args.quick else args.mentions
    url, store, _ = _common.database(args.db)
    slugs = _common.build_world(store, MOODS, ["echo-bot"], ["alice"], command="echo ok")
    store.set_settings({"parallel_turns": "64", "max_wakes_per_hour": "600", "cooldown": "0"},
                       text.utcnow())
    proc = start_run(url)
    try:
        wait_for_first_cycle(store, proc)
        posted = []
        started = time.monotonic()
        for i in range(mentions):
            target = started + i / args.rate
            time.sleep(max(0.0, target - time.monotonic()))
            posted.append(store.add_post(slugs[i % MOODS], "alice", f"@echo-bot question {i}?",
                                         text.utcnow()).id)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done = latencies(store, posted)
            if len(done) == len(posted):
                break
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    done = latencies(store, posted)
    print(f"{len(posted)} mentions at {args.rate:g}/s across {MOODS} Moods; {len(done)} answered")
    if not done:
        raise SystemExit("no replies")
    p50, p90, p99 = (_common.percentile(done, q) for q in (50, 90, 99))
    verdict = "met" if p99 <= TARGET_P99 and len(done) == len(posted) else "MISSED"
    print(f"post -> reply: p50 {p50:.3f} s, p90 {p90:.3f} s, p99 {p99:.3f} s, max {max(done):.3f} s "
          f"(target p99 <= {TARGET_P99:g} s: {verdict})")
    for leg, seconds in breakdown(store, posted).items():
        print(f"  median {leg}: {seconds:.3f} s")
    store.engine.dispose()


if __name__ == "__main__":
    main()
