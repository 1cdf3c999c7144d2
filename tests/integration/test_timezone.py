"""Times in a wake are shown in the Mood's time zone (the `timezone` setting), and named."""

from __future__ import annotations

import json

from support.agents import agent_command, wakes_seen


def test_a_mood_in_berlin_sees_berlin_times(cli, tmp_path):
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "bot", "--command", agent_command(tmp_path, "reply"))
    cli("set", "cooldown", "0")
    cli("tick", "--now", "2026-07-01T10:00:00Z")
    cli("post", "lobby", "--as", "ada", "--at", "2026-07-01T11:58:00Z", "the build is green")
    cli("post", "lobby", "--as", "ada", "--at", "2026-07-01T12:00:00Z", "@bot ship it?")
    cli("tick", "--now", "2026-07-01T12:00:05Z", "--wait")
    utc = wakes_seen(tmp_path)[-1]["text"]
    assert "times in UTC" in utc and "[ada, 12:00]" in utc
    assert "UTC -> Europe/Berlin" in cli("set", "timezone", "Europe/Berlin", "--mood", "lobby").out
    cli("post", "lobby", "--as", "ada", "--at", "2026-07-01T12:08:00Z", "deploy went out")
    cli("post", "lobby", "--as", "ada", "--at", "2026-07-01T12:10:00Z", "@bot and now?")
    cli("tick", "--now", "2026-07-01T12:10:05Z", "--wait")
    berlin = wakes_seen(tmp_path)[-1]["text"]
    assert "times in Europe/Berlin" in berlin
    assert "[ada, 14:10]" in berlin and "[ada, 14:08]" in berlin  # CEST, UTC+2
    assert "[ada, 12:10]" not in berlin


def test_a_time_zone_that_does_not_exist_is_refused(cli):
    cli("mood", "add", "lobby")
    r = cli.fails("set", "timezone", "Mars/Olympus_Mons", "--mood", "lobby")
    assert "IANA time zone" in r.err
    got = json.loads(cli("get", "timezone", "--mood", "lobby", "--json").out)
    assert got["timezone"]["value"] == "UTC"
