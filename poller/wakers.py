"""Wakers: how a turn reaches an agent and how its reply comes back.

A waker takes the wake text and the turn's context and returns an
``Outcome``: the reply text, or why there is none.  Every waker kills what it
started when the turn times out or is cancelled.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional

from poller import settle

READ_LIMIT = 4 * 1024 * 1024  # bytes of stdout kept; the rest is drained and dropped
KILL_GRACE_S = 2.0


@dataclass(frozen=True)
class Turn:
    wake_id: int
    agent: str
    mood: str
    kind: str
    tools: str  # full | look
    text: str
    answers: tuple[int, ...] = ()
    timeout: Optional[float] = None  # seconds; None: no limit
    workdir: Optional[str] = None
    session: Optional[str] = None  # a resumable session id, for wakers that have one


@dataclass(frozen=True)
class Outcome:
    status: str  # replied | failed | cut_off
    reply: str = ""
    error: str = ""
    note: str = ""  # e.g. invalid UTF-8 replaced, output truncated
    session: Optional[str] = None
    cost: Optional[float] = None


def turn_env(turn: Turn) -> dict[str, str]:
    """The agent's environment: ours, minus the poller's own (secret-bearing) variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOOD_POLLER")}
    env.update(MOOD_WAKE_ID=str(turn.wake_id), MOOD_AGENT=turn.agent, MOOD_SLUG=turn.mood,
               MOOD_WAKE_KIND=turn.kind, MOOD_TOOLS=turn.tools)
    return env


class Process:
    """A child in its own process group, fed stdin, read to a limit, killable as a group."""

    def __init__(self, argv: list[str], *, shell: bool, stdin: bytes, env: dict, cwd: Optional[str],
                 on_start: Callable[[int], None] = lambda pgid: None):
        self.proc = subprocess.Popen(argv if not shell else argv[0], shell=shell,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, cwd=cwd,
                                     start_new_session=True)
        self.pgid = self.proc.pid
        on_start(self.pgid)
        self.out = bytearray()
        self.err = bytearray()
        self.out_dropped = 0
        self._threads = [threading.Thread(target=self._feed, args=(stdin,), daemon=True),
                         threading.Thread(target=self._read, args=(self.proc.stdout, self.out, True), daemon=True),
                         threading.Thread(target=self._read, args=(self.proc.stderr, self.err, False), daemon=True)]
        for t in self._threads:
            t.start()

    def _feed(self, data: bytes) -> None:
        with contextlib.suppress(BrokenPipeError, OSError):
            self.proc.stdin.write(data)
        with contextlib.suppress(BrokenPipeError, OSError):
            self.proc.stdin.close()

    def _read(self, stream, buf: bytearray, is_out: bool) -> None:
        limit = READ_LIMIT if is_out else 64 * 1024
        while True:
            chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
            if not chunk:
                break
            room = limit - len(buf)
            if room > 0:
                buf.extend(chunk[:room])
            if len(chunk) > max(room, 0) and is_out:
                self.out_dropped += len(chunk) - max(room, 0)

    def wait(self, timeout: Optional[float]) -> bool:
        """True if it exited in time; on timeout the whole group is killed."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return False
        finally:
            for t in self._threads[1:]:
                t.join(5)
        return True

    def kill(self) -> None:
        for sig, pause in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, 0)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pgid, sig)
            deadline = time.monotonic() + pause
            while pause and time.monotonic() < deadline and self.proc.poll() is None:
                time.sleep(0.05)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)
        # Children that left the group's leader behind still share its group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, signal.SIGKILL)


class CommandWaker:
    """Runs a shell command: the wake on stdin, the reply on stdout."""

    def __init__(self, command: str):
        self.command = command

    def run(self, turn: Turn, on_start: Callable[[int], None], cancel: threading.Event) -> Outcome:
        try:
            proc = Process([self.command], shell=True, stdin=turn.text.encode("utf-8"),
                           env=turn_env(turn), cwd=turn.workdir, on_start=on_start)
        except OSError as exc:
            return Outcome("failed", error=f"could not start the command: {exc.strerror}")
        return finish(proc, turn, cancel)


def finish(proc: Process, turn: Turn, cancel: threading.Event) -> Outcome:
    """Wait for a started process, honouring the timeout and cancellation."""
    deadline = None if turn.timeout is None else time.monotonic() + turn.timeout
    while True:
        step = 0.2 if deadline is None else max(0.0, min(0.2, deadline - time.monotonic()))
        try:
            proc.proc.wait(step)
            break
        except subprocess.TimeoutExpired:
            pass
        if cancel.is_set():
            proc.kill()
            proc.wait(5)
            return Outcome("cut_off", error="the turn was stopped (shutdown or emergency stop)")
        if deadline is not None and time.monotonic() >= deadline:
            proc.kill()
            proc.wait(5)
            return Outcome("cut_off", error=f"timed out after {turn.timeout:g} s")
    proc.wait(5)
    reply, note = settle.decode(bytes(proc.out))
    if proc.out_dropped:
        note = (note + "; " if note else "") + f"{proc.out_dropped:,} bytes of output dropped"
    code = proc.proc.returncode
    if code != 0:
        err = bytes(proc.err).decode("utf-8", "replace").strip().splitlines()
        tail = f": {err[-1][:300]}" if err else ""
        return Outcome("failed", error=f"exit code {code}{tail}", note=note)
    return Outcome("replied", reply=reply, note=note)


def for_agent(agent) -> CommandWaker:
    """The waker for an agent row (``poller.values.AgentInfo``)."""
    if agent.waker == "command":
        return CommandWaker(agent.command)
    raise ValueError(f"unknown waker {agent.waker!r}")
