"""``mood-poller run`` as a real process: started in its own process group on the
tests' timeline, waited on cycle by cycle (through its lease), stopped by SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import sqlalchemy as sa

from support.machine import REPO
from support.timeline import at
from support.waiting import HANG_GUARD_S, wait_for


def start_run(db_url: str, tmp_path, *extra: str, name: str = "run",
              now: str | None = at(0)) -> subprocess.Popen:
    """``mood-poller run`` in its own process group; *now* None runs it on the wall clock."""
    config = tmp_path / "config.toml"
    if not config.exists():
        config.write_text("[poller]\nlease = 3.0\nshutdown_grace = 2.0\n")
    log = open(tmp_path / f"{name}.log", "ab")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    clock = ["--now", now] if now else []
    return subprocess.Popen([sys.executable, "-m", "poller", "--db", db_url, "--config", str(config),
                             *clock, "run", "--interval", "0.2", *extra], stdout=log, stderr=log,
                            env=env, cwd=tmp_path, start_new_session=True)


def lease(db_url: str):
    """The SQLite poller lease as (holder, expires_at), or None."""
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as c:
            return c.exec_driver_sql("SELECT holder, expires_at FROM leases WHERE name = 'poller'").first()
    finally:
        engine.dispose()


def wait_cycles(db_url: str, n: int) -> None:
    """Wait until the running SQLite poller has begun *n* more cycles.

    Each cycle renews the lease to its own clock's time, so every change seen
    is a cycle begun; when the n-th is seen, the n-1 before it have finished.
    """
    seen = [lease(db_url)]

    def renewed():
        row = lease(db_url)
        if row is not None and row != seen[-1]:
            seen.append(row)
        return len(seen) > n

    wait_for(renewed, what=f"{n} more cycles of the poller")


def stop(proc: subprocess.Popen) -> int:
    """SIGTERM to the poller's process group; its exit code once it has shut down."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    return proc.wait(HANG_GUARD_S)
