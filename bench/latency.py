"""From a post's commit to the agent's stdin: how long does a mention wait for its turn?

The agent is ``sh -c 'read -r _; date +%s.%N; cat >/dev/null'``: it prints the
instant the first line of its wake reached its stdin, and that is its reply.
Latency is that instant minus the instant ``add_post`` returned in this
process (the commit), both on this machine's clock.  The poller runs at the
shipped interval (1 s), so a post must not wait for the next look:

* ``--mode across`` (default): ``mood-poller run`` as a separate process; this
  process's commits reach it as a datagram (SQLite) or ``NOTIFY`` (PostgreSQL).
  Target p99 <= 1 s.
* ``--mode in-process``: ``Poller.run`` in a thread of this process (as
  ``serve --with-poller`` runs it); the commit rings the process's bell.
  Target p99 <= 250 ms.

Posts 200 mentions (``--quick``: 20), round-robin across 50 Moods, at 2 a
second.  Prints p50/p90/p99/max, the poller's CPU time per mention, and the
machine.  Run: ``python bench/latency.py [--quick] [--mode across|in-process]
[--db URL] [--interval S]``.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import _common
from _common import REPO

import sqlalchemy as sa  # noqa: E402

from poller import models, text  # noqa: E402
from poller.models import Post, Wake  # noqa: E402

MENTIONS = 200
MOODS = 50
TARGETS = {"across": 1.0, "in-process": 0.25}
AGENT = "sh -c 'read -r _; date +%s.%N; cat >/dev/null'"


def start_run(url: str, interval: float) -> subprocess.Popen:
    """``mood-poller run`` on *url*; its log goes to run.log beside the database when
    there is one (a pipe nobody reads would fill up and stop the poller)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), MOOD_POLLER_DB=url)
    env.pop("MOOD_POLLER_CONFIG", None)
    log = open(Path(url.removeprefix("sqlite:///")).with_name("run.log"), "w") \
        if url.startswith("sqlite:///") else subprocess.DEVNULL
    return subprocess.Popen([sys.executable, "-m", "poller", "run", "--interval", str(interval)],
                            env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log)


def cpu_of(pid: int) -> float:
    """User + system CPU seconds of a live process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def first_cycle_done(store) -> bool:
    with store.reading() as s:
        return s.get(models.Cursor, "posts") is not None


def replies(store, posted: dict[int, float]) -> dict[int, float]:
    """Seconds from each answered mention's commit to its agent reading the wake."""
    q = (sa.select(models.WakeAnswer.post_id, Post.text)
         .select_from(models.WakeAnswer)
         .join(Wake, Wake.id == models.WakeAnswer.wake_id)
         .join(Post, Post.id == Wake.reply_post_id)
         .where(models.WakeAnswer.post_id.in_(list(posted))))
    with store.reading() as s:
        out = {}
        for post_id, reply in s.execute(q):
            try:
                out[post_id] = float(reply.strip()) - posted[post_id]
            except ValueError:
                pass
        return out


def main() -> None:
    p = _common.parser(__doc__)
    p.add_argument("--mode", choices=sorted(TARGETS), default="across")
    p.add_argument("--interval", type=float, default=1.0, help="The poller's interval (shipped: 1 s).")
    p.add_argument("--rate", type=float, default=2.0, help="Mentions per second (default 2).")
    p.add_argument("--mentions", type=int, default=MENTIONS, help=f"How many (default {MENTIONS}).")
    args = p.parse_args()
    print(_common.machine(), f"load average {os.getloadavg()[0]:.2f}")
    mentions = 20 if args.quick else args.mentions
    url, store, cfg = _common.database(args.db)
    slugs = _common.build_world(store, MOODS, ["echo-bot"], ["alice"], command=AGENT)
    store.set_settings({"parallel_turns": "64", "max_wakes_per_hour": "600", "cooldown": "0"},
                       text.utcnow())

    stop = threading.Event()
    if args.mode == "across":
        proc = start_run(url, args.interval)
        poller_cpu = lambda: cpu_of(proc.pid)  # noqa: E731
        alive = lambda: proc.poll() is None  # noqa: E731
    else:
        from poller.store import bell
        from poller.clock import SYSTEM
        from poller.cycle.loop import Poller

        _common.quiet_logs()
        poller = Poller(store, cfg)  # launch = auto: turns run in threads of this process
        thread = threading.Thread(target=poller.run, args=(args.interval, stop, SYSTEM),
                                  daemon=True)
        thread.start()
        poller_cpu = time.process_time  # the whole process: the poller and the posting loop
        alive = thread.is_alive
    try:
        deadline = time.monotonic() + 60
        while not first_cycle_done(store):
            if not alive() or time.monotonic() > deadline:
                raise SystemExit("the poller did not start its first cycle (see run.log)")
            time.sleep(0.05)
        time.sleep(args.interval * 1.5)  # the loop is now asleep, between two looks
        cpu_start = poller_cpu()
        posted: dict[int, float] = {}
        started = time.monotonic()
        for i in range(mentions):
            target = started + i / args.rate
            time.sleep(max(0.0, target - time.monotonic()))
            post_id = store.add_post(slugs[i % MOODS], "alice", f"@echo-bot question {i}?",
                                     text.utcnow()).id
            posted[post_id] = time.time()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(replies(store, posted)) < len(posted):
            time.sleep(0.2)
        cpu_used = poller_cpu() - cpu_start
    finally:
        if args.mode == "across":
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        else:
            stop.set()
            bell.BELL.ring()
            thread.join(30)
    done = list(replies(store, posted).values())
    target = TARGETS[args.mode]
    print(f"mode {args.mode}, {store.dialect}, interval {args.interval:g} s: {len(posted)} mentions "
          f"at {args.rate:g}/s across {MOODS} Moods; {len(done)} reached the agent")
    if not done:
        raise SystemExit("no turns")
    p50, p90, p99 = (_common.percentile(done, q) for q in (50, 90, 99))
    verdict = "met" if p99 <= target and len(done) == len(posted) else "MISSED"
    print(f"commit -> agent's stdin: p50 {p50 * 1000:.0f} ms, p90 {p90 * 1000:.0f} ms, "
          f"p99 {p99 * 1000:.0f} ms, max {max(done) * 1000:.0f} ms "
          f"(target p99 <= {target * 1000:.0f} ms: {verdict})")
    who = "the `run` process" if args.mode == "across" else "this process (poller and poster)"
    print(f"CPU of {who} while posting and answering: {cpu_used:.2f} s, "
          f"{cpu_used / len(posted) * 1000:.1f} ms per mention; wall {time.monotonic() - started:.1f} s; "
          f"peak RSS of this process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    store.engine.dispose()


if __name__ == "__main__":
    main()
