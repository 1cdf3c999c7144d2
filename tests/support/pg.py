"""A throwaway PostgreSQL server for the test session, on a loopback port.

``initdb``/``pg_ctl`` refuse to run as root, so as root they run as the
``postgres`` user through ``runuser``.  The data directory lives in a temp
dir with ``fsync=off`` and is removed at the end.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass

from support.waiting import HANG_GUARD_S, wait_for


def find_bindir() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return os.path.dirname(found[-1]) if found else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class PgServer:
    bindir: str
    datadir: str
    port: int
    root: str
    as_user: list[str]
    opts: str = ""
    _counter: int = 0

    def url(self, dbname: str) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{dbname}"

    def new_database(self, template: str | None = None) -> str:
        """A new database, empty or a copy of *template* (which nobody may be connected to)."""
        import psycopg

        self._counter += 1
        name = f"t{os.getpid()}_{self._counter}"
        copy = f' TEMPLATE "{template}"' if template else ""
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres",
                             autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"{copy}')
        return self.url(name)

    def pause(self) -> None:
        """Stop the server as a crash would (``-m immediate``), keeping its data."""
        subprocess.run(self.as_user + [f"{self.bindir}/pg_ctl", "-D", self.datadir, "-m",
                                       "immediate", "-w", "stop"], check=True,
                       capture_output=True, timeout=HANG_GUARD_S)

    def resume(self) -> None:
        """Start it again after :meth:`pause`, and wait until it takes connections."""
        _pg_start(self.as_user, self.bindir, self.datadir, self.opts, self.root)
        wait_for(lambda: _accepting(self.port), what=f"PostgreSQL back on port {self.port}")

    def stop(self) -> None:
        subprocess.run(self.as_user + [f"{self.bindir}/pg_ctl", "-D", self.datadir, "-m",
                                       "immediate", "stop"], capture_output=True, timeout=HANG_GUARD_S)
        shutil.rmtree(self.root, ignore_errors=True)


def start(durable: bool = False) -> PgServer:
    """*durable*: every commit reaches the disk before it is acknowledged, so a crash
    (:meth:`PgServer.pause`) loses nothing committed."""
    bindir = find_bindir()
    if bindir is None:
        raise FileNotFoundError("no PostgreSQL binaries under /usr/lib/postgresql/*/bin")
    root = tempfile.mkdtemp(prefix="mood-pg-")
    datadir = os.path.join(root, "data")
    as_user: list[str] = []
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(root, "postgres", "postgres")
        os.chmod(root, 0o700)
    subprocess.run(as_user + [f"{bindir}/initdb", "-D", datadir, "-A", "trust", "-U", "postgres",
                              "--no-sync", "-E", "UTF8"],
                   check=True, capture_output=True, timeout=HANG_GUARD_S)
    port = free_port()
    opts = (f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c max_connections=100 "
            + ("" if durable else "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"))
    _pg_start(as_user, bindir, datadir, opts, root)
    server = PgServer(bindir, datadir, port, root, as_user, opts)
    try:
        wait_for(lambda: _accepting(port), what=f"PostgreSQL to accept connections on port {port}")
    except AssertionError:
        server.stop()
        raise
    return server


def _pg_start(as_user: list[str], bindir: str, datadir: str, opts: str, root: str) -> None:
    subprocess.run(as_user + [f"{bindir}/pg_ctl", "-D", datadir, "-o", opts, "-l",
                              os.path.join(root, "log"), "-w", "-t", f"{HANG_GUARD_S:.0f}", "start"],
                   check=True, capture_output=True, timeout=HANG_GUARD_S + 30)


def _accepting(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False
