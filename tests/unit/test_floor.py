"""One floor per Mood: of several agents that could speak unasked at once, one does.

The law's floor rule and the initiative order as tables (pure), then two and
three agents through real turns on SQLite and PostgreSQL.

Here, the pure part (no database, no process); the rest sits under the same name
in the other layers.
"""

from __future__ import annotations

import datetime as dt

import pytest

from poller import law, settings

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)
DEFAULTS = {k: spec.default for k, spec in settings.KEYS.items()}


def facts(kind: str, **kw) -> law.Facts:
    return law.Facts(kind=kind, now=NOW, settings={**DEFAULTS, **kw.pop("settings", {})}, **kw)


# -- the law: the floor --------------------------------------------------------------------


@pytest.mark.parametrize("kind, floor_holder, extra, code", [
    ("consider", "alpha", {}, "deferred:floor-taken-by-alpha"),
    ("quiet", "alpha", {}, "deferred:floor-taken-by-alpha"),
    ("arrival", "alpha", {}, "deferred:floor-taken-by-alpha"),
    ("mention", "alpha", {}, "woke"),  # a mention is owed: never subject to the floor
    ("cut-off", "alpha", {}, "woke"),  # nor the follow-up of a turn cut off
    ("consider", None, {}, "woke"),  # no floor taken: as before
    ("quiet", None, {}, "woke"),
    # The floor is the last rule: an agent that could not speak anyway says why.
    ("consider", "alpha", {"settings": {"considers_per_hour": 0}}, "skipped:considers-off"),
    ("consider", "alpha", {"cooldown_until": NOW + dt.timedelta(minutes=1)},
     "deferred:cooldown-until-2026-11-30T12:01:00Z"),
    ("consider", "alpha", {"busy_here": True}, "deferred:busy"),
    ("quiet", "alpha", {"person_recent": False}, "skipped:no-person-recently"),
    ("arrival", "alpha", {"arrival_is_self": True}, "skipped:arrival-is-self"),
    ("arrival", None, {"arrival_untrusted": True}, "skipped:arrival-untrusted"),
    ("mention", "alpha", {"busy_here": True}, "held:busy"),
])
def test_the_floor_table(kind, floor_holder, extra, code):
    assert law.decide(facts(kind, floor_holder=floor_holder, **extra)).code == code


def test_a_long_handle_still_fits_the_reason_column():
    d = law.decide(facts("consider", floor_holder="a" * 64))
    assert len(d.reason) == law.REASON_MAX and d.reason.startswith("floor-taken-by-aaa")


# -- the initiative order --------------------------------------------------------------------


def ago(hours: float) -> dt.datetime:
    return NOW - dt.timedelta(hours=hours)


C = law.Contender


@pytest.mark.parametrize("contenders, order", [
    # equal in everything: the lower agent id first, whatever order they come in
    ([C(3, "c"), C(1, "a"), C(2, "b")], ["a", "b", "c"]),
    # readiness: the one that spoke longest ago (or never) first
    ([C(1, "a", last_spoke=ago(0.1)), C(2, "b", last_spoke=ago(2)), C(3, "c")], ["c", "b", "a"]),
    # readiness stops at the cap: 13 h and never are equal, then by id
    ([C(2, "b", last_spoke=ago(13)), C(1, "a")], ["a", "b"]),
    # speed multiplies readiness
    ([C(1, "a", last_spoke=ago(1)), C(2, "b", speed=3.0, last_spoke=ago(1))], ["b", "a"]),
    # heat adds: the Mood's own agent runs hot even having just spoken
    ([C(1, "a"), C(2, "b", heat=20.0, last_spoke=ago(0))], ["b", "a"]),
    # load takes away: busy elsewhere yields to an idle one
    ([C(1, "a", load=2, last_spoke=ago(1)), C(2, "b", last_spoke=ago(1))], ["b", "a"]),
    # speed 0: only heat and load count
    ([C(1, "a", speed=0.0), C(2, "b", speed=0.0, heat=0.5)], ["b", "a"]),
])
def test_the_initiative_table(contenders, order):
    assert [s.handle for s in law.initiative(contenders, NOW)] == order


def test_a_standing_shows_what_its_score_is_made_of():
    (s,) = law.initiative([C(7, "a", speed=2.0, heat=1.5, last_spoke=ago(3), load=1)], NOW)
    assert (s.score, s.readiness_h, s.speed, s.heat, s.load) == (6.5, 3.0, 2.0, 1.5, 1)


@pytest.mark.parametrize("key, raw, ok", [
    ("initiative_speed", "2.5", 2.5), ("initiative_speed", "0", 0.0), ("heat", "-3", -3.0),
    ("initiative_speed", "-1", None), ("initiative_speed", "nan", None), ("heat", "hot", None),
    ("heat", "101", None),
])
def test_the_initiative_settings(key, raw, ok):
    from poller import errors

    if ok is None:
        with pytest.raises(errors.InvalidSetting):
            settings.validate(key, raw)
    else:
        assert settings.validate(key, raw) == ok
