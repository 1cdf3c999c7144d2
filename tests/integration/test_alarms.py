"""Alarms: a wake at a time in a real zone, one late wake after downtime (never a burst),
the reply block, the law (scram, the hourly cap), and exactly once across pollers.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import json
from support.alarms import alarm_list, berlin, room, wakes


def text_of(cli, wake_id: int) -> str:
    return cli("wakes", "show", str(wake_id)).out


def test_a_daily_alarm_wakes_on_time_then_once_for_three_days_of_downtime(cli, tmp_path):
    c = room(cli, tmp_path)
    c("alarm", "add", "--agent", "bot", "--mood", "lobby", "--daily", "09:00",
      "--tz", "Europe/Berlin", "--note", "look at the overnight build",
      "--now", berlin(2026, 10, 19, 8))
    c("tick", "--now", berlin(2026, 10, 19, 8, 59), "--wait")
    assert wakes(c) == []
    c("tick", "--now", berlin(2026, 10, 19, 9), "--wait")
    (first,) = wakes(c)
    text = text_of(c, first["id"])
    assert "it was due at 2026-10-19 09:00 Europe/Berlin (Mon, UTC+02:00)" in text
    assert "  look at the overnight build" in text and " late" not in text.split("An alarm")[1][:200]
    # Down from Monday 09:01 to Thursday 12:00: three firings passed (Tue, Wed, Thu 09:00).
    c("tick", "--now", berlin(2026, 10, 22, 12), "--wait")
    later = wakes(c)
    assert len(later) == 2  # one wake for all three, never one per firing
    text = text_of(c, later[1]["id"])
    assert "2026-10-20 09:00 Europe/Berlin (Tue, UTC+02:00)" in text
    assert "about 2 days late, covering 3 firings" in text and "noticed late" in text
    (a,) = alarm_list(c)
    assert a["fired"] == 4 and a["next"] == "2026-10-23 09:00 Europe/Berlin (Fri, UTC+02:00)"
    assert "scheduled: alarm bot@lobby 2026-10-23 09:00 Europe/Berlin (Fri, UTC+02:00)" in \
        c("status").out
    c("tick", "--now", berlin(2026, 10, 22, 12, 1), "--wait")
    assert len(wakes(c)) == 2


def test_a_wake_within_the_cutoff_says_how_late_it_is(cli, tmp_path):
    c = room(cli, tmp_path)
    c("alarm", "add", "--agent", "bot", "--mood", "lobby", "--at", "2026-10-19 10:00",
      "--tz", "Europe/Berlin", "--now", berlin(2026, 10, 19, 8))
    c("tick", "--now", berlin(2026, 10, 19, 10, 20), "--wait")
    (w,) = wakes(c)
    text = text_of(c, w["id"])
    assert "This wake comes about 20 minutes late." in text and "noticed only now" not in text
    assert alarm_list(c)[0]["next"] is None  # a once alarm is done


def test_a_daily_alarm_keeps_local_time_across_dst_and_moves_a_gap_time(cli, tmp_path):
    c = room(cli, tmp_path)
    out = c("alarm", "add", "--agent", "bot", "--mood", "lobby", "--daily", "02:30",
            "--tz", "Europe/Berlin", "--json", "--now", berlin(2026, 3, 27, 12))
    assert "does not exist in Europe/Berlin" in out.err and "happens twice" in out.err
    seen = []
    for day in (28, 29, 30):
        c("tick", "--now", berlin(2026, 3, day, 12), "--wait")
        seen.append(text_of(c, wakes(c)[-1]["id"]))
    assert "due at 2026-03-28 02:30 Europe/Berlin (Sat, UTC+01:00)" in seen[0]
    assert "due at 2026-03-29 03:30 Europe/Berlin (Sun, UTC+02:00)" in seen[1]  # the gap
    assert "due at 2026-03-30 02:30 Europe/Berlin (Mon, UTC+02:00)" in seen[2]


def test_a_cron_alarm_fires_on_weekdays_only(cli, tmp_path):
    c = room(cli, tmp_path)
    c("alarm", "add", "--agent", "bot", "--mood", "lobby", "--cron", "0 9 * * MON-FRI",
      "--tz", "America/New_York", "--now", berlin(2026, 10, 23, 8))
    assert alarm_list(c)[0]["next"] == "2026-10-23 09:00 America/New_York (Fri, UTC-04:00)"
    c("tick", "--now", "2026-10-23T13:00:00Z", "--wait")
    assert alarm_list(c)[0]["next"] == "2026-10-26 09:00 America/New_York (Mon, UTC-04:00)"


def test_an_alarm_obeys_scram_and_the_hourly_cap(cli, tmp_path):
    c = room(cli, tmp_path)
    c("alarm", "add", "--agent", "bot", "--mood", "lobby", "--at", "2026-10-19 10:00",
      "--tz", "Europe/Berlin", "--now", berlin(2026, 10, 19, 8))
    c("scram", "--now", berlin(2026, 10, 19, 9))
    c("tick", "--now", berlin(2026, 10, 19, 10), "--wait")
    assert wakes(c) == []
    c("scram", "--lift", "--now", berlin(2026, 10, 19, 10, 5))
    c("set", "max_wakes_per_hour", "0", "--agent", "bot")
    c("tick", "--now", berlin(2026, 10, 19, 10, 6), "--wait")
    assert wakes(c) == []
    why = c("why", "bot", "lobby").out
    assert "alarm" in why and "hourly-cap" in why
    c("set", "max_wakes_per_hour", "30", "--agent", "bot")
    c("tick", "--now", berlin(2026, 10, 19, 10, 7), "--wait")
    (w,) = wakes(c)
    assert "about 7 minutes late" in text_of(c, w["id"])


def test_an_agent_sets_an_alarm_from_a_full_tool_reply_and_a_bad_block_is_refused_whole(
        cli, tmp_path):
    reply = tmp_path / "reply.txt"
    c = room(cli, tmp_path, "file", str(reply))
    reply.write_text("I will look tomorrow.\n```alarm\ndaily: 07:15\ntz: Europe/Berlin\n"
                     "note: check the deploy\n```\n")
    c("post", "lobby", "--as", "ada", "@bot remind yourself", "--at", berlin(2026, 10, 19, 8, 1))
    c("tick", "--now", berlin(2026, 10, 19, 8, 2), "--wait")
    (a,) = alarm_list(c)
    assert (a["agent"], a["kind"], a["spec"], a["set_by"]) == ("bot", "daily", "07:15", "@bot")
    assert a["note"] == "check the deploy"
    posts = json.loads(c("posts", "lobby", "--json").out)
    assert any("set alarm" in p["text"] and "07:15" in p["text"] for p in posts)
    reply.write_text("Again.\n```alarm\ndaily: 07:15\nnote: no zone given\n```\n")
    c("post", "lobby", "--as", "ada", "@bot once more", "--at", berlin(2026, 10, 19, 8, 3))
    c("tick", "--now", berlin(2026, 10, 19, 8, 4), "--wait")
    assert len(alarm_list(c)) == 1
    posts = json.loads(c("posts", "lobby", "--json").out)
    assert any("alarm block was refused" in p["text"] and "tz:" in p["text"] for p in posts)


def test_an_alarm_block_on_a_look_only_turn_is_refused(cli, tmp_path):
    reply = tmp_path / "reply.txt"
    c = room(cli, tmp_path, "file", str(reply))
    c("person", "add", "bob", "--trust", "look")
    reply.write_text("```alarm\nat: 2026-12-24 09:00\ntz: Europe/Berlin\n```\n")
    c("post", "lobby", "--as", "bob", "@bot set an alarm", "--at", berlin(2026, 10, 19, 8, 1))
    c("tick", "--now", berlin(2026, 10, 19, 8, 2), "--wait")
    assert alarm_list(c) == []
    posts = json.loads(c("posts", "lobby", "--json").out)
    assert any("only honoured on a full-tool turn" in p["text"] for p in posts)


def test_bad_alarms_get_one_line_and_nothing_is_written(cli, tmp_path):
    c = room(cli, tmp_path)
    base = ["alarm", "add", "--agent", "bot", "--mood", "lobby", "--now", berlin(2026, 10, 19, 8)]
    assert "time zone" in c.fails(*base, "--daily", "09:00", "--tz", "").err
    assert "exactly one of" in c.fails(*base, "--daily", "09:00", "--cron", "0 9 * * *",
                                       "--tz", "UTC").err
    assert "has passed" in c.fails(*base, "--at", "2026-10-18 09:00", "--tz", "UTC").err
    assert "cron" in c.fails(*base, "--cron", "every day", "--tz", "UTC").err
    assert "no agent" in c.fails(*base[:3], "nobody", *base[4:], "--daily", "09:00",
                                 "--tz", "UTC").err
    assert "15–4320" in c.fails(*base, "--daily", "09:00", "--tz", "UTC",
                                "--lateness-cutoff-minutes", "5").err
    assert alarm_list(c) == []
    assert "no alarm 7" in c.fails("alarm", "remove", "7").err


NEVER = [("--cron", "0 0 31 2 *", "UTC", "cron 0 0 31 2 * never fires"),
         ("--cron", "0 0 30 2 *", "UTC", "cron 0 0 30 2 * never fires"),
         ("--cron", "30 2", "UTC", "not a five-field cron expression"),
         ("--at", "9999-12-31 23:59", "Etc/GMT+12", "at 9999-12-31 23:59 Etc/GMT+12 never fires")]


def test_an_alarm_that_can_never_fire_gets_one_line_and_nothing_is_written(cli, tmp_path):
    c = room(cli, tmp_path)
    base = ["alarm", "add", "--agent", "bot", "--mood", "lobby", "--now", berlin(2026, 10, 19, 8)]
    for flag, when, tz, message in NEVER:
        err = c.fails(*base, flag, when, "--tz", tz).err
        assert message in err and len(err.strip().splitlines()) == 1, err
    assert alarm_list(c) == []


def test_a_reply_whose_alarm_can_never_fire_is_posted_and_the_block_refused(cli, tmp_path):
    reply = tmp_path / "reply.txt"
    c = room(cli, tmp_path, "file", str(reply))
    for i, (when, tz, message) in enumerate([("cron: 0 0 31 2 *", "UTC", "cron 0 0 31 2 * never fires"),
                                            ("at: 9999-12-31 23:59", "Etc/GMT+12", "never fires")]):
        reply.write_text(f"Noted, answer {i}.\n```alarm\n{when}\ntz: {tz}\n```\n")
        c("post", "lobby", "--as", "ada", f"@bot remind me {i}", "--at", berlin(2026, 10, 19, 8, 1 + 2 * i))
        assert c("tick", "--now", berlin(2026, 10, 19, 8, 2 + 2 * i), "--wait").code == 0
        posts = [p["text"] for p in json.loads(c("posts", "lobby", "--json").out)]
        assert f"Noted, answer {i}." in posts
        assert any("alarm block was refused" in p and message in p for p in posts), posts
    assert alarm_list(c) == []
    assert [w["status"] for w in wakes(c, "mention")] == ["replied", "replied"]


def test_a_removed_alarm_fires_no_more(cli, tmp_path):
    c = room(cli, tmp_path)
    c("alarm", "add", "--agent", "bot", "--mood", "lobby", "--daily", "09:00", "--tz", "UTC",
      "--now", berlin(2026, 10, 19, 8))
    c("alarm", "remove", "1", "--now", berlin(2026, 10, 19, 8, 30))
    c("tick", "--now", berlin(2026, 10, 20, 12), "--wait")
    assert wakes(c) == [] and alarm_list(c) == []
    assert json.loads(c("alarm", "list", "--all", "--json").out)[0]["removed_at"]


def test_a_stopped_agent_gets_its_alarm_once_the_stop_is_lifted(cli, tmp_path):
    c = room(cli, tmp_path)
    c("alarm", "add", "--agent", "bot", "--mood", "lobby", "--at", "2026-10-19 10:00",
      "--tz", "Europe/Berlin", "--now", berlin(2026, 10, 19, 8))
    c("stop", "--agent", "bot", "--mood", "lobby", "--now", berlin(2026, 10, 19, 9))
    c("tick", "--now", berlin(2026, 10, 19, 10), "--wait")
    assert wakes(c) == []
    c("stop", "--agent", "bot", "--mood", "lobby", "--lift", "--now", berlin(2026, 10, 19, 10, 5))
    c("tick", "--now", berlin(2026, 10, 19, 10, 6), "--wait")
    (w,) = wakes(c)
    assert "about 6 minutes late" in text_of(c, w["id"])


def test_an_agent_over_its_daily_budget_gets_its_alarm_after_midnight(cli, tmp_path):
    import sqlalchemy as sa

    from poller import models

    c = room(cli, tmp_path)
    c("set", "max_usd_per_day", "1", "--agent", "bot")
    c("post", "lobby", "--as", "ada", "@bot hi", "--at", berlin(2026, 10, 19, 8, 1))
    c("tick", "--now", berlin(2026, 10, 19, 8, 2), "--wait")
    engine = sa.create_engine(c.db_url)
    with engine.begin() as conn:  # that turn cost the whole day's budget
        conn.execute(sa.update(models.Turn).values(cost_usd=1.5))
    engine.dispose()
    c("alarm", "add", "--agent", "bot", "--mood", "lobby", "--at", "2026-10-19 10:00",
      "--tz", "UTC", "--now", berlin(2026, 10, 19, 8, 3))
    c("tick", "--now", "2026-10-19T10:00:00Z", "--wait")
    assert wakes(c) == [] and "over-budget" in c("why", "bot", "lobby").out
    c("tick", "--now", "2026-10-20T00:01:00Z", "--wait")
    (w,) = wakes(c)
    assert "noticed only now" in text_of(c, w["id"])


def test_an_alarm_pierces_an_absence(sqlite_url, tmp_path):
    from support.away import Room, kinds
    from support.timeline import TimelineCli, at

    c = TimelineCli(sqlite_url)
    c("init")
    room = Room(c, tmp_path)
    c("alarm", "add", "--agent", "helper", "--mood", "lobby", "--at", "2026-11-30 12:10",
      "--tz", "UTC", "--note", "the oven", "--now", at(0))
    room.go_out()  # out for 30 minutes from about 12:00
    room.say("Checked the oven.")
    room.post(5 * 60, "bob", "anyone around?")  # unprompted: the away gate holds it
    room.tick(10 * 60)
    assert kinds(room)[-1] == "alarm" and [a["status"] for a in room.activities()] == ["away"]
    assert "  the oven" in room.seen()[-1]["text"]
