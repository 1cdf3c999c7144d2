"""PostgreSQL's side of waking the loop: a connection that LISTENs (see poller.store.bell)."""

from __future__ import annotations

import logging
import threading
from typing import Callable

log = logging.getLogger("poller.bell")


def listen(url, channel: str, stop: threading.Event, ring: Callable[[], None]) -> None:
    """Call *ring* for every NOTIFY on *channel* until *stop*, reconnecting with backoff.

    *url* is the store's (``postgresql+psycopg://``); the connection is the
    driver's own, outside the store's pool, for as long as the loop runs.
    Rings once each time the LISTEN is (re)established, for anything committed
    while nobody was listening.
    """
    import sqlalchemy as sa

    engine = sa.create_engine(url, poolclass=sa.pool.NullPool,
                              connect_args={"connect_timeout": 10})
    backoff = 0.5
    while not stop.is_set():
        try:
            raw = engine.raw_connection()
            try:
                conn = raw.driver_connection  # psycopg's, for its notifies()
                conn.autocommit = True
                conn.execute(f"LISTEN {channel}")
                backoff = 0.5
                ring()
                while not stop.is_set():
                    for _ in conn.notifies(timeout=1.0):
                        ring()
            finally:
                raw.close()
        except Exception as exc:  # the database restarting, a network blip
            if stop.is_set():
                return
            log.warning("not listening for commits (%s); retrying in %gs",
                        str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
                        backoff, extra={"action": "bell_retry"})
            stop.wait(backoff)
            backoff = min(backoff * 2, 30.0)
    engine.dispose()
