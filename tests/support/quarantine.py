"""A poisoned post and the world it lands in: a mood, ada, and an agent that replies."""

from __future__ import annotations

import datetime as dt
import json

import sqlalchemy as sa

from support.agents import agent_command


T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


def at(seconds: float) -> str:
    return (T0 + dt.timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def world(cli, tmp_path):
    cli("mood", "add", "lobby")
    cli("mood", "add", "attic")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "bot", "--command", agent_command(tmp_path, "reply"))
    cli("set", "cooldown", "0")
    cli("tick", "--now", at(0))
    return cli


def poison_post(db_url: str, text: str = "@bot from the far future") -> int:
    """A row written past the product's checks (an old version, a hand edit)."""
    engine = sa.create_engine(db_url)
    with engine.begin() as c:
        mood = c.exec_driver_sql("SELECT id FROM moods WHERE slug = 'lobby'").scalar()
        ada = c.exec_driver_sql("SELECT id FROM participants WHERE handle = 'ada'").scalar()
        c.exec_driver_sql(
            "INSERT INTO posts (mood_id, sender_id, created_at, text, kind, tokens) "
            "VALUES (?, ?, '9999-12-31 23:59:00.000000', ?, 'post', 5)", (mood, ada, text))
        pid = c.exec_driver_sql("SELECT max(id) FROM posts").scalar()
    engine.dispose()
    return pid


def wakes(cli):
    return sorted(json.loads(cli("wakes", "--json").out), key=lambda w: w["id"])
