"""The pictures' data, on SQLite and PostgreSQL: each agent's turns, tokens and dollars
a day and a Mood's posts a day, over the last two weeks in UTC days."""

from __future__ import annotations

import datetime as dt

from poller.store import history
from support.history import turn_on
from support.webserver import store_for

NOW = dt.datetime(2031, 5, 6, 9, 0, tzinfo=dt.timezone.utc)


def test_days_are_counted_by_utc_day_oldest_first(any_cli):
    any_cli("mood", "add", "lobby")
    any_cli("person", "add", "ada", "--trust", "full")
    any_cli("agent", "add", "helper", "--command", "cat")
    store = store_for(any_cli.db_url)
    try:
        day = dt.timedelta(days=1)
        turn_on(store, "helper", "lobby", NOW - 13 * day, 100, 0.5)
        turn_on(store, "helper", "lobby", NOW - 14 * day, 7, 7.0)  # before the two weeks
        for _ in range(3):
            turn_on(store, "helper", "lobby", NOW - 2 * day, 1000, 0.02)
        turn_on(store, "helper", "lobby", NOW.replace(hour=0, minute=0, second=1), 500, None)
        turn_on(store, "helper", "lobby", NOW + dt.timedelta(minutes=1), 9, 9.0)  # not yet
        for at in ("2031-05-04T23:59:59Z", "2031-05-05T00:00:00Z", "2031-05-05T12:00:00Z"):
            any_cli("post", "lobby", "--as", "ada", "--at", at, "hello")
        days = history.agent_days(store, NOW)["helper"]
        assert [d.day for d in days] == history.days_ending(NOW, 14)
        assert days[0].day == dt.date(2031, 4, 23) and days[-1].day == dt.date(2031, 5, 6)
        got = {d.day.isoformat(): (d.turns, d.tokens, round(d.usd, 6)) for d in days if d.turns}
        assert got == {"2031-04-23": (1, 100, 0.5), "2031-05-04": (3, 3000, 0.06),
                       "2031-05-06": (1, 500, 0.0)}
        posts = {d.day.isoformat(): d.posts for d in history.mood_days(store, "lobby", NOW)
                 if d.posts}
        assert posts == {"2031-05-04": 1, "2031-05-05": 2}
    finally:
        store.engine.dispose()
