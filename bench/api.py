"""The front door under load: `mood-poller serve` as a real process on a loopback port.

Three parts (``--part``, default all):

* ``throughput`` — posts/s through ``POST /api/v1/moods/{slug}/posts`` from 20
  concurrent clients (20 people, one token each, the rate limit off), plain
  ``serve`` with no poller; then, in the same run and on the same database, the
  floor: the same posts sent to a minimal Starlette app doing one INSERT per
  request (``bench/_floor_api.py``: SQLite in a thread pool, PostgreSQL on a
  pool of async psycopg connections).  Prints ours, the floor and the ratio
  (posts/s; server CPU per post; with ``--pg`` the database server's CPU per
  post too) and the statements ``serve`` made per post, counted with SQLAlchemy
  engine events (``_common.Statements``).  Target: ours >= 0.5x the floor.
* ``latency`` — from sending an API post that mentions an agent to the agent
  reading its wake on stdin (the agent prints that instant: see
  ``bench/latency.py``), p50/p99 over 200 mentions at 2/s across 50 Moods
  (``--quick``: 20), first with ``serve --with-poller`` (target p99 <= 250 ms),
  then with ``serve`` and ``run`` as two processes (target p99 <= 1 s).  The
  poller runs at the shipped interval (1 s): a commit wakes it.
* ``memory`` — peak RSS of ``serve`` with 200 open event streams, while posts
  reach every stream.  Target <= 150 MB.

Each figure comes with the CPU time of the server process(es), the wall time
and the machine.  ``--db URL`` runs on that database; ``--pg`` starts a
throwaway PostgreSQL (``tests/support/pg.py``) for the run.  Run:
``python bench/api.py [--quick] [--part P] [--db URL | --pg]``.  The last line
is ``ours/floor ratio: X`` (posts/s, on the database the throughput part ran on).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import _common
from _common import REPO

import latency  # bench/latency.py: the echoing agent, reading its replies, /proc CPU

CLIENTS = 20
STREAMS = 200
TARGETS = {"ratio": 0.5, "in-process": 0.25, "across": 1.0, "memory": 150.0}


def serve(url: str, *args: str, statements: str | None = None) -> tuple[subprocess.Popen, str]:
    """``mood-poller serve --port 0 ARGS`` on *url*, once it listens: (process, base URL).
    With *statements*, every statement it makes is counted and the counts written there
    as it exits (``bench/_counted_serve.py``)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), MOOD_POLLER_DB=url)
    env.pop("MOOD_POLLER_CONFIG", None)
    how = [sys.executable, "-m", "poller"]
    if statements:
        env.update(BENCH_STATEMENTS=statements, PYTHONPATH=f"{REPO / 'bench'}:{REPO}")
        how = [sys.executable, str(REPO / "bench" / "_counted_serve.py")]
    proc = subprocess.Popen(how + ["serve", "--port", "0", "--json", "--posts-per-minute", "0",
                                   *args], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, text=True,
                            # BENCH_TOP_STATEMENTS: serve prints what it sent most, at exit
                            stderr=None if os.environ.get("BENCH_TOP_STATEMENTS") else subprocess.DEVNULL)
    return proc, listening(proc)


def floor_server(url: str) -> tuple[subprocess.Popen, str]:
    """The floor (``bench/_floor_api.py``: a minimal Starlette app, one INSERT a request)."""
    proc = subprocess.Popen([sys.executable, str(REPO / "bench" / "_floor_api.py"), url],
                            env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return proc, listening(proc)


def listening(proc: subprocess.Popen) -> str:
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"{' '.join(proc.args[:3])} exited {proc.wait()}")
    return json.loads(line)["url"].rstrip("/")


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()


def tokens_for(store, people: list[str]) -> dict[str, str]:
    from poller.store import access

    return {p: access.new_token(store, p, _common.T0)[0] for p in people}


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


# -- throughput ----------------------------------------------------------------------------------


class Database:
    """CPU seconds of a throwaway PostgreSQL server (``--pg``): its postmaster, the
    backends it has reaped and those still running."""

    def __init__(self, server) -> None:
        self.server = server

    def cpu(self) -> float | None:
        if self.server is None:
            return None
        pid = int(Path(self.server.datadir, "postmaster.pid").read_text().split()[0])
        tck = os.sysconf("SC_CLK_TCK")
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total = sum(int(f) for f in fields[11:15]) / tck  # utime stime cutime cstime
        for child in Path("/proc").iterdir():
            if child.name.isdigit():
                try:
                    f = (child / "stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(f[1]) == pid:
                    total += (int(f[11]) + int(f[12])) / tck
        return total


def send_posts(base: str, tokens: dict[str, str], slugs: list[str], per_client: int
               ) -> tuple[float, int]:
    """Every person posts *per_client* posts at once, each from its own client thread:
    (wall seconds, posts refused)."""
    import httpx

    failures = []

    def client(person: str, i: int) -> None:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {tokens[person]}"},
                          timeout=60) as c:
            for n in range(per_client):
                r = c.post(f"/api/v1/moods/{slugs[(i + n) % len(slugs)]}/posts",
                           json={"text": _common.CHATTER[n % len(_common.CHATTER)]})
                if r.status_code != 201:
                    failures.append(r.status_code)

    threads = [threading.Thread(target=client, args=(p, i)) for i, p in enumerate(tokens)]
    with _common.Timed() as t:
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    return t.wall, len(failures)


def run_server(start, base_args: tuple, db: Database, tokens, slugs, per_client) -> dict:
    proc, base = start(*base_args)
    try:
        cpu0, db0 = latency.cpu_of(proc.pid), db.cpu()
        wall, refused = send_posts(base, tokens, slugs, per_client)
        cpu, db1 = latency.cpu_of(proc.pid) - cpu0, db.cpu()
    finally:
        stop(proc)
    total = len(tokens) * per_client
    return dict(rate=total / wall, wall=wall, refused=refused, cpu=cpu / total,
                db=None if db0 is None else (db1 - db0) / total, total=total)


def throughput(args) -> float:
    """Ours against the floor, one after the other on the same database; ours/floor posts/s."""
    url, store, _ = _common.database(args.db)
    people = [f"p{i:02d}" for i in range(CLIENTS)]
    slugs = _common.build_world(store, 50, [], people)
    tokens = tokens_for(store, people)
    per_client = 25 if args.quick else 250
    db = Database(getattr(args, "server", None))
    counts = Path(tempfile.mkdtemp(prefix="mood-poller-bench-")) / "statements.json"
    ours = run_server(lambda: serve(url, statements=str(counts)), (), db, tokens, slugs, per_client)
    statements = _common.Statements()
    statements.counts.update(json.loads(counts.read_text()))
    floor = run_server(floor_server, (url,), db, tokens, slugs, per_client)
    dialect = store.dialect
    store.engine.dispose()

    def line(name: str, r: dict) -> str:
        database = "" if r["db"] is None else f" + database {r['db'] * 1000:.2f} ms"
        return (f"  {name}: {r['total']} posts in {r['wall']:.2f} s wall = {r['rate']:,.0f} posts/s "
                f"({r['refused']} refused); server CPU {r['cpu'] * 1000:.2f} ms per post{database}")

    ratio = ours["rate"] / floor["rate"]
    verdict = "met" if ratio >= TARGETS["ratio"] else "MISSED"
    print(f"throughput, {dialect}, {CLIENTS} concurrent clients, {per_client} posts each, "
          f"the rate limit off; {_common.load()}")
    print(line("ours (serve)", ours))
    print(line("floor (minimal Starlette app, one INSERT a request)", floor))
    print(f"  ours/floor: posts/s {ratio:.2f} (target >= {TARGETS['ratio']:g}: {verdict}); "
          f"server CPU per post {ours['cpu'] / floor['cpu']:.2f}x the floor's"
          + ("" if ours["db"] is None else
             f"; database CPU per post {ours['db'] / floor['db']:.2f}x the floor's" if floor["db"]
             else "; the floor's database CPU was too small to read (under the clock's tick)"))
    print(f"  ours: {statements.per(ours['total'], 'post')} (every statement serve made in the "
          f"run, start-up included); the floor: 1 (one INSERT, autocommit or one commit)")
    return ratio


# -- latency --------------------------------------------------------------------------------------


def post_to_agent(args, mode: str) -> None:
    import httpx

    url, store, _ = _common.database(args.db)
    slugs = _common.build_world(store, latency.MOODS, ["echo-bot"], ["alice"],
                                command=latency.AGENT)
    from poller import text

    store.set_settings({"parallel_turns": "64", "max_wakes_per_hour": "600"}, text.utcnow())
    token = tokens_for(store, ["alice"])["alice"]
    procs = []
    if mode == "in-process":
        proc, base = serve(url, "--with-poller")
        procs.append(proc)
    else:
        proc, base = serve(url)
        procs += [proc, latency.start_run(url, 1.0)]
    mentions = 20 if args.quick else latency.MENTIONS
    try:
        deadline = time.monotonic() + 60
        while not latency.first_cycle_done(store):
            if time.monotonic() > deadline:
                raise SystemExit("the poller did not start its first cycle")
            time.sleep(0.05)
        time.sleep(1.5)  # the loop is asleep, between two looks
        cpu0 = sum(latency.cpu_of(p.pid) for p in procs)
        posted: dict[int, float] = {}
        c = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60)
        started = time.monotonic()
        for i in range(mentions):
            time.sleep(max(0.0, started + i / 2.0 - time.monotonic()))
            sent = time.time()
            r = c.post(f"/api/v1/moods/{slugs[i % len(slugs)]}/posts",
                       json={"text": f"@echo-bot question {i}?"})
            posted[r.json()["id"]] = sent
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(latency.replies(store, posted)) < len(posted):
            time.sleep(0.2)
        wall = time.monotonic() - started
        cpu = sum(latency.cpu_of(p.pid) for p in procs) - cpu0
    finally:
        for p in procs:
            stop(p)
    done = list(latency.replies(store, posted).values())
    target = TARGETS[mode]
    p50, p99 = (_common.percentile(done, q) for q in (50, 99))
    verdict = "met" if done and p99 <= target and len(done) == len(posted) else "MISSED"
    who = "serve --with-poller" if mode == "in-process" else "serve + run"
    print(f"latency, {who}, {store.dialect}: {len(done)}/{len(posted)} mentions reached the "
          f"agent; API post sent -> agent's stdin p50 {p50 * 1000:.0f} ms, p99 "
          f"{p99 * 1000:.0f} ms, max {max(done) * 1000:.0f} ms (target p99 <= "
          f"{target * 1000:.0f} ms: {verdict}); CPU of the server process(es) {cpu:.2f} s, "
          f"wall {wall:.1f} s")
    store.engine.dispose()


# -- memory ---------------------------------------------------------------------------------------


def memory(args) -> None:
    import httpx

    url, store, _ = _common.database(args.db)
    slugs = _common.build_world(store, 20, [], ["alice"])
    token = tokens_for(store, ["alice"])["alice"]
    streams = 20 if args.quick else STREAMS
    proc, base = serve(url)
    idle = rss_mb(proc.pid)
    headers = {"Authorization": f"Bearer {token}"}
    seen = [0] * streams

    async def listen(client, i: int, ready: asyncio.Event, opened: list) -> None:
        async with client.stream("GET", f"/api/v1/moods/{slugs[i % len(slugs)]}/events") as r:
            opened.append(i)
            if len(opened) == streams:
                ready.set()
            async for line in r.aiter_lines():
                if line.startswith("event: post"):
                    seen[i] += 1

    async def run() -> tuple[float, float]:
        limits = httpx.Limits(max_connections=streams + 10)
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=None,
                                     limits=limits) as client:
            ready, opened = asyncio.Event(), []
            tasks = [asyncio.create_task(listen(client, i, ready, opened)) for i in range(streams)]
            await asyncio.wait_for(ready.wait(), 120)
            connected = rss_mb(proc.pid)
            for n in range(len(slugs) * 3):  # three posts in every Mood: every stream gets some
                await client.post(f"/api/v1/moods/{slugs[n % len(slugs)]}/posts",
                                  json={"text": f"broadcast {n}"})
            deadline = time.monotonic() + 120
            while min(seen) < 3 and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            after = rss_mb(proc.pid)
            for t in tasks:
                t.cancel()
            return connected, after

    try:
        cpu0 = latency.cpu_of(proc.pid)
        with _common.Timed() as t:
            connected, after = asyncio.run(run())
        peak = rss_mb(proc.pid, "VmHWM")
        cpu = latency.cpu_of(proc.pid) - cpu0
    finally:
        stop(proc)
    verdict = "met" if peak <= TARGETS["memory"] else "MISSED"
    print(f"memory, {store.dialect}: serve idle {idle:.1f} MB; {streams} open event streams "
          f"{connected:.1f} MB; after {len(slugs) * 3} posts reached every stream "
          f"(each saw >= {min(seen)}) {after:.1f} MB; peak RSS {peak:.1f} MB (target <= "
          f"{TARGETS['memory']:.0f} MB: {verdict}); serve's CPU {cpu:.2f} s, wall {t.wall:.1f} s")
    store.engine.dispose()


def main() -> None:
    p = _common.parser(__doc__)
    p.add_argument("--part", choices=["all", "throughput", "latency", "memory"], default="all")
    p.add_argument("--pg", action="store_true", help="Start a throwaway PostgreSQL for the run.")
    args = p.parse_args()
    print(_common.header())
    server = None
    if args.pg:
        sys.path.insert(0, str(REPO / "tests"))
        from support import pg

        server = pg.start()
    args.server = server
    fresh = server.new_database if server else (lambda: args.db)
    ratio = None
    try:
        parts = ["throughput", "latency", "memory"] if args.part == "all" else [args.part]
        for part in parts:
            if part == "latency":
                for mode in ("in-process", "across"):
                    args.db = fresh()
                    post_to_agent(args, mode)
            elif part == "throughput":
                args.db = fresh()
                ratio = throughput(args)
            else:
                args.db = fresh()
                memory(args)
    finally:
        if server is not None:
            server.stop()
    if ratio is not None:
        print(f"ours/floor ratio: {ratio:.2f}")


if __name__ == "__main__":
    main()
