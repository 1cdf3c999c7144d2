"""Small agent programs the tests run as real subprocesses.

``agent_command(tmp_path, mode)`` writes ``agent.py`` once and returns a shell
command running it in *mode*.  Every run appends one JSON line (the wake's
environment and text) to ``wakes.jsonl`` beside it, so tests can read
exactly what each agent was told.  Mode ``gate`` keeps the turn open until
the test calls ``open_gate(path)`` with the path the agent was given.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

SCRIPT = r'''
import json, os, sys, time, subprocess
mode, log = sys.argv[1], sys.argv[2]
extra = sys.argv[3:]
text = sys.stdin.read()
with open(log, "a") as fh:
    fh.write(json.dumps({k: os.environ.get(k) for k in
        ("MOOD_WAKE_ID", "MOOD_AGENT", "MOOD_SLUG", "MOOD_WAKE_KIND", "MOOD_TOOLS")}
        | {"text": text, "pid": os.getpid(), "cwd": os.getcwd(),
           "secret_env": [k for k in os.environ if k.startswith("MOOD_POLLER")]}) + "\n")
if mode == "reply":
    print(f"{os.environ['MOOD_AGENT']} answering {os.environ['MOOD_WAKE_KIND']}")
elif mode == "silent":
    print("<silent>nothing to add</silent>")
elif mode == "say":
    print(" ".join(extra))
elif mode == "file":
    # Whatever the file holds now: a test changes the reply between turns.
    print(open(extra[0]).read())
elif mode == "fail":
    print("half a thought")
    print("something broke", file=sys.stderr)
    sys.exit(3)
elif mode == "fail-in":
    if os.environ["MOOD_SLUG"] == extra[0]:
        sys.exit(4)
    print("fine here")
elif mode == "slow":
    time.sleep(float(extra[0]))
    print("done after a while")
elif mode == "gate":
    # Stays at work until the test opens the gate (creates the file), so a
    # test decides when the turn ends instead of guessing how long it takes.
    gate, give_up = extra[0], time.monotonic() + 600
    while not os.path.exists(gate) and time.monotonic() < give_up:
        time.sleep(0.05)
    print("done when let go")
elif mode == "script":
    # Replies from a queue the test writes (a JSON list in extra[0]), one per turn;
    # an empty queue stays silent.
    queue = json.load(open(extra[0])) if os.path.exists(extra[0]) else []
    print(queue.pop(0) if queue else "<silent>nothing scripted</silent>")
    json.dump(queue, open(extra[0], "w"))
elif mode == "hang":
    marker = extra[0]
    # A child and a grandchild that must die with the turn.
    subprocess.Popen(["sh", "-c", f"exec -a {marker}-child sleep 300"])
    subprocess.Popen(["sh", "-c", f"(exec -a {marker}-grandchild sleep 300) & wait"])
    time.sleep(300)
'''


def agent_command(tmp_path: Path, mode: str, *extra: str) -> str:
    script = tmp_path / "agent.py"
    if not script.exists():
        script.write_text(SCRIPT)
    log = tmp_path / "wakes.jsonl"
    return shlex.join([sys.executable, str(script), mode, str(log), *extra])


def wakes_seen(tmp_path: Path) -> list[dict]:
    log = tmp_path / "wakes.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def script(queue: Path, *replies: str) -> None:
    """Queue the next replies of an agent started in ``script`` mode, one per turn."""
    have = json.loads(queue.read_text()) if queue.exists() else []
    queue.write_text(json.dumps(have + list(replies)))


def open_gate(gate: Path) -> None:
    """Let an agent started in ``gate`` mode finish its turn."""
    gate.touch()


def agent_running(tmp_path: Path) -> bool:
    """Whether a stand-in agent of this test (``agent_command``) still runs on this machine.

    Found by its command line, which names this test's log: inside its sandbox an agent
    has a PID namespace of its own, so the pid it sees of itself means nothing here."""
    import subprocess

    return subprocess.run(["pgrep", "-f", str(tmp_path / "wakes.jsonl")],
                          capture_output=True).returncode == 0


def sandboxed() -> bool:
    """Whether agent turns run sandboxed on this machine (``poller.sandbox = auto``)."""
    from poller.turns import sandbox

    return sandbox.state("auto").active
