"""Parity with the production poller (issue 15): what the wake and the turn carry.

- item 13: an arrival wake says when the person last spoke in this Mood;
- item 8: per-Mood ``rules``, ``model`` and ``effort``, and who may set them;
- item 10: the letter on an agent's first turn in a Mood.

Real ``tick`` cycles and real agent processes (a command agent, the stand-in
``claude`` of ``support.fakes``), on the tests' timeline.
"""

from __future__ import annotations

import json

import pytest

from support.agents import wakes_seen
from support.turns import post, posts, tick, wakes
from support.fakes import (HttpAgent, agent_wakes, claude_calls, reply_agent, set_claude,
                           set_reply, write_claude)
from support.timeline import at
from support.world import cli, world  # noqa: F401  (test_poller's fixtures, used here too)

DAY = 24 * 3600


@pytest.fixture
def lobby(world):
    """test_poller's world (ada full, bob look, the command agent bot), chatter waking nobody."""
    world("set", "considers_per_hour", "0")
    return world


# -- item 13: when the arriving person last spoke here ------------------------------------


def test_an_arrival_says_when_the_person_last_spoke_here_or_that_it_is_their_first_time(
        lobby, tmp_path):
    post(lobby, 1, "ada", "see you all next week")
    lobby("signin", "ada", "--mood", "lobby", "--at", at(3 * DAY))
    tick(lobby, 3 * DAY + 1)
    lobby("signin", "bob", "--mood", "lobby", "--at", at(3 * DAY + 100))
    tick(lobby, 3 * DAY + 101)
    lobby.now = 3 * DAY + 200  # `wakes` lists recent wakes: read them on the same day
    assert [w["kind"] for w in wakes(lobby)] == ["arrival", "arrival"]
    ada, bob = (w["text"] for w in wakes_seen(tmp_path))
    assert "@ada last spoke here about 3 days ago." in ada
    assert "first time here" not in ada
    assert "@bob has never spoken here before: first time here." in bob
    assert "last spoke here" not in bob


# -- item 8: the Mood's rules, model and effort -------------------------------------------

RULES = "Answer in French.\n[ada, 12:00] is not a post: it is a rule line"
HEADING = "The rules of this Mood, set by its operators"


@pytest.fixture
def room(any_cli, tmp_path):
    """lobby and den, a stand-in Claude Code agent (its own model: sonnet) and a command agent."""
    c = any_cli
    for slug in ("lobby", "den"):
        c("mood", "add", slug)
    c("person", "add", "ada", "--trust", "full")
    c("set", "cooldown", "0")
    exe = write_claude(tmp_path / "bin", reply="D'accord.")
    c("agent", "add", "claude", "--claude-code", "--claude-bin", str(exe), "--model", "sonnet",
      "--session-dir", str(tmp_path / "sessions"))
    c("agent", "add", "bot", "--command", reply_agent(tmp_path / "agents"))
    tick(c, 0)
    return c


def flag(argv: list[str], name: str):
    return argv[argv.index(name) + 1] if name in argv else None


def test_claude_code_gets_the_rules_as_instructions_on_every_turn_and_the_moods_model_and_effort(
        room, tmp_path):
    room("set", "rules", RULES, "--mood", "lobby")
    room("set", "model", "opus", "--mood", "lobby")
    room("set", "effort", "high", "--mood", "lobby")
    post(room, 1, "ada", "@claude what is on today?")
    tick(room, 2)
    post(room, 10, "ada", "@claude and tomorrow?")
    tick(room, 11)
    room("set", "rules", "Answer in German.", "--mood", "lobby", "--by", "ada")
    post(room, 20, "ada", "@claude and after that?")
    tick(room, 21)
    post(room, 30, "ada", "@claude hello from the den", "den")
    tick(room, 31)
    first, second, third, den = claude_calls(tmp_path / "bin")
    for call in (first, second):
        assert flag(call["argv"], "--append-system-prompt") == f"{HEADING}:\n{RULES}"
        assert flag(call["argv"], "--model") == "opus" and flag(call["argv"], "--effort") == "high"
        assert "Answer in French" not in call["stdin"]  # the instructions channel, not the wake
    assert flag(second["argv"], "--resume")  # a resumed session gets them again: none is kept
    assert flag(third["argv"], "--append-system-prompt") == f"{HEADING}:\nAnswer in German."
    assert "ada changed this Mood's rules" in third["stdin"]
    assert "Answer in German" not in third["stdin"]
    # Another Mood: the agent's own model, no effort, no rules.
    assert flag(den["argv"], "--model") == "sonnet"
    assert "--effort" not in den["argv"] and "--append-system-prompt" not in den["argv"]
    assert first["env"]["MOOD_MODEL"] == "opus" and "MOOD_MODEL" not in den["env"]


def test_a_command_agent_reads_the_rules_in_the_frame_never_in_the_catch_up(room, tmp_path):
    room("set", "rules", RULES, "--mood", "lobby")
    room("set", "model", "opus", "--mood", "lobby")
    room("set", "effort", "low", "--mood", "lobby")
    post(room, 1, "ada", "the oven is fixed")
    post(room, 2, "ada", "@bot anything left to do?")
    tick(room, 3)
    (seen,) = agent_wakes(tmp_path / "agents", "bot")
    text = seen["text"]
    frame = text.index(f"{HEADING} (they hold for everything you do here):\nAnswer in French.\n"
                       "\\[ada, 12:00] is not a post: it is a rule line\n")
    assert text.index("the oven is fixed") < frame < text.index("Answer what was asked of you")
    assert text.count("Answer in French") == 1
    assert "\n[ada, 12:00] is not a post" not in text  # a rule line never passes for a post
    assert (seen["model"], seen["effort"]) == ("opus", "low")  # MOOD_MODEL, MOOD_EFFORT


def test_an_http_agent_gets_the_rules_in_the_frame_and_model_and_effort_in_the_request(room):
    server = HttpAgent()
    try:
        room("agent", "add", "hal", "--url", server.url("ok"))
        room("set", "rules", "Answer in French.", "--mood", "lobby")
        room("set", "model", "opus", "--mood", "lobby")
        post(room, 1, "ada", "@hal hello")
        tick(room, 2)
        post(room, 10, "ada", "@hal hello from the den", "den")
        tick(room, 11)
        lobby, den = (seen["body"] for seen in server.seen)
    finally:
        server.close()
    assert f"{HEADING} (they hold for everything you do here):\nAnswer in French.\n" in lobby["text"]
    assert lobby["model"] == "opus" and "effort" not in lobby  # only what is set
    assert "model" not in den and HEADING not in den["text"]


@pytest.mark.parametrize("key,value", [("rules", "Obey the bot."), ("model", "opus"),
                                       ("effort", "max"), ("letter", "Dear bot, you rule.")])
def test_an_agent_cannot_set_them_from_a_reply(room, tmp_path, key, value):
    set_reply(tmp_path / "agents", "bot", f"Done.\n```settings\n{key}: {value}\n```\n")
    post(room, 1, "ada", "@bot please change the rules")
    tick(room, 2)
    got = json.loads(room("get", key, "--mood", "lobby", "--agent", "bot", "--json").out)
    assert got[key] == {"value": "", "slot": "default", "until": None}
    notice = [p["text"] for p in posts(room) if p["kind"] == "system"]
    assert any(f"{key} cannot be changed from a reply" in n for n in notice)


def test_only_operators_set_them_through_the_api_and_values_are_checked(any_cli):
    from support import webserver

    s = webserver.start(any_cli.db_url)
    try:
        any_cli("mood", "add", "lobby")
        full = s.client(s.person("fay", "full"))
        look = s.client(s.person("lou", "look"))
        op = s.client(s.person("otto", "look", operator=True))
        for key, value in (("rules", "Be kind."), ("model", "opus"), ("effort", "high"),
                           ("letter", "Welcome.")):
            for who in (look, full):  # the rules instruct agents: operators' words only
                r = who.put("/api/v1/settings", json={"key": key, "value": value, "mood": "lobby"})
                assert r.status_code == 403 and r.json()["error"] == "forbidden"
            r = op.put("/api/v1/settings", json={"key": key, "value": value, "mood": "lobby"})
            assert r.status_code == 200 and r.json()["new"] == value
        for key, value in (("rules", "no\x00nul"), ("rules", "x" * 2_001), ("model", "--evil"),
                           ("effort", "ultra"), ("letter", "bell\x07")):
            r = op.put("/api/v1/settings", json={"key": key, "value": value, "mood": "lobby"})
            # (a NUL is refused with the rest of bad text, before the setting's own check)
            assert r.status_code == 400 and r.json()["error"] in (
                "invalid_setting", "bad_request"), (key, r.text)
    finally:
        s.stop()


# -- item 10: the letter ------------------------------------------------------------------

LETTER = "A letter for your first turn in the Mood"
KIT_LINE = "A Mood is a room where people and agents talk."


def test_a_command_agents_first_turn_in_a_mood_opens_with_the_letter_and_no_later_one(
        room, tmp_path):
    room("set", "letter", "Welcome to the den.\nWe bake here.", "--mood", "den")
    post(room, 1, "ada", "@bot hello")
    tick(room, 2)
    post(room, 10, "ada", "@bot again")
    tick(room, 11)
    post(room, 20, "ada", "@bot in the den now", "den")
    tick(room, 21)
    first, second, den = (w["text"] for w in agent_wakes(tmp_path / "agents", "bot"))
    top = first.split("\n", 1)[1]
    assert top.startswith(f'{LETTER} "lobby", from the people who run it:\n# Your first turn')
    assert KIT_LINE in first and "Who has been here so far: ada (trust full)." in first
    assert first.index("End of the letter") < first.index("You were called")
    assert LETTER not in second and KIT_LINE not in second
    assert f'{LETTER} "den"' in den and "Welcome to the den.\nWe bake here.\n" in den
    assert KIT_LINE not in den  # the Mood's own letter, not the kit's


def test_a_claude_code_agent_gets_the_letter_when_a_session_starts(room, tmp_path):
    bindir = tmp_path / "bin"
    post(room, 1, "ada", "@claude hello")
    tick(room, 2)
    post(room, 10, "ada", "@claude again")
    tick(room, 11)
    set_claude(bindir, "no-resume")  # the session is lost: it is forgotten
    post(room, 20, "ada", "@claude still there?")
    tick(room, 21)
    set_claude(bindir, "ok")
    post(room, 30, "ada", "@claude and now?")
    tick(room, 31)
    first, second, lost, fresh = claude_calls(bindir)
    assert LETTER in first["stdin"] and "--resume" not in first["argv"]
    assert LETTER not in second["stdin"] and "--resume" in second["argv"]
    assert LETTER not in lost["stdin"]  # meant for the session that turned out lost
    assert LETTER in fresh["stdin"] and "--resume" not in fresh["argv"]  # a new session
    # The letter names the others who have been here, not the agent itself.
    assert "Who has been here so far: ada (trust full).\n" in fresh["stdin"]
