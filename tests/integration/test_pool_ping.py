"""PostgreSQL connections are pinged only after lying idle; a dropped one is replaced."""

from __future__ import annotations

import psycopg
import pytest
import sqlalchemy as sa

from poller.store import db


def backend_pid(engine) -> int:
    with engine.connect() as c:
        return c.execute(sa.text("SELECT pg_backend_pid()")).scalar()


def terminate(url: str, pid: int) -> None:
    conninfo = sa.engine.make_url(url).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(conninfo, autocommit=True) as c:
        assert c.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0]


@pytest.fixture
def engine(pg_url):
    e = db.make_engine(pg_url)
    yield e
    e.dispose()


def test_a_connection_used_a_moment_ago_is_not_pinged(engine, monkeypatch):
    pings = []
    real = engine.dialect.do_ping
    monkeypatch.setattr(engine.dialect, "do_ping", lambda conn: pings.append(1) or real(conn))
    first = backend_pid(engine)
    for _ in range(5):
        assert backend_pid(engine) == first
    assert pings == []
    monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 0.0)
    assert backend_pid(engine) == first and pings == [1]


def test_an_idle_connection_the_server_dropped_is_replaced_before_use(engine, pg_url, monkeypatch):
    monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 0.0)
    old = backend_pid(engine)
    terminate(pg_url, old)
    new = backend_pid(engine)  # the ping failed, the pool connected again
    assert new != old


def test_a_dropped_connection_fails_once_then_the_pool_reconnects(engine, pg_url, monkeypatch):
    monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 3600.0)
    old = backend_pid(engine)
    terminate(pg_url, old)
    with pytest.raises(sa.exc.DBAPIError) as info:
        backend_pid(engine)
    assert info.value.connection_invalidated
    assert backend_pid(engine) != old
