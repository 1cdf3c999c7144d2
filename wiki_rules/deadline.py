"""One read from the wiki with a deadline on the whole answer, not on each byte.

Socket timeouts bound each wait for the next bytes, so a server that sends one
byte every two seconds never trips a five-second timeout and a read can last
for ever.  Here every socket a read opens is watched by its :class:`Deadline`;
when the time is up the caller calls :meth:`Deadline.expire`, which shuts those
sockets down, so the blocked read returns at once and its connection is
closed as it fails.  :func:`bounded_session` is the ``requests`` session
(handed to mwclient) whose connections are watched that way.

Only the name lookup before a connection cannot be cut short; the caller keeps
at most one read in flight so a stuck lookup costs one thread, not one a cycle.
"""

from __future__ import annotations

import functools
import socket
import threading
from typing import Any

import requests
import requests.adapters


class Deadline:
    """The sockets of one read, shut down together when its time is up."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.expired = False

    def watch(self, sock: socket.socket) -> None:
        """Keep *sock* to shut at the deadline (at once if it has passed)."""
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)

    def expire(self) -> None:
        """End the read: every socket it opened is shut down for both directions."""
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    # shutdown, not close: it wakes a recv blocked in the reading thread, and that
    # thread closes the socket itself, so no descriptor is reused under it.
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed or never connected


def bounded_session(deadline: Deadline, user_agent: str) -> requests.Session:
    """A session that makes no retries and whose every connection *deadline* watches."""
    session = requests.Session()
    session.headers["User-Agent"] = user_agent
    adapter = _WatchedAdapter(deadline)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


class _WatchedAdapter(requests.adapters.HTTPAdapter):
    """Hands the deadline to every connection pool it makes, proxies' included."""

    def __init__(self, deadline: Deadline) -> None:
        self.deadline = deadline  # before super(): it builds the first pool manager
        super().__init__(max_retries=0)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        _watch_pools(self.poolmanager, self.deadline)

    def proxy_manager_for(self, proxy: str, **kwargs: Any):
        manager = super().proxy_manager_for(proxy, **kwargs)
        _watch_pools(manager, self.deadline)
        return manager


def _watch_pools(manager, deadline: Deadline) -> None:
    if getattr(manager, "watched_by", None) is deadline:
        return  # proxy managers are cached and handed out again
    manager.watched_by = deadline
    manager.pool_classes_by_scheme = {
        scheme: functools.partial(_watched_pool, pool_class, deadline)
        for scheme, pool_class in manager.pool_classes_by_scheme.items()}


def _watched_pool(pool_class: type, deadline: Deadline, host: str, port: int, **kwargs: Any):
    pool = pool_class(host, port, **kwargs)
    pool.ConnectionCls = _watched_connection(pool.ConnectionCls)
    pool.conn_kw["deadline"] = deadline
    return pool


@functools.lru_cache(maxsize=None)
def _watched_connection(base: type) -> type:
    """*base* (a urllib3 connection class) whose new sockets its deadline watches,
    from before any TLS handshake on them."""

    class Watched(base):
        def __init__(self, *args: Any, deadline: Deadline, **kwargs: Any) -> None:
            self.deadline = deadline
            super().__init__(*args, **kwargs)

        def _new_conn(self) -> socket.socket:
            sock = super()._new_conn()
            self.deadline.watch(sock)
            return sock

    Watched.__name__ = Watched.__qualname__ = f"Watched{base.__name__}"
    return Watched
