"""What does a short ``mood-poller`` command cost to start?

Runs each of ``python -c pass`` (the interpreter alone: the floor),
``mood-poller --help``, ``mood-poller posts M --limit 5`` and ``mood-poller
post M --as P TEXT`` 20 times, round-robin after one warm-up round, against a
throwaway SQLite database with one Mood and one person.  Prints the median CPU
time of each (user + system of the child process, from ``getrusage``), its
median wall time and its CPU time as a multiple of the floor.
Targets: ``--help`` <= 3x the floor; ``post`` <= 0.35 s CPU.
Run: ``python bench/cli_start.py [--quick] [--db URL]``.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import _common
from _common import REPO, T0

RUNS = 20
HELP_TARGET = 3.0  # x the floor
POST_TARGET = 0.35  # seconds of CPU


def mood_poller() -> list[str]:
    """The installed ``mood-poller`` script beside this interpreter, else ``python -m poller``."""
    script = Path(sys.executable).with_name("mood-poller")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "poller"]


def commands() -> dict[str, list[str]]:
    mp = mood_poller()
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "mood-poller --help": mp + ["--help"],
        "mood-poller posts M --limit 5": mp + ["posts", "m", "--limit", "5"],
        "mood-poller post M --as P text": mp + ["post", "m", "--as", "p",
                                                "is anyone around to look at the release notes?"],
    }


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one run of *argv*; it must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    r = subprocess.run(argv, env=env, cwd=REPO, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {r.returncode}: {r.stderr.decode().strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main() -> None:
    args = _common.parser(__doc__).parse_args()
    runs = 5 if args.quick else RUNS
    print(_common.machine())
    url, store, _ = _common.database(args.db)
    store.add_mood("m", "M", T0)
    store.add_person("p", "full", T0)
    for text in _common.CHATTER:
        store.add_post("m", "p", text, T0)
    store.engine.dispose()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOOD_POLLER_")}
    env.update(PYTHONPATH=str(REPO), MOOD_POLLER_DB=url)
    cmds = commands()
    print(f"mood-poller runs as: {' '.join(cmds['mood-poller --help'][:-1])}; "
          f"{runs} runs each, round-robin, after one warm-up round")
    for argv in cmds.values():
        run_once(argv, env)
    cpu: dict[str, list[float]] = {name: [] for name in cmds}
    wall: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(runs):
        for name, argv in cmds.items():
            c, w = run_once(argv, env)
            cpu[name].append(c)
            wall[name].append(w)
    floor = _common.median(cpu["python -c pass"])
    width = max(map(len, cmds))
    print(f"{'command':<{width}}  {'CPU (median)':>12}  {'wall (median)':>13}  {'x floor':>7}")
    for name in cmds:
        c, w = _common.median(cpu[name]), _common.median(wall[name])
        print(f"{name:<{width}}  {c * 1000:>9.1f} ms  {w * 1000:>10.1f} ms  {c / floor:>7.2f}")
    help_ratio = _common.median(cpu["mood-poller --help"]) / floor
    post_cpu = _common.median(cpu["mood-poller post M --as P text"])
    print(f"--help: {help_ratio:.2f}x the floor "
          f"(target <= {HELP_TARGET:g}x: {'met' if help_ratio <= HELP_TARGET else 'MISSED'})")
    print(f"post: {post_cpu:.3f} s CPU "
          f"(target <= {POST_TARGET:g} s: {'met' if post_cpu <= POST_TARGET else 'MISSED'})")


if __name__ == "__main__":
    main()
