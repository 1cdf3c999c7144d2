"""Away and back, the pure parts: the catalog, the away gate of the law, the idle nudge
(across daylight saving time), names, and the frames it adds to wakes."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from poller import away, kinds, law, settings, tokens
from poller.away import catalog
from poller.wake import compose
from poller.config import WakeConfig

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)
DEFAULTS = {k: v.default for k, v in settings.KEYS.items()}

GOOD = """\
archive_after_minutes = 30
idle_nudge_minutes = 15
min_gap_minutes = 60
active_hours = "22:00-02:00"
catch_up_limit = 5

[[catalog]]
id = "creek_walk"
label = "out for a creek walk"
duration_minutes = [20, 45]
seed = "A short walk along the creek."

[[catalog]]
id = "nap"
label = "napping"
duration_minutes = [60, 60]
reachable = false
seed = "A nap."
"""


# -- the catalog -------------------------------------------------------------------------------


def test_a_catalog_with_every_knob_parses():
    c = catalog.parse(GOOD, "a.toml")
    assert c.ids == ("creek_walk", "nap")
    assert (c.archive_after_minutes, c.idle_nudge_minutes, c.min_gap_minutes,
            c.catch_up_limit) == (30, 15, 60, 5)
    assert c.active_hours == (dt.time(22, 0), dt.time(2, 0))
    walk, nap = c.entries
    assert walk.duration == (20, 45) and walk.reachable and walk.content_source == "authored"
    assert nap.reachable is False and c.entry("nap") is nap and c.entry("swim") is None


def test_the_defaults_are_the_seeds():
    c = catalog.parse('[[catalog]]\nid = "a"\nlabel = "out"\nduration_minutes = [1, 2]\n'
                      'seed = "s"\n')
    assert (c.archive_after_minutes, c.idle_nudge_minutes, c.min_gap_minutes,
            c.catch_up_limit, c.active_hours) == (45, 20, 90, 20, None)


@pytest.mark.parametrize("text", ["", "# all commented out\n", "idle_nudge_minutes = 5\n",
                                  "catalog = []\n"])
def test_an_empty_catalog_turns_the_feature_off(text):
    assert catalog.parse(text, "empty.toml") is None


def test_a_missing_file_turns_the_feature_off(tmp_path):
    assert catalog.load(str(tmp_path / "nowhere.toml")) is None


def test_the_kits_skeleton_ships_disabled():
    from support.machine import REPO

    assert catalog.load(str(REPO / "memory-lane" / "activities.example.toml")) is None
    import re

    text = (REPO / "memory-lane" / "activities.example.toml").read_text()
    uncommented = re.sub(r"(?m)^# (?=\w+ = |\[\[)", "", text)
    assert catalog.parse(uncommented).ids == ("creek_walk", "reading")


def entry(**over) -> str:
    fields = {"id": '"walk"', "label": '"out for a walk"', "duration_minutes": "[10, 20]",
              "seed": '"A walk."', **over}
    return "\n".join(f"{k} = {v}" for k, v in fields.items() if v is not None)


@pytest.mark.parametrize("text, line, words", [
    ("archive_after_minutes = -1\n", 1, "archive_after_minutes must be from 0 to"),
    ("\nidle_nudge_minutes = 0\n", 2, "idle_nudge_minutes must be from 1"),
    ('min_gap_minutes = "90"\n', 1, "min_gap_minutes must be a whole number"),
    ('active_hours = "25:00-23:00"\n', 1, "active_hours must be \"HH:MM-HH:MM\""),
    ('active_hours = "10:00-10:00"\n', 1, "must not start and end at the same time"),
    ("idle_nudge = 5\n", 1, "idle_nudge is not a catalog knob"),
    ("[focus]\ncatch_up_limit = 3\n", 1, "focus is not a catalog knob"),
    ("[[catalog]]\n" + entry(duration_minutes="[30, 10]"), 4,
     "catalog[1].duration_minutes must be [lo, hi] with 0 < lo <= hi"),
    ("[[catalog]]\n" + entry(duration_minutes="[0, 10]"), 4, "0 < lo <= hi"),
    ("[[catalog]]\n" + entry(duration_minutes="[10]"), 4, "must be [lo, hi]"),
    ("[[catalog]]\n" + entry(duration_minutes=None), 1, "catalog[1].duration_minutes is missing"),
    ("[[catalog]]\n" + entry(seed=None), 1, "catalog[1].seed is missing"),
    ("[[catalog]]\n" + entry(label='""'), 3, "catalog[1].label must be a text"),
    ("[[catalog]]\n" + entry(reachable='"yes"'), 6, "catalog[1].reachable must be true or false"),
    ("[[catalog]]\n" + entry(content_source='"adapter"'), 6, "reserved"),
    ("[[catalog]]\n" + entry(content_source='"video"'), 6, 'must be "authored"'),
    ("[[catalog]]\n" + entry(id='"Walk Fast"'), 2, "catalog[1].id must be lower-case"),
    ("[[catalog]]\n" + entry(id='"sleep"'), 2, "'sleep' is reserved"),
    ("[[catalog]]\n" + entry(colour='"red"'), 6, "catalog[1].colour is not a catalog key"),
    ("[[catalog]]\n" + entry() + "\n\n[[catalog]]\n" + entry(), 8,
     "catalog[2].id 'walk' is given twice"),
])
def test_an_invalid_catalog_is_refused_naming_the_key_and_its_line(text, line, words):
    with pytest.raises(catalog.CatalogError) as info:
        catalog.parse(text, "acts.toml")
    assert str(info.value).startswith(f"acts.toml line {line}: ")
    assert words in str(info.value)
    assert info.value.exit_code == 78


def test_broken_toml_is_refused_with_its_line():
    with pytest.raises(catalog.CatalogError, match=r"not valid TOML: .*line 2"):
        catalog.parse('[[catalog]]\nid = "walk\n', "acts.toml")


def test_a_file_is_read_again_only_when_it_changes(tmp_path):
    path = tmp_path / "acts.toml"
    path.write_text(GOOD)
    first = catalog.load(str(path))
    assert catalog.load(str(path)) is first
    path.write_text(GOOD.replace("[20, 45]", "[25, 45]") + "\n")
    assert catalog.load(str(path)).entries[0].duration == (25, 45)


@pytest.mark.parametrize("hours, at, inside", [
    (None, "03:00", True),
    ((dt.time(10), dt.time(23)), "10:00", True),
    ((dt.time(10), dt.time(23)), "23:00", False),
    ((dt.time(10), dt.time(23)), "09:59", False),
    ((dt.time(22), dt.time(2)), "23:30", True),
    ((dt.time(22), dt.time(2)), "01:59", True),
    ((dt.time(22), dt.time(2)), "02:00", False),
    ((dt.time(22), dt.time(2)), "12:00", False),
])
def test_active_hours_may_wrap_midnight(hours, at, inside):
    assert catalog.in_hours(hours, dt.time.fromisoformat(at)) is inside


# -- the away gate -----------------------------------------------------------------------------


def facts(kind="mention", **kw):
    return law.Facts(kind=kind, now=NOW, settings=dict(DEFAULTS, **kw.pop("settings", {})), **kw)


def out(left_here=True, reachable=True, *pingers):
    return away.Away(NOW - dt.timedelta(minutes=10), NOW + dt.timedelta(minutes=20), reachable,
                    left_here, tuple(pingers))


ADA = away.Pinger("ada", full_person=True)
ADA_JUDGED = away.Pinger("ada", full_person=True, judged=True)
BOB_LOOK = away.Pinger("bob", full_person=False)
BOT = away.Pinger("otherbot", full_person=False)


@pytest.mark.parametrize("kind, away_, code", [
    # at the screen: the law as ever
    ("mention", None, "woke"),
    ("consider", None, "woke"),
    # out: considers, quiet looks, arrivals, follow-ups, nudges are skipped
    ("consider", out(True, True), "skipped:away"),
    ("quiet", out(True, True), "skipped:away"),
    ("arrival", out(True, True), "skipped:away"),
    ("cut-off", out(True, True), "skipped:away"),
    ("nudge", out(True, True), "skipped:away"),
    # a trusted person's ping in the Mood it left, while reachable: the judgment
    ("mention", out(True, True, ADA), "woke"),
    ("mention", out(True, True, BOB_LOOK, ADA), "woke"),
    # anything else is noted for the return
    ("mention", out(False, True, ADA), "skipped:away-noted-other-mood"),
    ("mention", out(True, False, ADA), "skipped:away-noted-unreachable"),
    ("mention", out(True, True, BOB_LOOK), "skipped:away-noted-trust"),
    ("mention", out(True, True, BOT), "skipped:away-noted-trust"),
    ("mention", out(True, True, ADA_JUDGED), "skipped:away-noted-judged"),
    ("mention", out(True, True, ADA_JUDGED, BOB_LOOK), "skipped:away-noted-judged"),
    # a return's pings wait while it is out again
    ("return", out(True, True), "deferred:away-until-2026-11-30T12:20:00Z"),
])
def test_the_away_gate(kind, away_, code):
    assert law.decide(facts(kind, away=away_)).code == code


def test_judges_are_the_unjudged_trusted_people_once_each():
    a = out(True, True, ADA, BOB_LOOK, ADA, away.Pinger("cy", True), away.Pinger("dee", True, True))
    assert a.judges() == ("ada", "cy")
    assert out(False, True, ADA).judges() == () and out(True, False, ADA).judges() == ()


def test_the_moods_own_gates_come_first():
    a = out(False, True, ADA)
    assert law.decide(facts("quiet", away=a, archived=True)).code == "skipped:archived"
    assert law.decide(facts("mention", away=a, settings={"listening": "off"})).code == \
        "held:listening-off"


def test_a_judgment_still_waits_for_a_busy_mood():
    assert law.decide(facts("mention", away=out(True, True, ADA), busy_here=True)).code == \
        "held:busy"


def test_scheduled_kinds_pierce_an_absence(monkeypatch):
    assert law.decide(facts("quiet", away=out())).code == "skipped:away"
    assert law.decide(facts("alarm", away=out())).code == "woke"
    monkeypatch.setitem(kinds._KINDS, "quiet",  # a kind declared to pass through an absence
                        dataclasses.replace(kinds.spec("quiet"), while_away="pass"))
    assert law.decide(facts("quiet", away=out())).code == "woke"


def test_a_return_is_owed_like_a_mention():
    assert law.decide(facts("return", archived=True)).code == "woke"
    assert law.decide(facts("return", settings={"listening": "mentions"})).code == "woke"
    assert law.decide(facts("return", settings={"listening": "off"})).code == \
        "deferred:listening-off"
    assert law.decide(facts("return", cooldown_until=NOW + dt.timedelta(minutes=5))).code == \
        "woke"
    assert law.decide(facts("nudge", cooldown_until=NOW + dt.timedelta(minutes=5))).outcome == \
        "defer"


# -- the idle nudge ------------------------------------------------------------------------------

DAYTIME = catalog.parse(GOOD.replace('"22:00-02:00"', '"10:00-23:00"'))


def idle(now, **kw):
    base = dict(zone="Europe/Berlin", away=False, quiet_since=now - dt.timedelta(minutes=16))
    base.update(kw)
    return away.Idle(now=now, **base)


def utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc)


def test_a_nudge_needs_quiet_no_activity_a_gap_since_the_return_and_no_recent_nudge():
    now = utc("2026-11-30 12:00")  # 13:00 in Berlin
    assert away.nudge_blocked(idle(now), DAYTIME) == ""
    assert away.nudge_blocked(idle(now, away=True), DAYTIME) == "away"
    assert away.nudge_blocked(idle(now, quiet_since=None), DAYTIME) == "never-spoke"
    assert away.nudge_blocked(idle(now, quiet_since=now - dt.timedelta(minutes=14)),
                              DAYTIME) == "not-quiet"
    assert away.nudge_blocked(idle(now, last_return=now - dt.timedelta(minutes=59)),
                              DAYTIME) == "min-gap"
    assert away.nudge_blocked(idle(now, last_return=now - dt.timedelta(minutes=60)),
                              DAYTIME) == ""
    assert away.nudge_blocked(idle(now, last_nudge=now - dt.timedelta(minutes=14)),
                              DAYTIME) == "debounce"
    assert away.nudge_blocked(idle(now, last_nudge=now - dt.timedelta(minutes=15)),
                              DAYTIME) == ""


@pytest.mark.parametrize("when, inside", [
    # The last Sunday of March 2027 (the 28th): at 01:00 UTC Berlin goes from CET to CEST.
    ("2027-03-27 08:30", False),  # Saturday: 09:30 CET, before 10:00
    ("2027-03-28 08:30", True),  # Sunday: 10:30 CEST, inside
    ("2027-03-27 21:30", True),  # 22:30 CET
    ("2027-03-28 21:30", False),  # 23:30 CEST: after 23:00
    # The last Sunday of October 2027 (the 31st): at 01:00 UTC back from CEST to CET.
    ("2027-10-30 08:30", True),  # 10:30 CEST
    ("2027-10-31 08:30", False),  # 09:30 CET
    ("2027-10-30 21:30", False),  # 23:30 CEST
    ("2027-10-31 21:30", True),  # 22:30 CET
])
def test_active_hours_follow_the_agents_clock_across_daylight_saving_time(when, inside):
    now = utc(when)
    assert away.nudge_blocked(idle(now), DAYTIME) == ("" if inside else "outside-hours")
    assert away.nudge_blocked(idle(now, zone="UTC"), DAYTIME) == \
        ("" if catalog.in_hours(DAYTIME.active_hours, now.time()) else "outside-hours")


# -- names and the account -------------------------------------------------------------------


@pytest.mark.parametrize("label, phrase", [
    ("out for a creek walk", "a creek walk"), ("at the library", "the library"),
    ("reading", "reading"), ("Out on a run", "a run"), ("away at the market", "the market"),
])
def test_what_it_came_back_from(label, phrase):
    assert away.phrase(label) == phrase
    assert away.return_text(label, "It was cold.") == f"[returned from {phrase}] It was cold."


def test_presence_is_on_the_agents_clock():
    due = utc("2027-03-28 12:30")
    assert away.presence("out for a creek walk", due, "Europe/Berlin") == \
        "out for a creek walk, back about 14:30 CEST"
    assert away.presence("napping", due, "UTC") == "napping, back about 12:30 UTC"


def test_the_account_prompt_carries_the_provenance_rule_seed_note_and_hint():
    system, user = away.experience_messages(away.Outing(
        "helper", "out for a creek walk", "A walk along the creek.", "clear my head", 35, True))
    assert "Never invent claims, conversations or encounters involving real people" in \
        system["content"]
    assert "places, things and the agent itself" in system["content"]
    assert "A walk along the creek." in user["content"] and "clear my head" in user["content"]
    assert "about 35 minutes" in user["content"] and "came back earlier" in user["content"]


def test_an_account_is_one_paragraph_without_mentions_and_capped():
    text = away.clean_account("I walked.\n\nThe @water was cold;\x07 @ada was not there. " * 100)
    assert "\n" not in text and "@" not in text and "\x07" not in text
    assert len(text) <= away.EXPERIENCE_CHARS


# -- frames ---------------------------------------------------------------------------------------

COUNTER = tokens.counter()


def test_preview_frames_show_the_judgment_return_and_nudge():
    frames = compose.render_frames(WakeConfig())
    assert "a judgment (come back, or stay out) ====" in frames
    assert 'reason="return"' in frames and 'reason="nudge"' in frames
    assert "Replying means coming back now" in frames
    assert "```away\nactivity: «activity id»" in frames


def wake(**kw):
    base = dict(kind="mention", mood="lobby", agent="helper", now=NOW,
                woke=[compose.WakePost(id=9, sender="ada", created_at=NOW, text="@helper hi")])
    base.update(kw)
    return compose.compose(compose.WakeRequest(**base), config=WakeConfig(), counter=COUNTER,
                           summarizer=None).text


def test_the_away_how_to_lists_the_activities_only_when_there_are_some():
    plain = wake()
    offered = wake(activities=[compose.ActivityOffer("creek_walk", "out for a creek walk", 20, 45),
                               compose.ActivityOffer("nap", "napping", 60, 60, False)])
    assert "```away" not in plain
    assert offered.replace(
        "```away\nactivity: creek_walk\nnote: why you are going (optional, one line)\n```\n"
        "Your activities: creek_walk (out for a creek walk, 20-45 minutes), nap (napping, "
        "60 minutes; pings wait until you are back).\n", "").replace(
        "To step away from the screen for a while, end your reply with an away block; your "
        "reply is posted first, as your goodbye:\n", "") == plain


def test_a_judgment_says_how_long_who_and_what_replying_means():
    text = wake(judgment=compose.Judgment("out for a creek walk", 12 * 60, ["ada", "cy"]))
    assert ("You are away from the screen (out for a creek walk) and have been for about "
            "12 minutes; @ada and @cy pinged you. Replying means coming back now") in text
    assert "<silent>a few words on why</silent> means staying out" in text


def test_a_return_wake_lists_pings_and_the_posts_around_the_newest_three_only():
    def p(i, text, who="ada", minutes=30):
        return compose.WakePost(id=i, sender=who, text=text,
                                created_at=NOW - dt.timedelta(minutes=minutes - i))

    pings = [compose.MissedPing("attic", p(i, f"@helper ping {i}"),
                                [p(i - 1, f"before {i}", "bob"), p(i, f"@helper ping {i}")]
                                if i >= 10 else ()) for i in (2, 4, 6, 10, 12, 14)]
    pings.append(compose.MissedPing("lobby", p(20, "@helper in the lobby")))
    back = compose.Back(away.phrase("out for a creek walk"), 40 * 60, False, True, pings)
    text = wake(kind="return", woke=[], back=back, history=[p(20, "@helper in the lobby")])
    assert "You are back at the screen from a creek walk: you were out for about 40 minutes." in text
    assert "7 posts named you or replied to you" in text
    assert text.count("@helper ping ") == 6 + 3  # six one-liners, three pings again in excerpts
    assert "One of them is in what was said here, below." in text
    assert text.count("@helper in the lobby") == 1  # in the catch-up only
    for i in (10, 12, 14):
        assert f"before {i}" in text
    assert "after a long absence you see the last posts" in text


def test_a_return_wake_with_very_many_pings_lists_the_newest_and_counts_the_rest():
    pings = [compose.MissedPing("attic", compose.WakePost(
        id=i, sender="ada", text=f"@helper number {i} " + "x" * 500,
        created_at=NOW - dt.timedelta(minutes=300 - i))) for i in range(1, 201)]
    text = wake(kind="return", woke=[], back=compose.Back("napping", 3600, pings=pings))
    assert "While you were out, 200 posts named you" in text
    assert "150 older ones are not listed." in text
    assert "@helper number 151 " in text and "@helper number 150 " not in text
    assert len(text) <= WakeConfig().prompt_cap_chars
