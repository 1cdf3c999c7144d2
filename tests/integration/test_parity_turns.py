"""Parity with the production poller (issue 15), what turns do and cost:

- item 7: a Claude Code turn's progress, live, in ``status``, the event stream and
  the agents page, never posted, cleared when the turn ends;
- item 4: a person's slash command (``@claude /compact``) run in the agent's session,
  and the refusals;
- item 6: daily dollar budgets, per Mood and across Moods, resetting at midnight in
  the Mood's time zone.

Real ``tick`` cycles, runner processes and the stand-in ``claude`` of
``support.fakes`` emitting Claude Code's stream-json shapes (tool_use blocks,
tool_result, ``compact_boundary``, ``<local-command-stdout>``, ``result`` with
``total_cost_usd``), on the tests' timeline.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

from poller.kinds import WakeKind
from poller.models import Turn, Wake
from support.turns import post, posts, rows, tick, wakes
from support.fakes import (agent_wakes, claude_calls, reply_agent, set_claude, set_reply,
                           write_claude)
from support.timeline import T0, after_settled, at
from support.waiting import wait_for

@pytest.fixture
def room(any_cli, tmp_path):
    """lobby and den; ada (full), bob (look); a stand-in Claude Code agent and a command
    agent; chatter wakes nobody unless a test says so; the first cycle run."""
    c = any_cli
    for slug in ("lobby", "den"):
        c("mood", "add", slug)
    c("person", "add", "ada", "--trust", "full")
    c("person", "add", "bob", "--trust", "look")
    c("set", "cooldown", "0")
    c("set", "considers_per_hour", "0")
    c("set", "idle_after", "0")
    write_claude(tmp_path / "bin", reply="Done.")
    c("agent", "add", "claude", "--claude-code", "--claude-bin", str(tmp_path / "bin" / "claude"),
      "--session-dir", str(tmp_path / "sessions"))
    c("agent", "add", "bot", "--command", reply_agent(tmp_path / "agents"))
    tick(c, 0)
    return c


def system_notes(cli, mood="lobby") -> list[str]:
    return [p["text"] for p in posts(cli, mood) if p["kind"] == "system"]


# -- item 7: a turn's progress ---------------------------------------------------------------


def test_a_turns_progress_shows_in_status_the_events_and_the_agents_page_and_is_never_posted(
        room, tmp_path):
    from support import webserver
    from support.webserver import signed_in

    bindir = tmp_path / "bin"
    set_claude(bindir, "work", reply="The notes are fine.")
    served = webserver.start(room.db_url, keepalive=0.2)
    try:
        op = signed_in(served, served.person("otto", "full", operator=True))
        ev = webserver.Events(served.client(served.person("sue", "look")),
                              "/api/v1/moods/lobby/events")
        post(room, 1, "ada", "@claude please check the notes")
        room("tick", "--now", at(2))  # a runner process: the turn goes on after the cycle

        def doing(what):
            flight = json.loads(room("status", "--json").out)["in_flight"]
            return flight and flight[0]["progress"] == what and flight[0]

        wait_for(lambda: doing("using Read on notes.md"), what="the Read shown")
        assert "(mention) running since" in room("status").out
        assert ": using Read on notes.md" in room("status").out
        ev.wait(lambda e: any(t["progress"] == "using Read on notes.md"
                              for w in e.of("working") for t in w["data"]), "progress streamed")
        assert "using Read on notes.md" in op.get("/ops/agents").text
        (claude,) = [a for a in op.get("/api/v1/agents").json() if a["handle"] == "claude"]
        assert claude["at_work"][0]["progress"] == "using Read on notes.md"
        (bindir / "go-1").touch()
        wait_for(lambda: doing("using Bash"), what="the Bash call shown")
        ev.wait(lambda e: e.of("working")[-1]["data"][0]["progress"] == "using Bash",
                "the Bash call streamed")
        (bindir / "go-2").touch()
        wait_for(lambda: wakes(room)[-1]["status"] == "replied", what="the turn to end")
        ev.wait(lambda e: not e.of("working")[-1]["data"], "nobody at work")
        streamed = [t["progress"] for w in ev.of("working") for t in w["data"]]
        ev.close()
    finally:
        served.stop()
    assert json.loads(room("status", "--json").out)["in_flight"] == []
    assert [w["progress"] for w in rows(room, Wake)] == [None]  # cleared when the turn ended
    said = json.dumps(posts(room)) + json.dumps(streamed)
    for secret in ("TOP SECRET", "grep -r", "launch-code", "/srv/project", "private"):
        assert secret not in said
    assert [p["text"] for p in posts(room)][-1] == "The notes are fine."
    assert not any("using" in p["text"] for p in posts(room))  # nothing of it is posted


def test_a_progress_report_after_the_turn_ended_is_not_recorded(room, tmp_path):
    from support import webserver
    from poller.store import turns

    post(room, 1, "ada", "@claude hello")
    tick(room, 2)
    (wake,) = wakes(room)
    store = webserver.store_for(room.db_url)
    try:
        assert turns.record_progress(store, wake["id"], "using Read") is False
    finally:
        store.engine.dispose()
    assert [w["progress"] for w in rows(room, Wake)] == [None]


# -- item 4: slash commands -----------------------------------------------------------------


def test_a_full_trust_persons_commands_run_in_the_agents_session_and_their_output_is_posted(
        room, tmp_path):
    bindir = tmp_path / "bin"
    post(room, 1, "ada", "@claude hello")
    tick(room, 2)
    session = rows(room, Turn)[0]["session_id"]
    post(room, 10, "ada", "@claude /context")
    tick(room, 11)
    post(room, 20, "ada", "@claude  /compact")
    tick(room, 21)
    post(room, 30, "ada", "@claude /cost")
    tick(room, 31)
    _, context, compact, cost = claude_calls(bindir)
    for call, word in ((context, "/context"), (compact, "/compact"), (cost, "/cost")):
        assert call["stdin"] == word  # the command alone is the prompt
        assert flag(call["argv"], "--resume") == session  # in the Mood's session
        assert flag(call["argv"], "--permission-mode") == "dontAsk"
    notes = system_notes(room)
    assert notes == [
        "/context in @claude's session here:\nContext Usage: 48k/200k tokens (24%)",
        "/compact in @claude's session here:\nThe session was compacted "
        "(it held 48,213 tokens).",
        "/cost in @claude's session here:\nTotal cost: $0.0431\nTotal duration (API): 12.1s"]
    got = wakes(room)
    assert [(w["kind"], w["status"]) for w in got] == [("mention", "replied")] + [
        ("command", "replied")] * 3
    assert json.loads(room("status", "--json").out)["agents"][0]["owed"] == 0
    # The command's cost counts like any turn's (here /compact's).
    assert sorted(r["cost_usd"] for r in rows(room, Turn)) == [0, 0, 0.0123, 0.031]
    # The command posts are no mentions it owes: the next wake answers only what it was
    # asked, in the same session, and shows the commands and their output as the Mood's
    # history (as people's posts and system notes), never as what woke it.
    asked = post(room, 40, "ada", "@claude and now?")
    tick(room, 41)
    last = claude_calls(bindir)[-1]
    assert wakes(room)[-1]["answers"] == [asked] and flag(last["argv"], "--resume") == session
    assert last["stdin"].count("@claude and now?") == 1


def flag(argv, name):
    return argv[argv.index(name) + 1] if name in argv else None


@pytest.mark.parametrize("who,text,reason", [
    ("bob", "@claude /cost", "only a person with trust full may run a command"),
    ("eve", "@claude /compact", "only a person with trust full may run a command"),
    ("ada", "@bot /cost", "@bot is not a Claude Code agent"),
    ("ada", "@claude /clear", "the commands a session takes from here are /compact"),
    ("ada", "@claude /compact and be quick", "a command runs alone"),
])
def test_other_commands_are_refused_with_a_one_line_note_and_wake_nobody(
        room, tmp_path, who, text, reason):
    room("person", "add", "eve", "--trust", "none")
    room("set", "considers_per_hour", "6")  # a command is no conversation to consider either
    post(room, 1, who, text)
    tick(room, 2)
    tick(room, 60)
    (note,) = system_notes(room)
    assert reason in note and "\n" not in note and note.endswith(".")
    assert wakes(room) == [] and claude_calls(tmp_path / "bin") == []
    assert agent_wakes(tmp_path / "agents", "bot") == []
    assert all(a["owed"] == 0 for a in json.loads(room("status", "--json").out)["agents"])


def test_one_command_waits_at_a_time_and_it_waits_for_the_turn_in_progress(room, tmp_path):
    bindir = tmp_path / "bin"
    set_claude(bindir, "work")
    post(room, 1, "ada", "@claude please check the notes")
    room("tick", "--now", at(2))  # the turn runs on in its runner process
    wait_for(lambda: wakes(room)[0]["status"] == "running", what="the turn to run")
    post(room, 3, "ada", "@claude /compact")
    post(room, 4, "ada", "@claude /context")
    room("tick", "--now", at(5))
    assert "one command at a time" in system_notes(room)[-1]
    assert [w["kind"] for w in wakes(room)] == ["mention"]  # it waits for the session
    why = json.loads(room("why", "claude", "lobby", "--json").out)
    assert why["decisions"]["command"]["reason"] == "busy"
    (bindir / "go-1").touch()
    (bindir / "go-2").touch()
    wait_for(lambda: wakes(room)[0]["status"] == "replied", what="the turn to end")
    tick(room, after_settled(wakes(room)[0], 6))
    assert [w["kind"] for w in wakes(room)] == ["mention", "command"]
    assert claude_calls(bindir)[-1]["stdin"] == "/compact"


def test_a_command_where_the_agent_has_no_session_runs_nothing(room, tmp_path):
    post(room, 1, "ada", "@claude /context", "den")
    tick(room, 2)
    assert claude_calls(tmp_path / "bin") == []
    assert system_notes(room, "den") == [
        "/context in @claude's session here:\n"
        "(there is no session here yet, so nothing was run)"]


# -- item 6: dollar budgets ----------------------------------------------------------------

def test_budget_settings_are_checked(room):
    assert "max_usd_per_day must be a number" in room.fails("set", "max_usd_per_day", "lots").err
    assert "between 0 and" in room.fails("set", "max_usd_per_day_all_moods", "200000").err


def test_over_budget_a_claude_agent_holds_mentions_with_a_notice_until_midnight_there(room):
    room("set", "timezone", "Pacific/Auckland", "--mood", "lobby")
    room("set", "max_usd_per_day", "0.02", "--mood", "lobby", "--agent", "claude")
    room("set", "considers_per_hour", "6", "--mood", "lobby", "--agent", "claude")
    for t in (1, 10):  # each turn of the stand-in claude costs $0.0123
        post(room, t, "ada", f"@claude question {t}")
        tick(room, t + 1)
    held = post(room, 20, "ada", "@claude one more?")
    tick(room, 21)
    post(room, 30, "bob", "nice weather today")
    tick(room, 45)  # the consider is due
    assert [w["kind"] for w in wakes(room)] == ["mention", "mention"]
    notice = system_notes(room)[-1]
    assert notice == ("@claude is holding 1 mention: it has spent its daily budget; it will "
                      "answer when the budget starts again at midnight in this Mood's time "
                      "zone (until 2026-12-01T11:00:00Z).")
    why = json.loads(room("why", "claude", "lobby", "--json").out)["decisions"]
    assert why["mention"]["reason"] == "over-budget" and why["mention"]["outcome"] == "hold"
    assert (why["consider"]["outcome"], why["consider"]["reason"]) == ("skip", "over-budget")
    # Elsewhere the Mood budget does not apply.
    post(room, 50, "ada", "@claude in the den?", "den")
    tick(room, 51)
    assert [w["mood"] for w in wakes(room)][-1] == "den"
    tick(room, 23 * 3600 - 1)  # 23:59:59 in Auckland: still the same day there
    assert len(wakes(room, mood="lobby")) == 2
    tick(room, 23 * 3600 + 1)  # midnight in Auckland (11:00 UTC): the budget starts again
    lobby = wakes(room, mood="lobby")
    assert len(lobby) == 3 and lobby[-1]["kind"] == "mention"
    assert lobby[-1]["answers"] == [held]


def test_command_agents_are_priced_by_tokens_and_held_by_the_budget_across_moods(
        room, tmp_path):
    config = tmp_path / "prices.toml"
    config.write_text("[poller]\nusd_per_mtok_in = 100.0\nusd_per_mtok_out = 1000.0\n")
    room.config = str(config)
    set_reply(tmp_path / "agents", "bot", "A short answer.")
    room("set", "max_usd_per_day_all_moods", "0.01", "--agent", "bot")
    post(room, 1, "ada", "@bot hello")
    tick(room, 2)
    (wake,) = wakes(room)
    reply = [p for p in posts(room) if p["sender"] == "bot"][-1]
    (turn,) = rows(room, Turn)
    expected = (wake["prompt_tokens"] * 100.0 + reply["tokens"] * 1000.0) / 1e6
    assert turn["cost_usd"] == pytest.approx(expected) and expected > 0.01
    post(room, 10, "ada", "@bot and in the den?", "den")
    tick(room, 11)
    assert len(wakes(room)) == 1  # the day's spending in the lobby holds it in the den too
    assert "@bot is holding 1 mention: it has spent its daily budget" in system_notes(room, "den")[-1]
    # Operators see the day's spending beside the day's turns and tokens.
    from support import webserver
    from poller.clock import Clock
    from support.webserver import signed_in

    served = webserver.start(room.db_url, clock=Clock.at(T0 + dt.timedelta(seconds=20)))
    try:
        op = signed_in(served, served.person("otto", "full", operator=True))
        (bot,) = [a for a in op.get("/api/v1/agents").json() if a["handle"] == "bot"]
        assert bot["usd_today"] == pytest.approx(expected, abs=1e-6)
        from poller.text import money

        assert money(expected) in op.get("/ops/agents").text  # as people read money: $0.09
    finally:
        served.stop()
