"""The Matrix bridge on loopback: from a person's message to the agent, and the outbox's pace.

Starts a real Synapse (tests/support/homeserver.py, the tests' settings), a SQLite
store, ``mood-poller run --interval 1`` and ``mood-poller bridge matrix`` as
processes.  The agent is ``sh -c 'read -r _; date +%s.%N; cat >/dev/null'``:
its reply is the instant its wake reached its stdin.

* **latency**: a person sends mentions (``--quick``: 20, else 100), one every
  0.5 s, round-robin over 5 rooms; for each, the time from the person's send
  returning to (a) the agent's stdin and (b) the reply reaching the person's
  client (a ``/sync`` long-poll in a thread).  Target p99 <= 1.5 s.
* **outbox**: N replies (``--quick``: 300, else 2,000) are written at once
  into 10 linked Moods while the bridge runs; msgs/s is N over the time until
  the last is marked sent.  Target >= 200 msgs/s.

Prints medians and p99 with the bridge's CPU time beside the wall time.
Run: ``python bench/bridge_matrix.py [--quick]``.
"""

from __future__ import annotations

import os
import secrets
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import _common
from _common import REPO

sys.path.insert(0, str(REPO / "tests"))

from support import homeserver  # noqa: E402
from support import pg  # noqa: E402

from poller.bridges import matrix  # noqa: E402
from poller.store import outbox  # noqa: E402
from poller.store.core import insert_post  # noqa: E402

AGENT = "sh -c 'read -r _; date +%s.%N; cat >/dev/null'"
ROOMS = 5
OUT_ROOMS = 10


def cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


class World:
    def __init__(self, tmp: Path):
        self.tmp = tmp
        hs_port, self.as_port = pg.free_port(), pg.free_port()
        self.cfg = matrix.MatrixConfig(homeserver=f"http://127.0.0.1:{hs_port}",
                                       server_name=homeserver.SERVER_NAME,
                                       listen_port=self.as_port, as_token=secrets.token_hex(16),
                                       hs_token=secrets.token_hex(16), poll=0.05)
        (tmp / "bridge.toml").write_text(
            f'[bridges.matrix]\nhomeserver = "{self.cfg.homeserver}"\n'
            f'server_name = "{self.cfg.server_name}"\nlisten_port = {self.as_port}\npoll = 0.05\n')
        matrix.write_registration(self.cfg, str(tmp / "reg.yaml"))
        self.hs = homeserver.start([str(tmp / "reg.yaml")], hs_port, secrets.token_hex(16))
        self.url, self.store, _ = _common.database(f"sqlite:///{tmp / 'moods.db'}")
        self.env = dict(os.environ, PYTHONPATH=str(REPO), MOOD_POLLER_DB=self.url,
                        MOOD_POLLER_MATRIX_AS_TOKEN=self.cfg.as_token,
                        MOOD_POLLER_MATRIX_HS_TOKEN=self.cfg.hs_token)
        self.procs: list[subprocess.Popen] = []

    def cli(self, *args: str) -> None:
        subprocess.run([sys.executable, "-m", "poller", *args], env=self.env, check=True,
                       capture_output=True)

    def start(self, name: str, *args: str) -> subprocess.Popen:
        log = open(self.tmp / f"{name}.log", "w")
        p = subprocess.Popen([sys.executable, "-m", "poller", *args], env=self.env,
                             stdout=log, stderr=log, cwd=self.tmp)
        self.procs.append(p)
        return p

    def close(self) -> None:
        for p in self.procs:
            p.terminate()
            p.wait(timeout=60)
        self.hs.stop()


def latency(w: World, n: int) -> dict:
    person = w.hs.register()
    w.cli("init", "--answer-from-now")
    w.cli("agent", "add", "helper", "--command", AGENT)
    w.cli("set", "max_wakes_per_hour", "600")  # the hourly cap (30) is not what is measured
    w.cli("person", "add", "--matrix", person.user_id, "--trust", "full")
    rooms = [person.create_room() for _ in range(ROOMS)]
    for i, room in enumerate(rooms):
        w.cli("mood", "add", f"room{i}", "--matrix-room", room)
    run, bridge = w.start("run", "run", "--interval", "1"), w.start("bridge", "bridge", "matrix",
                                                                    "--config", str(w.tmp / "bridge.toml"))
    agent = matrix.agent_user(w.cfg, "helper")
    while not all(agent in person.call("GET", f"/rooms/{r}/joined_members")["joined"]
                  for r in rooms):
        time.sleep(0.1)
    seen: dict[str, tuple[float, float]] = {}
    stop = threading.Event()
    threading.Thread(target=watch, args=(person, agent, seen, stop), daemon=True).start()
    sent: dict[str, float] = {}
    cpu0 = cpu_of(bridge.pid)
    for i in range(n):
        room = rooms[i % ROOMS]
        eid = person.send(room, {"msgtype": "m.text", "body": f"helper: ping {i}",
                                 "m.mentions": {"user_ids": [agent]}})
        sent[eid] = time.time()
        time.sleep(0.5)
    deadline = time.time() + 60
    while len(seen) < n and time.time() < deadline:
        time.sleep(0.1)
    stop.set()
    stdin = [seen[e][0] - sent[e] for e in sent if e in seen]
    room = [seen[e][1] - sent[e] for e in sent if e in seen]
    return {"n": n, "answered": len(stdin), "stdin": stdin, "room": room,
            "bridge_cpu": cpu_of(bridge.pid) - cpu0, "run_cpu": cpu_of(run.pid)}


def watch(person, agent: str, seen: dict, stop: threading.Event) -> None:
    """The person's client: each reply of the agent, when it arrived and its stdin stamp."""
    since = person.call("GET", "/sync", timeout="0")["next_batch"]
    while not stop.is_set():
        data = person.call("GET", "/sync", since=since, timeout="5000")
        now = time.time()
        since = data["next_batch"]
        for room in (data.get("rooms", {}).get("join") or {}).values():
            for e in room.get("timeline", {}).get("events", []):
                asked = (e.get("content", {}).get("m.relates_to") or {}).get(
                    "m.in_reply_to", {}).get("event_id")
                if e["sender"] == agent and asked:
                    seen[asked] = (float(e["content"]["body"].strip()), now)


def throughput(w: World, n: int) -> dict:
    person = w.hs.register()
    rooms = [person.create_room() for _ in range(OUT_ROOMS)]
    for i, room in enumerate(rooms):
        w.cli("mood", "add", f"out{i}", "--matrix-room", room)
    time.sleep(12)  # the bridge joins new rooms within its 10 s refresh
    agent_id = w.store.agent("helper").id
    moods = [w.store.mood(f"out{i}").id for i in range(OUT_ROOMS)]
    before = outbox.counts(w.store).get("sent", 0)
    bridge = w.procs[1]
    cpu0, t0, hs0 = cpu_of(bridge.pid), time.time(), cpu_of(w.hs.proc.pid)
    with w.store.writing() as s:
        for i in range(n):
            insert_post(s, w.store.counter, moods[i % OUT_ROOMS], agent_id, f"reply {i}",
                        _common.T0)
    while outbox.counts(w.store).get("sent", 0) - before < n and time.time() - t0 < 300:
        time.sleep(0.05)
    wall = time.time() - t0
    done = outbox.counts(w.store).get("sent", 0) - before
    return {"n": n, "sent": done, "wall": wall, "rate": done / wall,
            "bridge_cpu": cpu_of(bridge.pid) - cpu0, "synapse_cpu": cpu_of(w.hs.proc.pid) - hs0}


def main() -> None:
    args = _common.parser(__doc__).parse_args()
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="mood-bench-matrix-"))
    w = World(tmp)
    try:
        lat = latency(w, 20 if args.quick else 100)
        out = throughput(w, 300 if args.quick else 2000)
    finally:
        w.close()
    print(_common.machine())
    for name in ("stdin", "room"):
        v = lat[name]
        print(f"message -> agent's {name:5}: p50 {statistics.median(v) * 1000:.0f} ms, "
              f"p99 {pct(v, 99) * 1000:.0f} ms, max {max(v) * 1000:.0f} ms "
              f"({lat['answered']}/{lat['n']} answered; target p99 <= 1500 ms)")
    print(f"bridge CPU over the latency run: {lat['bridge_cpu']:.2f} s "
          f"({lat['bridge_cpu'] / max(1, lat['answered']) * 1000:.1f} ms a message)")
    print(f"outbox -> Synapse: {out['sent']}/{out['n']} in {out['wall']:.2f} s wall, "
          f"{out['rate']:.0f} msgs/s (target >= 200), bridge CPU {out['bridge_cpu']:.2f} s "
          f"({out['bridge_cpu'] / max(1, out['sent']) * 1000:.2f} ms a message), Synapse CPU "
          f"{out['synapse_cpu']:.2f} s ({out['synapse_cpu'] / max(1, out['sent']) * 1000:.1f} "
          f"ms a message)")


if __name__ == "__main__":
    main()
