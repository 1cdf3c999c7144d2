"""Starting turns: a runner process per turn, or a thread in the poller's own process.

A :class:`Launcher` starts the turn of a recorded wake and keeps track of
the turns it started until they end.  ``ProcessLauncher`` (the default,
``poller.launch = "process"``) runs ``python -m poller.turns.runner WAKE_ID``: a
turn survives its poller's crash and the kill -9 of either is recovered.
``ThreadLauncher`` (``poller.launch = "thread"``) runs the same
:func:`poller.turns.runner.run_turn` in a thread of the poller, sharing its
database connection pool and tokenizer: no interpreter to start per turn,
but a turn ends with its poller (``tick`` waits for its turns).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Optional, Protocol

from poller import logs

from poller.clock import CLOCK_OFFSET_ENV, Clock, wall

from poller.config import Config
from poller.store import Store

log = logging.getLogger("poller.loop")


class Launcher(Protocol):
    detaches: bool  # turns outlive the poller that started them

    def start(self, wake_id: int, now: dt.datetime) -> None: ...
    def running(self) -> set[int]: ...
    def wait(self, timeout: Optional[float] = None) -> bool: ...
    def stop(self) -> None: ...


class ProcessLauncher:
    """One ``python -m poller.turns.runner`` process per turn."""

    def __init__(self, config: Config, *, detach: bool = False,
                 python: str = sys.executable) -> None:
        self.config = config
        self.detaches = detach  # runners outlive us (cron ticks) or die with us (run)
        self.python = python
        self.children: dict[int, subprocess.Popen] = {}

    def start(self, wake_id: int, now: dt.datetime) -> None:
        env = dict(os.environ)
        env["MOOD_POLLER_DB"] = self.config.db_url
        if self.config.source:
            env["MOOD_POLLER_CONFIG"] = self.config.source
        env[CLOCK_OFFSET_ENV] = f"{(now - wall()).total_seconds():.6f}"
        env[logs.LOG_ENV] = logs.spec()  # the runner logs its turn's end the same way
        proc = subprocess.Popen([self.python, "-m", "poller.turns.runner", str(wake_id)], env=env,
                                stdin=subprocess.DEVNULL, start_new_session=self.detaches)
        self.children[wake_id] = proc
        log.info("turn %s started (runner pid %s)", wake_id, proc.pid,
                 extra={"action": "turn_started", "wake_id": wake_id, "pid": proc.pid})

    def running(self) -> set[int]:
        for wake_id, proc in list(self.children.items()):
            if proc.poll() is not None:
                del self.children[wake_id]
        return set(self.children)

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Wait for the runners started here; False if some still run at *timeout*."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for proc in list(self.children.values()):
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                proc.wait(left)
            except subprocess.TimeoutExpired:
                return False
        self.running()
        return True

    def stop(self) -> None:
        """Ask every runner to end its turn (it records the turn as cut off)."""
        for proc in self.children.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)


class ThreadLauncher:
    """Each turn in a thread of this process, through the poller's own store."""

    detaches = False

    def __init__(self, store: Store, config: Config) -> None:
        self.store = store
        self.config = config
        self.threads: dict[int, tuple[threading.Thread, threading.Event]] = {}

    def start(self, wake_id: int, now: dt.datetime) -> None:
        from poller.turns import runner

        cancel = threading.Event()
        clock = Clock(offset=now - wall())
        thread = threading.Thread(target=self._run, args=(runner, wake_id, clock, cancel),
                                  name=f"turn-{wake_id}", daemon=True)
        self.threads[wake_id] = (thread, cancel)
        thread.start()
        log.info("turn %s started (in process)", wake_id,
                 extra={"action": "turn_started", "wake_id": wake_id, "pid": os.getpid()})

    def _run(self, runner, wake_id: int, clock, cancel: threading.Event) -> None:
        try:
            runner.run_turn(self.store, self.config, wake_id, clock, cancel)
        except Exception:  # the thread must not die silently: the next cycle's
            # recovery sees a turn of this process that no thread runs, and closes it
            log.exception("turn %s failed in process", wake_id)

    def running(self) -> set[int]:
        for wake_id, (thread, _) in list(self.threads.items()):
            if not thread.is_alive():
                del self.threads[wake_id]
        return set(self.threads)

    def wait(self, timeout: Optional[float] = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread, _ in list(self.threads.values()):
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                return False
        self.running()
        return True

    def stop(self) -> None:
        for _, cancel in self.threads.values():
            cancel.set()


def for_config(store: Store, config: Config, *, detach: bool = False) -> Launcher:
    """The launcher ``poller.launch`` names.  ``auto`` (the default) runs turns inside a
    poller that stays for them (``run``, ``tick --wait``) and as runner processes where
    they must outlive it (``tick`` from cron, which returns at once)."""
    mode = config.poller.launch
    if mode == "auto":
        mode = "process" if detach else "thread"
    if mode == "thread":
        return ThreadLauncher(store, config)
    return ProcessLauncher(config, detach=detach)
