"""When a setting's value took effect: set, or back to what was before when a row lapsed."""

from __future__ import annotations

import datetime as dt

from poller import settings

T = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


def at(s: float) -> dt.datetime:
    return T + dt.timedelta(seconds=s)


def row(i, value, set_at, until=None, mood=1, agent=2):
    return settings.Row(i, mood, agent, "listening", value, until, set_at)


def test_a_value_took_effect_when_it_was_set():
    r = settings.resolve([row(1, "mentions", at(0)), row(2, "on", at(50))], 1, 2, at(60))
    assert (r["listening"].value, r["listening"].since) == ("on", at(50))


def test_a_lapsed_row_hands_back_when_it_lapsed():
    rows = [row(1, "mentions", at(0)), row(2, "off", at(10), until=at(40))]
    assert settings.resolve(rows, 1, 2, at(30))["listening"].since == at(10)
    after = settings.resolve(rows, 1, 2, at(60))["listening"]
    assert (after.value, after.since) == ("mentions", at(40))
    gone = settings.resolve([row(2, "off", at(10), until=at(40))], 1, 2, at(60))["listening"]
    assert (gone.slot, gone.value, gone.since) == ("default", "on", at(40))


def test_a_default_never_set_has_no_moment():
    assert settings.resolve([], 1, 2, at(0))["listening"].since is None
