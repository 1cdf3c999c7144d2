"""Times in real zones (poller.schedules.timing) and the check-in rules (poller.schedules.checkins), pure."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from hypothesis import given, settings, strategies as st

from poller.schedules import checkins, timing
from poller import errors

UTC = dt.timezone.utc


def z(*a) -> dt.datetime:
    return dt.datetime(*a, tzinfo=UTC)


def shown(ts, tz="Europe/Berlin"):
    return [timing.shown(t, tz) for t in ts]


def test_a_deadline_is_shown_with_date_zone_weekday_and_offset():
    assert timing.shown(z(2026, 10, 6, 19), "Europe/Berlin") == \
        "2026-10-06 21:00 Europe/Berlin (Tue, UTC+02:00)"
    assert timing.shown(z(2026, 12, 1, 14), "America/New_York") == \
        "2026-12-01 09:00 America/New_York (Tue, UTC-05:00)"


@pytest.mark.parametrize("tz,day,gap_wall,moved,fold_day,fold_wall,first_utc", [
    ("Europe/Berlin", 29, "02:30", "2026-03-29 03:30 Europe/Berlin (Sun, UTC+02:00)",
     (2026, 10, 25), "02:30", z(2026, 10, 25, 0, 30)),
    ("America/New_York", 8, "02:30", "2026-03-08 03:30 America/New_York (Sun, UTC-04:00)",
     (2026, 11, 1), "01:30", z(2026, 11, 1, 5, 30)),
])
def test_a_gap_moves_forward_and_an_ambiguous_time_takes_its_first(tz, day, gap_wall, moved,
                                                                   fold_day, fold_wall, first_utc):
    spring = timing.Spec.make("daily", gap_wall, tz)
    got = spring.between(z(2026, 3, day - 2, 12), z(2026, 3, day, 12))
    assert timing.shown(got[1], tz) == moved  # the day of the gap, moved by the gap
    assert timing.shown(got[0], tz).startswith(f"2026-03-{day - 1:02d} {gap_wall}")
    autumn = timing.Spec.make("daily", fold_wall, tz)
    around = autumn.between(z(*fold_day) - dt.timedelta(days=1), z(*fold_day) + dt.timedelta(days=1))
    assert first_utc in around  # the first of the two
    assert first_utc + dt.timedelta(hours=1) not in around  # never the second as well
    warned = " ".join(timing.warnings(spring, z(2026, 1, 1)) + timing.warnings(autumn, z(2026, 1, 1)))
    assert "does not exist" in warned and "moved forward" in warned
    assert "happens twice" in warned and "the first is taken" in warned


def test_an_ordinary_time_gets_no_warning():
    assert timing.warnings(timing.Spec.make("daily", "21:00", "Europe/Berlin"), z(2026, 1, 1)) == []


def test_cron_in_a_zone_skips_the_weekend_and_keeps_local_time_across_dst():
    spec = timing.Spec.make("cron", "0 9 * * MON-FRI", "Europe/Berlin")
    got = spec.between(z(2026, 10, 23, 12), z(2026, 10, 28, 12))  # Fri .. Wed, over the change
    assert shown(got) == ["2026-10-26 09:00 Europe/Berlin (Mon, UTC+01:00)",
                          "2026-10-27 09:00 Europe/Berlin (Tue, UTC+01:00)",
                          "2026-10-28 09:00 Europe/Berlin (Wed, UTC+01:00)"]


def test_daily_across_dst_keeps_the_wall_time():
    spec = timing.Spec.make("daily", "09:00", "America/New_York")
    got = spec.between(z(2026, 10, 31), z(2026, 11, 3))
    assert [t.hour for t in got] == [13, 14, 14]  # 09:00 EDT, then 09:00 EST
    assert {timing.shown(t, "America/New_York")[11:16] for t in got} == {"09:00"}


@pytest.mark.parametrize("kind,text,tz,message", [
    ("daily", "25:00", "Europe/Berlin", "not a local time"),
    ("at", "2026-13-01 09:00", "Europe/Berlin", "not a local date"),
    ("cron", "0 9 * *", "Europe/Berlin", "five-field cron"),
    ("daily", "09:00", "", "time zone is required"),
    ("daily", "09:00", "CEST", "unknown time zone"),
    ("daily", "09:00", "Mars/Olympus", "unknown time zone"),
    ("daily", "09:00", "localtime", "unknown time zone"),
])
def test_bad_specs_are_refused_with_a_reason(kind, text, tz, message):
    with pytest.raises(errors.UserError, match=message):
        timing.Spec.make(kind, text, tz)


# -- the check-in rules ------------------------------------------------------------------------

MON_SETUP = z(2026, 10, 5, 8)  # Monday 10:00 Berlin


def terms(**kw) -> checkins.Terms:
    base = dict(kind="daily", spec="21:00", tz="Europe/Berlin", status="active",
                answered_until=None, processed_until=MON_SETUP, since=MON_SETUP)
    return checkins.Terms(**(base | kw))


def berlin(day: int, hh: int, mm: int = 0) -> dt.datetime:
    return dt.datetime(2026, 10, day, hh, mm, tzinfo=timing.zone("Europe/Berlin")).astimezone(UTC)


def test_the_seeds_monday_example():
    t = terms()
    monday = berlin(5, 21)
    assert checkins.missed(t, berlin(5, 21, 1)) == [monday]
    back = checkins.ordinary(t, berlin(5, 21, 10))  # "I'm back" at 21:10 closes Monday
    assert back.answered == monday
    t = terms(answered_until=back.answered_until, processed_until=monday)
    assert checkins.ordinary(t, berlin(5, 21, 11)).answered is None  # again: nothing
    assert checkins.next_check(t) == berlin(6, 21)  # Tuesday 21:00 still due
    tuesday = checkins.ordinary(t, berlin(6, 20))  # "I'm here" Tuesday 20:00
    assert tuesday.answered == berlin(6, 21)


def test_a_deadline_shortly_after_midnight_counts_only_from_midnight_on():
    t = terms(spec="00:30")
    assert checkins.ordinary(t, berlin(5, 23, 50)).answered is None  # Monday night: not yet
    assert checkins.ordinary(t, berlin(6, 0, 10)).answered == berlin(6, 0, 30)


def test_a_dated_check_in_names_only_the_next_or_the_latest_passed_deadline():
    t = terms()
    now = berlin(6, 12)  # Tuesday noon: Monday 21:00 passed, Tuesday 21:00 next
    assert checkins.dated(t, berlin(6, 21), now).answered == berlin(6, 21)
    assert checkins.dated(t, berlin(5, 21), now).answered == berlin(5, 21)
    with pytest.raises(errors.UserError, match="not a deadline a check-in may name"):
        checkins.dated(t, berlin(7, 21), now)
    answered = terms(answered_until=berlin(6, 21))
    assert checkins.dated(answered, berlin(6, 21), now).answered is None  # a repeat
    with pytest.raises(errors.UserError, match="paused"):
        checkins.dated(terms(status="paused"), berlin(6, 21), now)


def test_a_late_catch_up_records_every_missed_deadline_oldest_first():
    t = terms()
    got = checkins.missed(t, berlin(6, 21, 1))  # the machine was off Monday night
    assert got == [berlin(5, 21), berlin(6, 21)]
    assert checkins.late(got[0], berlin(6, 21, 1), 120)  # judged by the oldest it answers


# -- schedules that can never fire -------------------------------------------------------------

NOW = z(2026, 10, 19, 6)


@pytest.mark.parametrize("kind,text,tz,message", [
    ("cron", "0 0 31 2 *", "UTC", "cron 0 0 31 2 * never fires"),
    ("cron", "0 0 30 2 *", "Europe/Berlin", "cron 0 0 30 2 * never fires"),
    ("cron", "0 0 31 4,6,9,11 *", "UTC", "never fires"),
    ("at", "9999-12-31 23:59", "Etc/GMT+12", "at 9999-12-31 23:59 Etc/GMT+12 never fires"),
    ("at", "0001-01-01 00:00", "Etc/GMT-12", "never fires"),
    ("at", "2026-10-18 09:00", "UTC", "2026-10-18 09:00 UTC (Sun, UTC+00:00) has passed"),
])
def test_a_schedule_that_can_never_fire_is_refused_in_one_line(kind, text, tz, message):
    spec = timing.Spec.make(kind, text, tz)
    with pytest.raises(errors.UserError, match=re.escape(message)) as got:
        timing.first_firing(spec, NOW, "an alarm must be in the future")
    assert "\n" not in str(got.value)


def test_the_latest_and_rarest_schedules_that_can_fire_do():
    last = timing.Spec.make("at", "9999-12-31 23:59", "Etc/GMT-12")
    assert timing.first_firing(last, NOW, "") == dt.datetime(9999, 12, 31, 11, 59, tzinfo=UTC)
    assert last.next(last.next(NOW)) is None  # and then it is done, quietly
    leap = timing.Spec.make("cron", "0 0 29 2 *", "UTC")
    assert timing.first_firing(leap, NOW, "") == z(2028, 2, 29)


_FIELD = st.one_of(st.just("*"), st.integers(0, 31).map(str),
                   st.tuples(st.integers(1, 12), st.integers(1, 12)).map(lambda p: f"{p[0]},{p[1]}"),
                   st.integers(1, 15).map(lambda n: f"*/{n}"))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(fields=st.tuples(_FIELD, _FIELD, _FIELD, _FIELD, _FIELD),
       tz=st.sampled_from(["UTC", "Europe/Berlin", "Etc/GMT+12", "Etc/GMT-14", "Pacific/Apia"]),
       year=st.sampled_from([2026, 2400, 9999]))
def test_any_cron_either_fires_ahead_or_is_refused_in_one_line(fields, tz, year):
    try:
        spec = timing.Spec.make("cron", " ".join(fields), tz)
    except errors.UserError:
        return  # not a cron expression: refused as such
    now = dt.datetime(year, 12, 30, 12, tzinfo=UTC)
    try:
        first = timing.first_firing(spec, now, "an alarm must be in the future")
    except errors.UserError as exc:
        assert "never fires" in str(exc) and "\n" not in str(exc)
        return
    assert first >= now
    end = dt.datetime.max.replace(tzinfo=UTC)
    assert all(t > first for t in spec.between(first, first + min(end - first, dt.timedelta(days=3))))
