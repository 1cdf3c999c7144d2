"""Away and back, end to end through the CLI on a real store, with real agent processes
and a real OpenAI-compatible endpoint on loopback: going out, the gate while out, coming
back (timer or called back), fresh eyes, the missed-ping wake, the idle nudge, and the
feature off leaving every wake byte for byte as it was.  Time is always ``--now``."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from support.agents import agent_command
from support.endpoint import endpoint  # noqa: F401  (the fixture: a real endpoint on loopback)
from support.timeline import T0, TimelineCli, at, since_t0
from support.away import CATALOG, GOODBYE, Room, kinds

MIN = 60

@pytest.fixture
def cli(sqlite_url):
    c = TimelineCli(sqlite_url)
    c("init")
    return c


# -- going out ---------------------------------------------------------------------------------


def test_an_away_block_posts_the_goodbye_then_the_absence_starts(cli, tmp_path):
    room = Room(cli, tmp_path)
    room.go_out()
    goodbye = room.posts()[-1]
    assert (goodbye["sender"], goodbye["text"]) == ("helper", "Off for a walk, back soon.")
    (a,) = room.activities()
    assert a["agent"] == "helper" and a["activity"] == "creek_walk" and a["mood"] == "lobby"
    assert a["note"] == "clear my head" and a["reachable"] is True
    departed, due = since_t0(a["departed_at"]), since_t0(a["due_at"])
    assert 2 <= departed < 60 and due - departed == 30 * MIN  # its turn settled just after 2
    assert a["returned_at"] is None and a["status"] == "away"
    # Shown as away everywhere.
    status = json.loads(cli("status", "--json").out)["agents"][0]
    assert status["state"] == "away"
    assert status["away"]["line"] == "out for a creek walk, back about 12:30 UTC"
    assert "helper: away (out for a creek walk, back about 12:30 UTC)" in cli("status").out
    (listed,) = json.loads(cli("agent", "list", "--json").out)
    assert listed["away"]["activity"] == "creek_walk"
    assert "AWAY" in cli("agent", "list").out
    # The wake it went out from offered its activities.
    assert "```away\nactivity: creek_walk\n" in room.seen()[0]["text"]
    assert "Your activities: creek_walk (out for a creek walk, 30 minutes)" in room.seen()[0]["text"]


def test_the_duration_is_rolled_from_the_entrys_range(cli, tmp_path):
    room = Room(cli, tmp_path, CATALOG.replace("[30, 30]", "[10, 50]"))
    room.go_out()
    (a,) = room.activities()
    minutes = (dt.datetime.fromisoformat(a["due_at"].replace("Z", "+00:00"))
               - dt.datetime.fromisoformat(a["departed_at"].replace("Z", "+00:00"))) / dt.timedelta(minutes=1)
    assert 10 <= minutes <= 50 and minutes == int(minutes)


def test_an_unknown_activity_is_refused_and_the_next_wake_says_why(cli, tmp_path):
    room = Room(cli, tmp_path)
    room.say(GOODBYE.format("swim"), "fine")
    room.post(1, "ada", "@helper go?")
    room.tick(2)
    assert room.activities() == []
    notice = room.posts()[-1]
    assert notice["kind"] == "system" and "away block was refused" in notice["text"]
    room.post(3, "ada", "@helper still here?")
    room.tick(4)
    assert ("your away block: there is no activity 'swim' in your catalog "
            "(yours: creek_walk, long_walk, nap)") in room.seen()[-1]["text"]


def test_an_agent_without_a_catalog_cannot_go_out(cli, tmp_path):
    room = Room(cli, tmp_path, activities=False)
    room.say(GOODBYE.format("creek_walk"))
    room.post(1, "ada", "@helper go?")
    room.tick(2)
    assert room.activities() == []
    assert "you have no activities catalog" in room.posts()[-1]["text"]
    assert "```away" not in room.seen()[0]["text"]


def test_the_api_and_the_pages_show_it_away(cli, tmp_path):
    from support import webserver
    from poller.clock import Clock

    room = Room(cli, tmp_path)
    room.go_out()
    served = webserver.start(cli.db_url, clock=Clock.at(T0 + dt.timedelta(minutes=5)))
    try:
        c = served.client(served.person("otto", "full", operator=True))
        (helper,) = c.get("/api/v1/agents").json()
        assert helper["state"] == "away" and helper["away"]["mood"] == "lobby"
        assert helper["away"]["line"] == "out for a creek walk, back about 12:30 UTC"
        assert c.get("/api/v1/why", params={"agent": "helper", "mood": "lobby"}).json()[
            "away"]["activity"] == "creek_walk"
        assert "out for a creek walk, back about 12:30 UTC" in c.get("/ops/agents").text
        assert ("helper is away from the screen: out for a creek walk, back about 12:30 UTC"
                in c.get("/m/lobby").text)
    finally:
        served.stop()


# -- while out: the gate -------------------------------------------------------------------------


def test_while_out_only_a_trusted_ping_in_the_mood_it_left_earns_a_judgment(cli, tmp_path):
    room = Room(cli, tmp_path)
    cli("set", "considers_per_hour", "6")
    room.go_out()
    room.post(60, "bob", "@helper are you there?")  # trust look
    room.post(61, "ada", "@helper a question up here", mood="attic")  # another Mood
    room.post(62, "ada", "anyone seen the keys?")  # a consider, in time
    room.tick(63)
    room.tick(80)  # the consider is due
    assert room.why()["mention"]["code"] == "skipped:away-noted-trust"
    assert room.why()["consider"]["code"] == "skipped:away"
    assert room.why("attic")["mention"]["code"] == "skipped:away-noted-other-mood"
    notes = [p["text"] for p in room.posts() if p["kind"] == "system"]
    assert notes == ["@helper is away from the screen (out for a creek walk, back about 12:30 "
                     "UTC): mentions of it are kept for when it is back."]
    assert kinds(room) == ["mention"]  # nothing woke it
    # ada, trust full, in the Mood it left: one judgment, with the state line.
    room.say("<silent>the walk can't wait</silent>")
    asked = room.post(120, "ada", "@helper quick one: is the build green?")
    room.tick(121)
    judgment = room.wakes()[-1]
    assert judgment["kind"] == "mention" and judgment["answers"] == [asked]
    text = room.seen()[-1]["text"]
    assert ("You are away from the screen (out for a creek walk) and have been for about "
            "2 minutes; @ada pinged you. Replying means coming back now") in text
    assert "```away" not in text  # no how-to to go out while out
    assert room.activities()[0]["status"] == "away"  # silent: it stays out
    # ada has had hers: her next ping is noted; cy's earns cy one.
    room.post(180, "ada", "@helper please?")
    room.tick(181)
    assert room.why()["mention"]["code"] == "skipped:away-noted-judged"
    room.say("<silent>later</silent>")
    room.post(240, "cy", "@helper me too")
    room.tick(241)
    assert "@cy pinged you" in room.seen()[-1]["text"]
    assert kinds(room) == ["mention", "mention", "mention"]
    assert room.activities()[0]["status"] == "away"


def test_an_unreachable_activity_notes_even_a_trusted_ping(cli, tmp_path):
    room = Room(cli, tmp_path)
    room.go_out(activity="nap")
    room.post(60, "ada", "@helper wake up!")
    room.tick(61)
    assert room.why()["mention"]["code"] == "skipped:away-noted-unreachable"
    assert kinds(room) == ["mention"]


def test_a_real_reply_to_a_judgment_cuts_the_absence_short(cli, tmp_path):
    room = Room(cli, tmp_path)
    room.go_out()
    room.say("Coming back to look at it now.")
    room.post(300, "ada", "@helper the build is red")
    room.tick(301)  # the judgment; its reply calls it back
    room.tick(302)  # it comes back
    (a,) = room.activities()
    assert a["status"] == "cut_short" and a["cut_short"] and a["cut_short_by"] == "ada"
    assert a["returned_at"] == at(302) and a["missed_pings"] == 0
    texts = [(p["sender"], p["kind"], p["text"]) for p in room.posts()[-2:]]
    assert texts == [("helper", "post", "Coming back to look at it now."),
                     ("helper", "return", "[returned from a creek walk] I'm back from a creek walk.")]
    assert json.loads(cli("status", "--json").out)["agents"][0]["away"] is None
    assert kinds(room) == ["mention", "mention"]  # no return wake: nothing was missed


# -- coming back -----------------------------------------------------------------------------------


def test_a_return_with_nothing_missed_is_silent(cli, tmp_path):
    room = Room(cli, tmp_path)
    back = room.go_out()
    room.post(60, "ada", "just chatting")
    room.tick(back - 2)
    assert room.activities()[0]["status"] == "away"
    report = room.tick(back)
    (a,) = room.activities()
    assert a["status"] == "completed" and a["returned_at"] == at(back)
    assert a["missed_pings"] == 0 and not a["cut_short"]
    assert report["wakes"] == [] and kinds(room) == ["mention"]  # no wake, no announcement
    told = room.posts()[-1]
    assert told["kind"] == "return" and told["sender"] == "helper"
    assert told["text"] == "[returned from a creek walk] I'm back from a creek walk."
    assert not [p for p in room.posts() if p["kind"] == "system"]
    room.tick(back + MIN)
    assert len(room.posts()) == 4  # came back once


def test_a_return_with_missed_pings_wakes_once_with_all_of_them(cli, tmp_path):
    room = Room(cli, tmp_path)
    back = room.go_out()
    pings = [room.post(60, "bob", "@helper a question from bob")]
    for i in range(5):
        room.post(100 + 10 * i, "cy", f"attic chatter {i}", mood="attic")
        pings.append(room.post(101 + 10 * i, "ada", f"@helper attic ping {i}", mood="attic"))
    room.post(200, "cy", "attic chatter after", mood="attic")
    room.tick(201)
    room.say("Back. Bob: yes. Ada: see the attic.")
    room.tick(back)  # back, and the return wake
    w = room.wakes()[-1]
    assert w["kind"] == "return" and w["mood"] == "lobby" and w["answers"] == pings
    assert w["tools"] == "look"  # bob has trust look
    text = room.seen()[-1]["text"]
    assert "You are back at the screen from a creek walk: you were out for about 30 minutes." in text
    assert "While you were out, 6 posts named you or replied to you" in text
    assert "One of them is in what was said here, below." in text  # bob's, in the lobby
    # Each attic ping listed once; the newest three again with about five posts around each.
    assert text.count("@helper attic ping 0") == 1 and "attic chatter 0" not in text
    for i in (2, 3, 4):
        assert text.count(f"@helper attic ping {i}") >= 2
    assert "attic chatter 2" in text and "attic chatter after" in text
    (a,) = room.activities()
    assert a["missed_pings"] == 6 and a["status"] == "completed"
    room.tick(back + MIN)
    assert kinds(room) == ["mention", "return"]  # each ping answered once


def test_a_ping_the_gate_never_saw_is_found_when_it_comes_back(cli, tmp_path):
    room = Room(cli, tmp_path)
    back = room.go_out()
    lost = room.post(60, "ada", "@helper lost", mood="attic")
    room.tick(61)  # noted...
    engine = sa.create_engine(cli.db_url)
    with engine.begin() as c:  # ...and the note lost (as a ping noted only in memory would be)
        assert c.exec_driver_sql("DELETE FROM activity_pings").rowcount == 1
    engine.dispose()
    room.tick(back)
    assert room.wakes()[-1]["kind"] == "return" and room.wakes()[-1]["answers"] == [lost]


@pytest.mark.parametrize("activity, fresh", [("long_walk", True), ("creek_walk", False)])
def test_fresh_eyes_after_a_long_absence(cli, tmp_path, activity, fresh):
    room = Room(cli, tmp_path)
    room.post(0.5, "cy", "attic before it left", mood="attic")
    back = room.go_out(activity=activity)
    for i in range(8):
        room.post(100 + i, "bob", f"attic backlog {i}", mood="attic")
    named = room.post(108, "cy", "did @helper see this?", mood="attic")
    for i in range(3):
        room.post(110 + i, "bob", f"attic latest {i}", mood="attic")
    room.say("Back!", "Answering in the attic.")
    room.tick(200)
    room.tick(back)  # back: cy's mention makes a return wake
    assert room.wakes()[-1]["kind"] == "return"
    room.post(back + 10, "ada", "@helper what did I miss up here?", mood="attic")
    room.tick(back + 11)
    text = room.seen()[-1]["text"]
    assert "@helper what did I miss up here?" in text
    for i in range(3):
        assert f"attic latest {i}" in text
    assert "did @helper see this?" in text  # a post naming it is always caught
    if fresh:  # only the last 3 posts since it left, and those naming it
        assert "attic backlog" not in text and "attic before it left" not in text
        assert "earlier post" not in text  # the missed backlog is not summarized either
    else:
        assert all(f"attic backlog {i}" in text for i in range(8))
        assert "attic before it left" in text
    (a,) = room.activities()
    assert a["fresh_eyes"] is fresh
    assert named in [p["id"] for p in room.posts("attic")]


# -- the account of the outing --------------------------------------------------------------------


def with_endpoint(cli, tmp_path, url: str) -> TimelineCli:
    config = tmp_path / "config.toml"
    config.write_text(f'[summarizer]\nurl = "{url}"\nmodel = "tiny"\ntimeout = 2.0\n')
    return TimelineCli(cli.db_url, str(config))


@pytest.mark.parametrize("endpoint", ["ok"], indirect=True)
def test_the_account_is_written_by_the_configured_endpoint(cli, tmp_path, endpoint):
    room = Room(with_endpoint(cli, tmp_path, endpoint.url), tmp_path)
    room.tick(room.go_out())
    back = room.posts()[-1]
    assert back["kind"] == "return"
    # The endpoint's text, escaped like any post when shown; posted as the agent's own.
    assert back["text"].startswith("[returned from a creek walk] They settled points 1-40.")
    (req,) = endpoint.requests
    assert req["path"] == "/v1/chat/completions" and req["body"]["model"] == "tiny"
    system, user = req["body"]["messages"]
    assert "Never invent claims, conversations or encounters involving real people" in \
        system["content"]
    assert "A short walk along the creek." in user["content"]
    assert "clear my head" in user["content"] and "about 30 minutes" in user["content"]


@pytest.mark.parametrize("endpoint", ["fail", "garbage"], indirect=True)
def test_a_failing_endpoint_gives_a_stock_line_and_the_return_still_finishes(cli, tmp_path,
                                                                             endpoint):
    room = Room(with_endpoint(cli, tmp_path, endpoint.url), tmp_path)
    room.tick(room.go_out())
    assert room.posts()[-1]["text"] == "[returned from a creek walk] I'm back from a creek walk."
    assert room.activities()[0]["status"] == "completed" and len(endpoint.requests) == 1


# -- the idle nudge ---------------------------------------------------------------------------------


def iso(text: str) -> str:
    return text.replace(" ", "T") + "Z"


def test_an_idle_nudge_inside_active_hours_across_daylight_saving_time(cli, tmp_path):
    room = Room(cli, tmp_path, CATALOG.replace("min_gap_minutes = 90",
                                               'min_gap_minutes = 90\nactive_hours = "10:00-23:00"'))
    cli("set", "timezone", "Europe/Berlin", "--agent", "helper")
    c = room.c
    room.say("Morning!")
    c("post", "lobby", "--as", "ada", "--at", iso("2027-03-27 07:00"), "@helper morning")
    c("tick", "--now", iso("2027-03-27 07:00:01"), "--wait")
    # Quiet since 08:00 CET; at 09:30 CET (08:30 UTC) it is outside 10:00-23:00.
    c("tick", "--now", iso("2027-03-27 08:30"), "--wait")
    assert kinds(room) == ["mention"]
    # The next day the clocks went forward: 08:30 UTC is 10:30 CEST, inside.
    room.say("I'll stretch my legs.\n```away\nactivity: creek_walk\n```")
    c("tick", "--now", iso("2027-03-28 08:30"), "--wait")
    nudge = room.wakes()[-1]
    assert nudge["kind"] == "nudge" and nudge["mood"] == "lobby" and nudge["tools"] == "look"
    text = room.seen()[-1]["text"]
    assert 'The Mood "lobby", where you last spoke, has been quiet for about 26 hours.' in text
    assert "Your activities: creek_walk" in text and "Going out is your choice." in text
    # Going out stays its own choice: this time it went.
    assert room.activities()[0]["activity"] == "creek_walk"
    c("tick", "--now", iso("2027-03-28 08:31"), "--wait")
    assert kinds(room) == ["mention", "nudge"]


def test_no_nudge_soon_after_a_return_nor_twice_within_the_quiet_window(cli, tmp_path):
    room = Room(cli, tmp_path)
    back = room.go_out()
    room.tick(back)  # back, silently
    room.tick(back + 30 * MIN)  # quiet for an hour, but back only 30 minutes ago
    assert kinds(room) == ["mention"]
    room.tick(back + 91 * MIN)  # min_gap passed: a nudge
    assert kinds(room) == ["mention", "nudge"]
    room.tick(back + 100 * MIN)  # still quiet, but the last nudge is 9 minutes old
    assert kinds(room) == ["mention", "nudge"]
    room.tick(back + 112 * MIN)
    assert kinds(room) == ["mention", "nudge", "nudge"]


# -- the feature off ----------------------------------------------------------------------------------


def timeline(c: TimelineCli, tmp_path: Path, *extra: str) -> list[tuple]:
    """The same conversation every time: a mention, a consider, an arrival, a quiet look."""
    c("mood", "add", "lobby")
    c("person", "add", "ada", "--trust", "full")
    c("person", "add", "bob", "--trust", "look")
    c("person", "add", "cy", "--trust", "full")
    c("agent", "add", "helper", "--command", agent_command(tmp_path, "reply"), *extra)
    c("set", "cooldown", "0")
    c("set", "idle_after", "600")
    c("tick", "--now", at(0))
    steps = [(1, "ada", "@helper hello there"), (60, "bob", "nice weather"),
             (200, "ada", "@helper and again")]
    for seconds, who, text in steps:
        c("post", "lobby", "--as", who, "--at", at(seconds), text)
        c("tick", "--now", at(seconds + 1), "--wait")
        c("tick", "--now", at(seconds + 30), "--wait")
    c("signin", "cy", "--mood", "lobby", "--at", at(300))
    for seconds in (301, 1000, 2000, 3000):
        c("tick", "--now", at(seconds), "--wait")
    return [(w["kind"], w["tools"], w["answers"], w["text"])
            for w in (json.loads(c("wakes", "show", str(w["id"]), "--json").out)
                      for w in sorted(json.loads(c("wakes", "--json").out), key=lambda w: w["id"]))]


def test_with_no_catalog_every_wake_is_byte_for_byte_what_it_was(tmp_path, migrated_sqlite):
    import shutil

    runs = {}
    empty = tmp_path / "empty.toml"
    empty.write_text("# nothing yet\nidle_nudge_minutes = 5\n")
    for name, extra in (("none", ()), ("missing", ("--activities", str(tmp_path / "no.toml"))),
                        ("empty", ("--activities", str(empty)))):
        where = tmp_path / name
        where.mkdir()
        shutil.copyfile(migrated_sqlite, where / "moods.db")
        runs[name] = timeline(TimelineCli(f"sqlite:///{where / 'moods.db'}"), where, *extra)
    assert {"mention", "consider", "arrival", "quiet"} <= {k for k, *_ in runs["none"]}
    assert runs["missing"] == runs["none"]
    assert runs["empty"] == runs["none"]


# -- the catalog at the edges -------------------------------------------------------------------------


def test_an_invalid_catalog_is_refused_at_agent_set_and_at_start_up(cli, tmp_path):
    room = Room(cli, tmp_path)
    bad = tmp_path / "bad.toml"
    bad.write_text(CATALOG.replace("[60, 60]\nreachable", "[60, 6]\nreachable"))
    r = cli.fails("agent", "set", "helper", "--activities", str(bad))
    assert f"{bad} line 21: catalog[3].duration_minutes must be [lo, hi]" in r.err
    assert r.code == 1
    assert json.loads(cli("agent", "list", "--json").out)[0]["options"]["activities"] == \
        str(room.catalog)
    # The file in use goes bad: a poller refuses to start on it (exit 78, don't restart).
    room.catalog.write_text("idle_nudge = 3\n" + CATALOG)
    r = cli.fails("tick", "--now", at(5))
    assert r.code == 78 and f"{room.catalog} line 1: idle_nudge is not a catalog knob" in r.err


def test_a_missing_catalog_is_noted_and_forgotten_with_an_empty_value(cli, tmp_path):
    room = Room(cli, tmp_path)
    r = cli("agent", "set", "helper", "--activities", str(tmp_path / "later.toml"))
    assert "does not exist yet: activities stay off until it has one" in r.err
    assert "activities: " in r.out
    cli("agent", "set", "helper", "--activities", "")
    assert "activities" not in json.loads(cli("agent", "list", "--json").out)[0]["options"]
    room.say(GOODBYE.format("creek_walk"))
    room.post(1, "ada", "@helper go?")
    room.tick(2)
    assert room.activities() == [] and "```away" not in room.seen()[-1]["text"]


def test_the_catalog_is_kept_when_the_waker_changes(cli, tmp_path):
    room = Room(cli, tmp_path)
    cli("agent", "set", "helper", "--url", "https://agent.test/wake")
    assert json.loads(cli("agent", "list", "--json").out)[0]["options"]["activities"] == \
        str(room.catalog)


def test_preview_frames_show_the_away_frames(cli):
    out = cli("preview", "--frames").out
    assert "while it is away: a judgment" in out
    assert 'reason="return"' in out and 'reason="nudge"' in out
