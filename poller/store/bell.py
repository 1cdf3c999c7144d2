"""Waking a sleeping loop as soon as something worth a cycle is committed.

A running poller looks at its store every ``interval`` seconds.  Between two
looks it sleeps on the process's :data:`BELL`, so a post, a sign-in or a
setting committed by anyone reaches a cycle at once instead of waiting out the
interval:

* in the same process (``serve --with-poller``, a turn's reply) the commit
  rings the bell directly;
* across processes on PostgreSQL the committing transaction sends
  ``NOTIFY mood_poller`` (delivered only when it commits) and the loop keeps a
  connection that ``LISTEN``\\ s for it;
* across processes on SQLite the committing process sends an empty datagram to
  a Unix socket named after the database file, which the loop binds.

A ring carries no data and proves nothing: the cycle it brings forward reads
the store as usual, so a lost or forged ring costs at most one interval or one
idle cycle.  The store marks its sessions (:func:`mark`); a commit of a marked
session calls :func:`committed`.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import select
import socket
import threading
from typing import Callable, Optional

CHANNEL = "mood_poller"  # the PostgreSQL NOTIFY channel


class Doorbell:
    """A bell a loop sleeps on and anyone may ring: any thread, or a signal handler.

    Ringing writes a byte to a pipe and takes no lock, so a handler that runs
    in the middle of another ring (two SIGTERMs in a row) cannot deadlock the
    thread it interrupted.
    """

    def __init__(self) -> None:
        self._r, self._w = os.pipe()  # not inherited by child processes
        os.set_blocking(self._r, False)
        os.set_blocking(self._w, False)

    def ring(self) -> None:
        try:
            os.write(self._w, b"\0")
        except OSError:  # the pipe is full: it has been rung already
            pass

    def pending(self) -> bool:
        """Whether it has been rung since the last sleep (the ring is left in place)."""
        return bool(select.select([self._r], [], [], 0)[0])

    def sleep(self, timeout: float) -> bool:
        """Sleep up to *timeout* seconds or until rung; True if it was rung.

        A ring during the cycle before the sleep ends the sleep at once, so
        nothing committed while a cycle ran waits for the interval.
        """
        select.select([self._r], [], [], max(0.0, timeout))
        rung = False
        while True:
            try:
                chunk = os.read(self._r, 4096)
            except BlockingIOError:
                return rung
            if not chunk:
                return rung
            rung = True


class Stop:
    """The loop's stop flag, safe to set from a signal handler: it takes no lock, and
    it rings :data:`BELL` so a sleeping loop sees it at once."""

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True
        BELL.ring()

    def is_set(self) -> bool:
        return self._set


BELL = Doorbell()


@functools.lru_cache(maxsize=64)
def sqlite_address(path: str) -> bytes:
    """The abstract-namespace socket address for the database file at *path*.

    Abstract names need no file (no path-length limit, nothing left behind);
    a ring holds no data, so another user ringing it costs one idle cycle.
    """
    digest = hashlib.sha256(os.path.realpath(path).encode()).hexdigest()[:32]
    return b"\0mood-poller/" + digest.encode()


def committed(sqlite_file: Optional[str] = None) -> None:
    """A transaction that added something a cycle acts on has committed.

    *sqlite_file*: the SQLite database it committed to, whose loop in another
    process is sent a ring too.
    """
    BELL.ring()
    if not sqlite_file or sqlite_file == ":memory:" or sqlite_file.startswith("file:"):
        return
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.setblocking(False)
        s.sendto(b"", sqlite_address(sqlite_file))


class CommitListener:
    """Rings :data:`BELL` when another process commits: the loop's side."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._closers: list[Callable[[], None]] = []
        self._threads: list[threading.Thread] = []

    def _start(self, target, name: str) -> None:
        t = threading.Thread(target=target, name=name, daemon=True)
        t.start()
        self._threads.append(t)

    def listen_sqlite(self, path: str) -> bool:
        """Bind the file's socket; False when another loop on this file holds it."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sock.bind(sqlite_address(path))
        except OSError:
            sock.close()
            return False
        sock.settimeout(1.0)  # how long closing may wait for this thread
        self._closers.append(sock.close)

        def serve() -> None:
            while not self._stop.is_set():
                try:
                    sock.recv(16)
                except TimeoutError:
                    continue
                except OSError:
                    return
                BELL.ring()

        self._start(serve, "nudge-sqlite")
        return True

    def listen_postgresql(self, url) -> None:
        """Keep a connection that LISTENs for commits, reconnecting when it drops."""
        from poller.store import notify

        self._start(lambda: notify.listen(url, CHANNEL, self._stop, BELL.ring), "nudge-postgresql")

    def close(self) -> None:
        self._stop.set()
        for close in self._closers:
            with contextlib.suppress(Exception):
                close()
        for t in self._threads:
            t.join(timeout=5)
