"""A Claude Code turn that ends in an error after the agent spoke: its words stand."""

from __future__ import annotations

import json

import pytest

from support.fakes import claude_calls, set_claude, write_claude
from support.timeline import TimelineCli, at


@pytest.fixture
def room(cli, tmp_path):
    """A Mood, a full-trust person, a stand-in claude agent, the first cycle run."""
    c = TimelineCli(cli.db_url)
    c("mood", "add", "lobby")
    c("person", "add", "ada", "--trust", "full")
    c("set", "cooldown", "0")
    c("set", "considers_per_hour", "0")
    bindir = tmp_path / "bin"
    exe = write_claude(bindir)
    c("agent", "add", "claude", "--claude-code", "--claude-bin", str(exe),
      "--session-dir", str(tmp_path / "sessions"))
    c("tick", "--now", at(0), "--wait")
    return c, bindir


def ask(c, seconds: float) -> dict:
    c("post", "lobby", "--as", "ada", "--at", at(seconds), "@claude how far did you get?")
    c("tick", "--now", at(seconds + 1), "--wait")
    wakes = sorted(json.loads(c("wakes", "--json").out), key=lambda w: w["id"])
    return wakes[-1]


def last_post(c) -> dict:
    return json.loads(c("posts", "lobby", "--json").out)[-1]


def test_words_said_before_a_budget_error_are_posted_and_the_error_kept(room):
    c, bindir = room
    set_claude(bindir, "budget", reply="Halfway: the parser is done, the tests are not.")
    w = ask(c, 10)
    assert w["status"] == "replied"
    post = last_post(c)
    assert (post["sender"], post["kind"]) == ("claude", "post")
    assert post["text"] == "Halfway: the parser is done, the tests are not."
    shown = c("wakes", "show", str(w["id"])).out
    assert "error_max_budget_usd" in shown


def test_silence_before_an_error_is_silence(room):
    c, bindir = room
    set_claude(bindir, "budget", reply="<silent>resting</silent>")
    w = ask(c, 10)
    assert w["status"] == "silent"
    assert last_post(c)["kind"] == "silent"
    assert "error_max_budget_usd" in c("wakes", "show", str(w["id"])).out


def test_an_error_with_nothing_said_still_fails_the_turn(room):
    c, bindir = room
    set_claude(bindir, "budget-quiet")
    w = ask(c, 10)
    assert w["status"] == "failed"
    post = last_post(c)
    assert post["sender"] != "claude" or post["kind"] != "post"
    assert "error_max_budget_usd" in c("wakes", "show", str(w["id"])).out


@pytest.mark.parametrize("quiet", [False, True])
def test_a_sub_agents_words_are_never_posted_as_the_agents_reply(room, quiet):
    c, bindir = room
    set_claude(bindir, "subagent-quiet" if quiet else "subagent", reply="I started on the parser.")
    w = ask(c, 10)
    texts = [p["text"] for p in json.loads(c("posts", "lobby", "--json").out)]
    assert not any("SUB-AGENT NOTES" in t for t in texts)
    if quiet:  # the agent itself said nothing: the turn failed
        assert w["status"] == "failed"
    else:  # its own words before the sub-agent's stand
        assert w["status"] == "replied" and last_post(c)["text"] == "I started on the parser."
    assert "error_max_turns" in c("wakes", "show", str(w["id"])).out


# -- A full-tool turn that falls silent ------------------------------------------------


def test_a_full_tool_turn_that_falls_silent_is_cut_off_though_it_has_no_time_limit(cli, tmp_path):
    from support.agents import agent_command

    config = tmp_path / "config.toml"
    config.write_text("[poller]\nfull_timeout = 0\nsilence_limit = 1\n")
    c = TimelineCli(cli.db_url, config=str(config))
    c("mood", "add", "lobby")
    c("person", "add", "ada", "--trust", "full")
    c("set", "cooldown", "0")
    c("agent", "add", "bot", "--command", agent_command(tmp_path, "hang", "silence-test"))
    c("tick", "--now", at(0), "--wait")
    c("post", "lobby", "--as", "ada", "--at", at(10), "@bot take your time")
    c("tick", "--now", at(11), "--wait")
    (w,) = json.loads(c("wakes", "--json").out)
    assert (w["tools"], w["status"]) == ("full", "cut_off")
    assert "produced no output for 1 s" in c("wakes", "show", str(w["id"])).out


# -- A session that cannot be resumed ----------------------------------------------------


def test_a_mention_whose_session_could_not_be_resumed_is_asked_again_in_a_new_one(room):
    c, bindir = room
    first = ask(c, 10)
    assert first["status"] == "replied"  # a session is kept now
    set_claude(bindir, "no-resume")  # as Claude Code says when a session has expired
    c("post", "lobby", "--as", "ada", "--at", at(20), "@claude URGENT: is prod down?")
    c("tick", "--now", at(21), "--wait")
    set_claude(bindir, "ok", reply="Prod is fine.")
    c("tick", "--now", at(22), "--wait")
    wakes = sorted(json.loads(c("wakes", "--json").out), key=lambda w: w["id"])
    assert [w["status"] for w in wakes] == ["replied", "failed", "replied"]
    calls = claude_calls(bindir)
    assert "--resume" in calls[1]["argv"] and "--resume" not in calls[2]["argv"]  # a fresh session
    assert "URGENT: is prod down?" in calls[2]["stdin"]
    assert "owed again" in c("wakes", "show", str(wakes[1]["id"])).out
    assert last_post(c)["text"] == "Prod is fine."


def test_a_failed_turn_nobody_asked_for_posts_no_notice_a_mention_does(cli, tmp_path):
    import json as json_

    from support.agents import agent_command
    from support.timeline import at as at_

    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "bot", "--command", agent_command(tmp_path, "fail"))
    cli("set", "cooldown", "0")
    cli("set", "consider_after", "5")
    cli("tick", "--now", at_(0), "--wait")
    cli("post", "lobby", "--as", "ada", "--at", at_(1), "lovely weather today")
    # A consider: nobody asked for it.
    logged = cli("--log-json", "tick", "--now", at_(10), "--wait").err
    (w,) = json_.loads(cli("wakes", "--json").out)
    assert (w["kind"], w["status"]) == ("consider", "failed")
    system = [p for p in json_.loads(cli("posts", "lobby", "--json").out) if p["kind"] == "system"]
    assert system == []
    assert '"action": "turn_failed_unasked"' in logged  # the operator is told
    cli("post", "lobby", "--as", "ada", "--at", at_(20), "@bot are you there?")
    cli("tick", "--now", at_(21), "--wait")  # a mention: someone asked, and is told
    system = [p for p in json_.loads(cli("posts", "lobby", "--json").out) if p["kind"] == "system"]
    assert [p["text"] for p in system] == ["@bot's turn ended without a reply: its command "
                                           "exited with status 3."]
