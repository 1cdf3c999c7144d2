"""What does a short ``mood-poller`` command cost to start, against the interpreter alone?

Runs each of ``python -c pass`` (the interpreter alone: the floor),
``mood-poller --help``, ``mood-poller posts M --limit 5`` and ``mood-poller
post M --as P TEXT`` 20 times, round-robin after one warm-up round, against a
throwaway SQLite database with one Mood and one person, in two environments:

* ``PYTHONDONTWRITEBYTECODE=1``: no bytecode is written, so a checkout's own
  modules are compiled from source at every start (installed packages keep the
  bytecode their installer wrote);
* bytecode cached: ``PYTHONDONTWRITEBYTECODE`` unset and ``PYTHONPYCACHEPREFIX``
  a fresh temporary directory (the warm-up round fills it; the checkout is left
  as it was).

Prints, for each, the median CPU time of each command (user + system of the
child process, from ``getrusage``) beside its median wall time, and ours, the
floor and the ratio for ``--help`` and ``post``.
Targets: ``--help`` <= 3x the floor; ``post`` <= 10x the floor.
Run: ``python bench/cli_start.py [--quick] [--db URL]``.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common
from _common import REPO, T0

RUNS = 20
TARGETS = {"--help": 3.0, "post": 10.0}  # x the floor, by CPU
FLOOR = "python -c pass"


def mood_poller() -> list[str]:
    """The installed ``mood-poller`` script beside this interpreter, else ``python -m poller``."""
    script = Path(sys.executable).with_name("mood-poller")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "poller"]


def commands() -> dict[str, list[str]]:
    mp = mood_poller()
    return {
        FLOOR: [sys.executable, "-c", "pass"],
        "--help": mp + ["--help"],
        "posts": mp + ["posts", "m", "--limit", "5"],
        "post": mp + ["post", "m", "--as", "p", "is anyone around to look at the release notes?"],
    }


LABELS = {FLOOR: FLOOR, "--help": "mood-poller --help", "posts": "mood-poller posts M --limit 5",
          "post": "mood-poller post M --as P text"}


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


def measure(cmds: dict[str, list[str]], env: dict[str, str], runs: int
            ) -> tuple[dict[str, float], dict[str, float]]:
    """Median CPU and wall seconds of each command, round-robin after a warm-up round."""
    for argv in cmds.values():
        run_once(argv, env)
    cpu: dict[str, list[float]] = {name: [] for name in cmds}
    wall: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(runs):
        for name, argv in cmds.items():
            c, w = run_once(argv, env)
            cpu[name].append(c)
            wall[name].append(w)
    return ({name: _common.median(v) for name, v in cpu.items()},
            {name: _common.median(v) for name, v in wall.items()})


def report(title: str, cpu: dict[str, float], wall: dict[str, float]) -> dict[str, float]:
    print(f"\n{title}")
    width = max(map(len, LABELS.values()))
    print(f"  {'command':<{width}}  {'CPU (median)':>12}  {'wall (median)':>13}  {'x floor (CPU)':>13}")
    for name in cpu:
        print(f"  {LABELS[name]:<{width}}  {cpu[name] * 1000:>9.1f} ms  {wall[name] * 1000:>10.1f} ms"
              f"  {_common.ratio(cpu[name], cpu[FLOOR]):>13.2f}")
    ratios = {}
    for name, target in TARGETS.items():
        r = ratios[name] = _common.ratio(cpu[name], cpu[FLOOR])
        print(f"  {name}: ours {cpu[name] * 1000:.1f} ms CPU ({wall[name] * 1000:.1f} ms wall), "
              f"floor {cpu[FLOOR] * 1000:.1f} ms CPU ({wall[FLOOR] * 1000:.1f} ms wall), "
              f"ratio {r:.2f} (target <= {target:g}: {'met' if r <= target else 'MISSED'})")
    return ratios


def main() -> None:
    args = _common.parser(__doc__).parse_args()
    runs = 5 if args.quick else RUNS
    print(_common.header())
    url, store, _ = _common.database(args.db)
    store.add_mood("m", "M", T0)
    store.add_person("p", "full", T0)
    for text in _common.CHATTER:
        store.add_post("m", "p", text, T0)
    store.engine.dispose()
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("MOOD_POLLER_") and k not in ("PYTHONDONTWRITEBYTECODE",
                                                              "PYTHONPYCACHEPREFIX")}
    base.update(PYTHONPATH=str(REPO), MOOD_POLLER_DB=url)
    cmds = commands()
    print(f"mood-poller runs as: {' '.join(cmds['--help'][:-1])}; "
          f"{runs} runs each, round-robin, after one warm-up round")
    results = {}
    with tempfile.TemporaryDirectory(prefix="mood-poller-pycache-") as cache:
        envs = {"PYTHONDONTWRITEBYTECODE=1": dict(base, PYTHONDONTWRITEBYTECODE="1"),
                f"bytecode cached (PYTHONPYCACHEPREFIX={cache})": dict(base, PYTHONPYCACHEPREFIX=cache)}
        for title, env in envs.items():
            results[title] = report(title, *measure(cmds, env, runs))
    print(f"\n{_common.load()} at the end")
    for title, ratios in results.items():
        short = title.split(" (")[0]
        print(f"{short}: --help {ratios['--help']:.2f}x the floor, post {ratios['post']:.2f}x")


if __name__ == "__main__":
    main()
