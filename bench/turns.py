"""Turns under load: a backlog drained, and what a turn in flight costs the poller.

1. **Drain.**  Posts 1,000 mentions across 50 Moods, each naming both of two
   echo agents (2,000 answers owed), ``parallel_turns 16``, then starts
   ``mood-poller run`` at the shipped interval and waits until every mention
   has been answered by both agents.  Prints the time to drain (wall, and the
   CPU of ``run`` with every process it started), the wakes it took, the
   peak memory of the process tree (sampled every 0.2 s) and what
   ``mood-poller status`` said of the backlog along the way.  Target: drains
   in <= 2 min on 2 cores, nothing lost.
2. **The sandbox.**  What starting a turn's process in its bubblewrap namespace
   costs (``poller.sandbox``): ``/bin/true`` started as a turn's process is, bare
   and in the jail a look-only turn gets (its scratch directory made and removed,
   the database hidden), 200 times each; the difference per start, wall (median)
   and CPU (of the children, mean).  Target: <= 20 ms per turn.  The drain above
   runs with the sandbox (``auto``) and without (``off``), to show what it costs a
   backlog.
3. **In flight.**  16 turns of an agent that holds its turn open: the RSS of
   the ``run`` process alone (not the agents) with 16 turns in flight, minus
   its RSS when idle, per turn.  Target: <= 5 MB per turn in flight.

Run: ``python bench/turns.py [--quick] [--launch process|thread] [--sandbox both|auto|off]
[--db URL]``.
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
from poller.models import Cursor, Owed, Wake, WakeAnswer  # noqa: E402

MOODS, PER_MOOD = 50, 20
DEADLINE_S = 25 * 60
TARGET_DRAIN_S = 120
TARGET_PER_TURN_MB = 5.0
TARGET_SANDBOX_MS = 20.0
STARTS = 200
IN_FLIGHT = 16


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
        answered = s.scalar(sa.select(sa.func.count()).select_from(WakeAnswer))
        owed = s.scalar(sa.select(sa.func.count()).select_from(Owed))
        wakes = s.scalar(sa.select(sa.func.count()).select_from(Wake))
    return answered, owed, wakes


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main() -> None:
    p = _common.parser(__doc__)
    p.add_argument("--launch", choices=["process", "thread"], default="thread",
                   help="How `run` starts turns (its default, auto, is thread).")
    p.add_argument("--sandbox", choices=["both", "auto", "off"], default="both",
                   help="Drain with turns sandboxed (auto), not (off), or both, one after the other.")
    args = p.parse_args()
    print(_common.machine(), f"load average {os.getloadavg()[0]:.2f}")
    for mode in (["auto", "off"] if args.sandbox == "both" else [args.sandbox]):
        drain(args, mode)
    sandbox_startup(args)
    in_flight(args)


def starts(argv_for, n: int) -> tuple[float, float]:
    """Median wall and mean CPU (children's) in ms of starting and reaping *n* processes."""
    import resource

    walls = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(n):
        t = time.perf_counter()
        argv, done = argv_for()
        subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"}, check=True,
                       start_new_session=True, close_fds=True)
        done()
        walls.append((time.perf_counter() - t) * 1000)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000 / n
    return _common.median(walls), cpu


def sandbox_startup(args) -> None:
    from poller.config import data_dir
    from poller.turns import sandbox

    st = sandbox.state("auto")
    if not st.active:
        print(f"sandbox start-up: not measured ({st.why})")
        return
    n = STARTS // 4 if args.quick else STARTS
    url = args.db or "sqlite:////var/lib/mood-poller/moods.db"
    jail = sandbox.Jail(st.bwrap, look_only=True,
                        hidden=sandbox.hidden_paths(url, "", str(data_dir())))

    def bare():
        return ["/bin/true"], lambda: None

    def jailed():
        scratch = sandbox.scratch()
        return jail.argv(["/bin/true"], scratch, None), lambda: sandbox.remove(scratch)

    bare_wall, bare_cpu = starts(bare, n)
    jail_wall, jail_cpu = starts(jailed, n)
    cost = jail_wall - bare_wall
    verdict = "met" if cost <= TARGET_SANDBOX_MS else "MISSED"
    print(f"sandbox start-up, {n} starts each: bare /bin/true {bare_wall:.2f} ms wall, "
          f"{bare_cpu:.2f} ms CPU; in bubblewrap {jail_wall:.2f} ms wall, {jail_cpu:.2f} ms CPU; "
          f"the sandbox adds {cost:.2f} ms wall, {jail_cpu - bare_cpu:.2f} ms CPU per turn "
          f"(target <= {TARGET_SANDBOX_MS:g} ms: {verdict})")


def start_run(url: str, launch: str, sandbox: str = "auto") -> tuple[subprocess.Popen, dict]:
    env = dict(os.environ, PYTHONPATH=str(REPO), MOOD_POLLER_DB=url, MOOD_POLLER_LAUNCH=launch,
               MOOD_POLLER_SANDBOX=sandbox)
    env.pop("MOOD_POLLER_CONFIG", None)
    log = open(Path(url.removeprefix("sqlite:///")).with_name("run.log"), "a") \
        if url.startswith("sqlite:///") else subprocess.DEVNULL
    proc = subprocess.Popen([sys.executable, "-m", "poller", "run"], env=env, cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    return proc, env


def stop_run(proc: subprocess.Popen) -> float:
    """SIGTERM the run; the CPU seconds it and the processes it waited for used."""
    os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return usage.ru_utime + usage.ru_stime
        time.sleep(0.1)
    proc.kill()
    proc.wait()
    return float("nan")


def drain(args, sandbox: str) -> None:
    moods, per_mood = (10, 5) if args.quick else (MOODS, PER_MOOD)
    url, store, _ = _common.database(args.db)
    slugs = _common.build_world(store, moods, ["echo-a", "echo-b"], ["alice"],
                                command="echo ok")
    now = text.utcnow()
    store.set_settings({"parallel_turns": "16", "max_wakes_per_hour": "600", "cooldown": "0",
                        "idle_after": "0", "considers_per_hour": "0"}, now)
    cli = [sys.executable, "-m", "poller"]
    env = dict(os.environ, PYTHONPATH=str(REPO), MOOD_POLLER_DB=url)
    env.pop("MOOD_POLLER_CONFIG", None)
    subprocess.run([*cli, "tick"], env=env, check=True, capture_output=True)  # first run
    items = [(slug, "alice", f"@echo-a @echo-b question {i} in {slug}?", now)
             for slug in slugs for i in range(per_mood)]
    _common.ingest(store, items)
    owed_total = 2 * len(items)
    started = time.monotonic()
    proc, env = start_run(url, args.launch, sandbox)
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
        cpu = stop_run(proc)
    answered, owed, wakes = counts(store)
    print(f"drain: {len(items)} mentions x 2 agents across {moods} Moods, launch={args.launch}, "
          f"sandbox={sandbox}, parallel_turns 16, shipped interval")
    verdict = ("met" if answered == owed_total and owed == 0 and elapsed <= TARGET_DRAIN_S
               else "MISSED")
    print(f"drained: {answered:,} of {owed_total:,} answers in {wakes} wakes, {elapsed:.1f} s wall, "
          f"{cpu:.1f} s CPU of run and its processes; {owed} still owed "
          f"(target: all answered in <= {TARGET_DRAIN_S} s: {verdict})")
    print(f"peak RSS of run and its processes: {peak / 1024:.1f} MB")
    print("status along the way (s, mentions owed, turns in flight): " +
          ", ".join(f"{t:.0f}s {o} {f}" for t, o, f in progress))
    store.engine.dispose()


def in_flight(args) -> None:
    url, store, _ = _common.database(args.db)
    slugs = _common.build_world(store, IN_FLIGHT, ["holder"], ["alice"],
                                command="sh -c 'cat >/dev/null; exec sleep 600'")
    now = text.utcnow()
    store.set_settings({"parallel_turns": str(IN_FLIGHT), "max_wakes_per_hour": "600",
                        "cooldown": "0", "idle_after": "0", "considers_per_hour": "0"}, now)
    proc, env = start_run(url, args.launch)
    try:
        deadline = time.monotonic() + 60
        while counts(store)[2] == 0 and time.monotonic() < deadline:
            with store.reading() as s:
                if s.get(Cursor, "posts") is not None:
                    break
            time.sleep(0.1)
        # One turn first (the first wake loads what composing needs), then the
        # rest: the slope between the two is what a turn in flight costs.
        rss = {}
        for want, batch in ((1, slugs[:1]), (IN_FLIGHT, slugs[1:])):
            for slug in batch:
                store.add_post(slug, "alice", "@holder please hold this turn open", text.utcnow())
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                with store.reading() as s:
                    running = s.scalar(sa.select(sa.func.count()).select_from(Wake)
                                       .where(Wake.status == "running"))
                if running >= want:
                    break
                time.sleep(0.2)
            time.sleep(2)
            rss[want] = _common.median(rss_kb(proc.pid) for _ in range(5) if not time.sleep(0.2))
    finally:
        stop_run(proc)
    per_turn = (rss[IN_FLIGHT] - rss[1]) / 1024 / (IN_FLIGHT - 1)
    verdict = "met" if per_turn <= TARGET_PER_TURN_MB else "MISSED"
    print(f"in flight: {running} turns running, launch={args.launch}: RSS of run alone "
          f"{rss[1] / 1024:.1f} MB with 1 turn, {rss[IN_FLIGHT] / 1024:.1f} MB with {IN_FLIGHT}: "
          f"{per_turn:.2f} MB per turn in flight (target <= {TARGET_PER_TURN_MB:g} MB: {verdict})")
    store.engine.dispose()


if __name__ == "__main__":
    main()
