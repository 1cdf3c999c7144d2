"""A backlog under load: 50 Moods x 20 mentions of two agents, parallel_turns 16.

Posts 1,000 mentions, each naming both echo agents (2,000 answers owed), then
starts ``mood-poller run --interval 0.5`` and waits until every mention has
been answered by both agents.  Prints the time to drain, the wakes it took,
mentions answered, the run's peak memory (the poller with every process it
started, summed over the process tree, sampled every 0.2 s) and what
``mood-poller status`` said of the backlog along the way.  Requirement: the
load drains completely, no mention lost.
Run: ``python bench/drain.py [--quick] [--launch process|thread]``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import _common
from _common import REPO

import sqlalchemy as sa  # noqa: E402

from poller import text  # noqa: E402
from poller.models import Owed, Wake, WakePost  # noqa: E402

MOODS, PER_MOOD = 50, 20
DEADLINE_S = 25 * 60


def tree_rss_kb(pid: int) -> int:
    """Resident memory of *pid* and every descendant, in KiB."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return total


def counts(store) -> tuple[int, int, int]:
    """(answers recorded, mentions still owed, wakes)."""
    with store.reading() as s:
        answered = s.scalar(sa.select(sa.func.count()).select_from(WakePost))
        owed = s.scalar(sa.select(sa.func.count()).select_from(Owed))
        wakes = s.scalar(sa.select(sa.func.count()).select_from(Wake))
    return answered, owed, wakes


def main() -> None:
    p = _common.parser(__doc__)
    p.add_argument("--launch", choices=["process", "thread"], default="process")
    args = p.parse_args()
    print(_common.machine())
    moods, per_mood = (10, 5) if args.quick else (MOODS, PER_MOOD)
    url, store, _ = _common.database(args.db)
    slugs = _common.build_world(store, moods, ["echo-a", "echo-b"], ["alice"],
                                command="echo ok")
    now = text.utcnow()
    store.set_settings({"parallel_turns": "16", "max_wakes_per_hour": "600", "cooldown": "0",
                        "idle_after": "0", "considers_per_hour": "0"}, now)
    env = dict(os.environ, PYTHONPATH=str(REPO), MOOD_POLLER_DB=url, MOOD_POLLER_LAUNCH=args.launch)
    env.pop("MOOD_POLLER_CONFIG", None)
    cli = [sys.executable, "-m", "poller"]
    subprocess.run([*cli, "tick"], env=env, check=True, capture_output=True)  # first run
    items = [(slug, "alice", f"@echo-a @echo-b question {i} in {slug}?", now)
             for slug in slugs for i in range(per_mood)]
    _common.ingest(store, items)
    owed_total = 2 * len(items)
    log = open(Path(url.removeprefix("sqlite:///")).with_name("run.log"), "w") \
        if url.startswith("sqlite:///") else subprocess.DEVNULL
    started = time.monotonic()
    proc = subprocess.Popen([*cli, "run", "--interval", "0.5"], env=env, cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    peak, next_status, progress = 0, started, []
    try:
        while time.monotonic() - started < DEADLINE_S:
            peak = max(peak, tree_rss_kb(proc.pid))
            answered, owed, wakes = counts(store)
            if time.monotonic() >= next_status:
                st = json.loads(subprocess.run([*cli, "status", "--json"], env=env,
                                               capture_output=True, text=True).stdout)
                said = sum(a["owed"] for a in st["agents"])
                progress.append((time.monotonic() - started, said, len(st["in_flight"])))
                next_status += 5
            if answered >= owed_total and owed == 0:
                break
            if proc.poll() is not None:
                raise SystemExit(f"run exited with {proc.returncode}")
            time.sleep(0.2)
    finally:
        elapsed = time.monotonic() - started
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(60)
    answered, owed, wakes = counts(store)
    print(f"{len(items)} mentions x 2 agents across {moods} Moods, launch={args.launch}, "
          f"parallel_turns 16")
    verdict = "met" if answered == owed_total and owed == 0 else "MISSED"
    print(f"drained: {answered:,} of {owed_total:,} answers in {wakes} wakes, {elapsed:.1f} s wall; "
          f"{owed} still owed (requirement: all answered, none lost: {verdict})")
    print(f"peak RSS of run and its processes: {peak / 1024:.1f} MB")
    print("status along the way (s, mentions owed, turns in flight): " +
          ", ".join(f"{t:.0f}s {o} {f}" for t, o, f in progress))
    store.engine.dispose()


if __name__ == "__main__":
    main()
