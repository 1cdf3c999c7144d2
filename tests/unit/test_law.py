"""The scheduling law, as a pure function."""

from __future__ import annotations

import datetime as dt

import pytest

from poller import kinds, law, settings
from poller.cycle import organs

organs.load()  # the kinds are parametrized over as the module is collected
KINDS = [k.name for k in kinds.declared()]

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)
DEFAULTS = {k: v.default for k, v in settings.KEYS.items()}


def facts(kind="mention", **kw):
    s = dict(DEFAULTS, **kw.pop("settings", {}))
    return law.Facts(kind=kind, now=NOW, settings=s, **kw)


def test_a_free_agent_wakes_for_every_kind():
    for kind in KINDS:
        assert law.decide(facts(kind)).code == "woke"


@pytest.mark.parametrize("kind", ["consider", "quiet", "arrival"])
def test_archived_moods_get_no_unprompted_look(kind):
    assert law.decide(facts(kind, archived=True)).code == "skipped:archived"


def test_mentions_still_reach_an_archived_mood():
    assert law.decide(facts("mention", archived=True)).outcome == "wake"


def test_listening_off_holds_mentions_until_it_lapses_and_skips_the_rest():
    until = NOW + dt.timedelta(hours=2)
    d = law.decide(facts("mention", settings={"listening": "off"}, listening_until=until))
    assert (d.outcome, d.reason, d.next_due) == ("hold", "listening-off", until)
    assert law.decide(facts("quiet", settings={"listening": "off"})).code == "skipped:listening-off"
    assert law.decide(facts("consider", settings={"listening": "mentions"})).code == \
        "skipped:listening-mentions"
    assert law.decide(facts("mention", settings={"listening": "mentions"})).outcome == "wake"


def test_busy_holds_a_mention_and_defers_a_consider():
    assert law.decide(facts("mention", busy_here=True)).code == "held:busy"
    assert law.decide(facts("consider", busy_here=True)).code == "deferred:busy"


def test_parallel_turns_cap():
    d = law.decide(facts("mention", running_for_agent=2, settings={"parallel_turns": 2}))
    assert d.code == "held:no-free-slot"


def test_hourly_cap_says_when_a_slot_frees():
    times = tuple(NOW - dt.timedelta(minutes=m) for m in (50, 40, 10))
    d = law.decide(facts("mention", wakes_last_hour=times, settings={"max_wakes_per_hour": 3}))
    assert (d.outcome, d.reason) == ("hold", "hourly-cap")
    assert d.next_due == NOW + dt.timedelta(minutes=10)
    old = tuple(NOW - dt.timedelta(minutes=m) for m in (70, 65, 61))
    assert law.decide(facts("mention", wakes_last_hour=old,
                            settings={"max_wakes_per_hour": 3})).outcome == "wake"


def test_cooldown_defers_unprompted_wakes_but_never_mentions():
    until = NOW + dt.timedelta(seconds=30)
    d = law.decide(facts("quiet", cooldown_until=until))
    assert d.code == "deferred:cooldown-until-2026-11-30T12:00:30Z"
    assert law.decide(facts("mention", cooldown_until=until)).outcome == "wake"


def test_consider_budget_per_hour():
    times = tuple(NOW - dt.timedelta(minutes=m) for m in range(6))
    d = law.decide(facts("consider", considers_last_hour=times))
    assert d.reason == "consider-budget" and d.next_due == min(times) + law.HOUR
    assert law.decide(facts("consider", settings={"considers_per_hour": 0})).code == \
        "skipped:considers-off"


@pytest.mark.parametrize("kw,code", [
    ({"arrival_is_self": True}, "skipped:arrival-is-self"),
    ({"settings": {"discretion": "reserved"}}, "skipped:discretion-reserved"),
    ({"arrival_spoke_recently": True}, "skipped:spoke-recently"),
    ({"arrival_greeted_recently": True}, "skipped:greeted-recently"),
    ({"settings": {"listening": "mentions"}}, "skipped:listening-mentions"),
])
def test_arrival_skip_rules(kw, code):
    assert law.decide(facts("arrival", **kw)).code == code


def test_quiet_needs_a_recent_person_and_idle_on():
    assert law.decide(facts("quiet", person_recent=False)).code == "skipped:no-person-recently"
    assert law.decide(facts("quiet", settings={"idle_after": 0})).code == "skipped:idle-off"


def test_bot_loop_holds_at_the_cap():
    assert law.decide(facts("mention", bot_chain=3, bot_chain_cap=3)).code == "held:bot-loop"
    assert law.decide(facts("mention", bot_chain=2, bot_chain_cap=3)).outcome == "wake"


def test_the_gate_says_what_decide_says_first_whenever_it_speaks():
    """The loop asks `gate` before reading any fact: it must agree with `decide`."""
    import itertools

    now = NOW
    for kind, listening, archived in itertools.product(
            KINDS, ("on", "mentions", "off"), (False, True)):
        values = dict(DEFAULTS, listening=listening)
        until = now + dt.timedelta(hours=1) if listening == "off" else None
        gated = law.gate(kind, now, values, archived, until)
        full = law.decide(law.Facts(kind=kind, now=now, settings=values, archived=archived,
                                    listening_until=until, busy_here=True))
        if gated is not None:
            assert gated == full, (kind, listening, archived)
        else:
            assert full.reason not in ("archived", "listening-off", "listening-mentions")


def test_a_consider_waits_while_the_agent_is_at_work_elsewhere_and_nothing_else_does():
    d = law.decide(facts("consider", running_for_agent=1))
    assert (d.outcome, d.reason) == ("defer", "busy-elsewhere")
    assert d.next_due == NOW + law.BUSY_ELSEWHERE_RECHECK
    for kind in ("mention", "quiet", "arrival"):
        assert law.decide(facts(kind, running_for_agent=1)).outcome == "wake"
    assert law.decide(facts("consider", running_for_agent=0)).outcome == "wake"


# -- calm slows, pressure quickens -----------------------------------------------------------

MIN = dt.timedelta(minutes=1)


@pytest.mark.parametrize("calm,ago_min,code", [
    (0, 1, "woke"),                 # no calm at all
    (2, 1, "woke"),                 # fewer silent turns than calm_after (3)
    (3, 19, "deferred:calm-until-2026-11-30T12:01:00Z"),   # spacing 10 min doubled: 20
    (3, 21, "woke"),
    (4, 39, "deferred:calm-until-2026-11-30T12:01:00Z"),   # doubled again: 40
    (4, 41, "woke"),
    (40, 60 * 11, "deferred:calm-until-2026-11-30T13:00:00Z"),  # never past the 12 h rest
    (40, 60 * 12, "woke"),
])
def test_a_calm_mood_slows_its_considers(calm, ago_min, code):
    d = law.decide(facts("consider", calm_turns=calm, calm_last=NOW - ago_min * MIN))
    assert d.code == code


def test_calm_follows_the_budget_and_calm_after_and_touches_no_other_kind():
    last = NOW - 30 * MIN
    # 12 an hour: 5 min spacing, doubled once at 3 in a row: 10 min, long past
    assert law.decide(facts("consider", calm_turns=3, calm_last=last,
                            settings={"considers_per_hour": 12})).code == "woke"
    assert law.decide(facts("consider", calm_turns=3, calm_last=last,
                            settings={"considers_per_hour": 1})).outcome == "defer"
    # calm_after 0: never slows; 5: not yet
    for n in (0, 5):
        assert law.decide(facts("consider", calm_turns=4, calm_last=NOW - MIN,
                                settings={"calm_after": n})).code == "woke"
    for kind in ("mention", "quiet", "arrival"):
        assert law.decide(facts(kind, calm_turns=9, calm_last=NOW - MIN)).code == "woke"


def test_one_law_slows_quiet_looks_and_considers_up_to_the_rest():
    assert law.slowed(600, 0) == dt.timedelta(minutes=10)
    assert law.slowed(600, -1) == dt.timedelta(minutes=10)
    assert law.slowed(600, 3) == dt.timedelta(minutes=80)
    assert law.slowed(3000, 4) == law.REST  # 13 h 20 min, capped at 12 h
    assert law.slowed(3000, 10_000) == law.REST  # no overflow however calm it gets
