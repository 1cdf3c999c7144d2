"""What the cycle's tests share: the timeline, a lobby with ada and an agent, and the dial
cache's revision read back from the store."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from poller import models
from poller.store import db

from support.cli import Cli


T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


def at(seconds: float) -> str:
    return (T0 + dt.timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def lobby(cli, command: str) -> Cli:
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "bot", "--command", command)
    cli("set", "cooldown", "0")
    cli("tick", "--now", at(0))  # first run
    return cli


def cached(url: str, title: str):
    engine = db.make_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.select(models.DialCache.revid)
                                .where(models.DialCache.title == title)).scalar()
    finally:
        engine.dispose()
