"""Changing and removing agents and people, and HTTP agents' header values.

``agent set`` changes only what it is given and checks it as ``agent add``
does; ``agent remove`` and ``person remove`` keep history, free the handle
and take the agent out of the loop; ``${VAR}`` is expanded anywhere in a
header value at send time, and a value that looks like a literal credential
is refused unless the operator insists.  Everything runs through the real
command line, real ``tick`` cycles with real agent processes, SQLite and
PostgreSQL, and a loopback HTTP server.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import pwd
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from poller.turns import wakers
from support.fakes import HttpAgent, agent_wakes, reply_agent, set_reply
from support.waiting import wait_for

T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)
ME = pwd.getpwuid(os.getuid()).pw_name  # a Unix user that surely exists


def at(seconds: float) -> str:
    return (T0 + dt.timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def tick(cli, seconds):
    return cli("tick", "--now", at(seconds), "--wait").out


def post(cli, seconds, who, text, mood="lobby"):
    return int(cli("post", mood, "--as", who, "--at", at(seconds), text).out)


def wakes(cli):
    return sorted(json.loads(cli("wakes", "--json").out), key=lambda w: w["id"])


def posts(cli, mood="lobby"):
    return json.loads(cli("posts", mood, "--limit", "200", "--json").out)


def agents(cli, *flags):
    return {a["handle"] + ("~" if a["retired_at"] else ""): a
            for a in json.loads(cli("agent", "list", "--json", *flags).out)}


def one_line(result) -> str:
    lines = [line for line in result.err.strip().splitlines() if line.strip()]
    assert len(lines) == 1, result.err
    return lines[0]


@pytest.fixture
def room(any_cli):
    """A Mood, a full-trust person, no cooldown, no unprompted looks."""
    any_cli("mood", "add", "lobby")
    any_cli("person", "add", "ada", "--trust", "full")
    any_cli("set", "cooldown", "0")
    any_cli("set", "considers_per_hour", "0")
    return any_cli


# -- agent set -------------------------------------------------------------------------


def test_set_changes_only_the_options_given(room):
    room("agent", "add", "bot", "--command", "my-agent --reply", "--timeout", "30")
    out = room("agent", "set", "bot", "--workdir", "/srv/bot").out
    assert out == "changed agent bot:\n  workdir: (none) -> /srv/bot\n"
    a = agents(room)["bot"]
    assert (a["command"], a["timeout"], a["workdir"]) == ("my-agent --reply", 30, "/srv/bot")

    assert "timeout: 30 s -> 120 s" in room("agent", "set", "bot", "--timeout", "120").out
    assert "timeout: 120 s -> default" in room("agent", "set", "bot", "--timeout", "default").out
    assert agents(room)["bot"]["timeout"] is None
    assert "workdir: /srv/bot -> (none)" in room("agent", "set", "bot", "--workdir", "").out

    out = room("agent", "set", "bot", "--run-as", ME).out
    assert f"run-as: (none) -> {ME}" in out and agents(room)["bot"]["options"] == {"run_as": ME}
    assert "run-as: " in room("agent", "set", "bot", "--run-as", "").out
    assert agents(room)["bot"]["options"] == {}

    out = room("agent", "set", "bot", "--command", "other-agent").out
    assert "command: my-agent --reply -> other-agent" in out
    assert room("agent", "set", "bot", "--command", "other-agent").out == "agent bot: nothing changed\n"


def test_set_the_claude_code_options(room):
    room("agent", "add", "cc", "--claude-code", "--model", "sonnet")
    out = room("agent", "set", "cc", "--model", "opus", "--session-dir", "/srv/cc",
               "--permission-mode", "plan", "--claude-bin", "/opt/claude").out
    assert "model: sonnet -> opus" in out and "session-dir: (none) -> /srv/cc" in out
    assert "permission-mode: (none) -> plan" in out and "claude-bin: (none) -> /opt/claude" in out
    assert agents(room)["cc"]["options"] == {"model": "opus", "session_dir": "/srv/cc",
                                             "permission_mode": "plan", "bin": "/opt/claude"}
    room("agent", "set", "cc", "--model", "", "--permission-mode", "")
    assert agents(room)["cc"]["options"] == {"session_dir": "/srv/cc", "bin": "/opt/claude"}


def test_a_new_waker_drops_the_old_ones_options(room):
    room("agent", "add", "bot", "--claude-code", "--model", "opus", "--run-as", ME)
    out = room("agent", "set", "bot", "--url", "http://127.0.0.1:9/wake",
               "--header", "Authorization:Bearer ${BOT_TOKEN}").out
    assert "waker: claude-code -> url" in out and "model: opus -> (none)" in out
    assert f"run-as: {ME} -> (none)" in out and "header Authorization: added" in out
    a = agents(room)["bot"]
    assert (a["waker"], a["url"], a["options"]) == ("url", "http://127.0.0.1:9/wake",
                                                    {"headers": {"Authorization": "***"}})
    out = room("agent", "set", "bot", "--command", "cat").out
    assert "url: http://127.0.0.1:9/wake -> (none)" in out and "header Authorization: removed" in out
    a = agents(room)["bot"]
    assert (a["waker"], a["command"], a["url"], a["options"]) == ("command", "cat", None, {})


@pytest.mark.parametrize("add, args, message", [
    (["--command", "cat"], ["--timeout", "-3"], "timeout must be a positive number"),
    (["--command", "cat"], ["--timeout", "nan"], "timeout must be a positive number"),
    (["--command", "cat"], ["--timeout", "soon"], "not a number of seconds or 'default'"),
    (["--command", "cat"], ["--command", ""], "an agent needs a command"),
    (["--command", "cat"], ["--run-as", "no-such-user-here"], "there is no Unix user"),
    (["--command", "cat"], ["--model", "opus"], "--model only apply with --claude-code"),
    (["--command", "cat"], ["--header", "A:b"], "--header only applies with --url"),
    (["--command", "cat"], ["--url", "ftp://x/"], "must start with http"),
    (["--command", "cat"], ["--command", "a", "--url", "http://x/"], "exactly one of"),
    (["--command", "cat"], [], "nothing to change"),
    (["--url", "http://127.0.0.1:9/"], ["--run-as", ME], "--run-as applies only to agents"),
    (["--url", "http://127.0.0.1:9/"], ["--header", "NoColonHere"], "--header must look like"),
    (["--claude-code"], ["--permission-mode", "yolo"], "--permission-mode must be one of"),
])
def test_set_refuses_what_add_refuses_and_changes_nothing(room, add, args, message):
    room("agent", "add", "x", *add)
    before = agents(room)
    r = room.fails("agent", "set", "x", *args)
    assert message in one_line(r)
    assert agents(room) == before


def test_set_names_who_it_cannot_find(room):
    assert "no person or agent 'ghost'" in one_line(room.fails("agent", "set", "ghost", "--timeout", "3"))
    assert "'ada' is a person, not an agent" in one_line(room.fails("agent", "set", "ada",
                                                                    "--timeout", "3"))


def test_the_loop_wakes_an_agent_the_way_set_last_said(room, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    first_way, second_way = reply_agent(first), reply_agent(second)
    set_reply(first, "bot", "the first way")
    set_reply(second, "bot", "the second way")
    room("agent", "add", "bot", "--command", first_way)
    tick(room, 0)
    post(room, 1, "ada", "@bot hello?")
    tick(room, 2)
    room("agent", "set", "bot", "--command", second_way)
    post(room, 3, "ada", "@bot and now?")
    tick(room, 4)
    assert [p["text"] for p in posts(room) if p["sender"] == "bot"] == ["the first way",
                                                                         "the second way"]
    assert len(agent_wakes(first, "bot")) == 1 and len(agent_wakes(second, "bot")) == 1


# -- agent remove -------------------------------------------------------------------------


HOLD = r'''
import os, sys, time
here = sys.argv[1]
sys.stdin.read()
with open(os.path.join(here, "pid"), "w") as fh:
    fh.write(str(os.getpid()))
give_up = time.monotonic() + 120
while not os.path.exists(os.path.join(here, "gate")) and time.monotonic() < give_up:
    time.sleep(0.05)
print("let go")
'''


def holding_agent(directory: Path) -> str:
    """A command agent that stays at work until ``gate`` exists beside it."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "hold.py").write_text(HOLD)
    return shlex.join([sys.executable, str(directory / "hold.py"), str(directory)])


def test_remove_is_refused_while_a_turn_runs_and_force_ends_it(room, tmp_path):
    here = tmp_path / "holding"
    room("agent", "add", "bot", "--command", holding_agent(here))
    tick(room, 0)
    post(room, 1, "ada", "@bot a long job")
    try:
        room("tick", "--now", at(2))  # the turn runs on in the background
        wait_for(lambda: (here / "pid").exists(), what="the agent to start")
        (w,) = wakes(room)

        r = room.fails("agent", "remove", "bot", "--now", at(3))
        line = one_line(r)
        assert f"agent 'bot' has 1 turn(s) pending or running (wake {w['id']})" in line
        assert "--force" in line
        assert "bot" in agents(room)

        out = room("agent", "remove", "bot", "--force", "--now", at(4)).out
        assert f"removed agent bot; ended 1 turn(s) (wake {w['id']})" in out
        (w,) = wakes(room)
        assert (w["status"], w["error"]) == ("cut_off", "its agent was removed by an operator")
        assert posts(room)[-1]["text"] == ("@bot's turn ended without a reply: its agent was "
                                           "removed by an operator.")
        wait_for(lambda: subprocess.run(["pgrep", "-f", str(here / "hold.py")]).returncode != 0,
                 what="the removed agent's process to end")
    finally:
        (here / "gate").touch()
    for s in (70, 200):  # an operator ended it: no follow-up is owed
        tick(room, s)
    assert len(wakes(room)) == 1
    assert agents(room) == {}


def test_a_removed_agent_is_not_woken_and_its_handle_is_free(room, tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    old_way, new_way = reply_agent(old), reply_agent(new)
    set_reply(old, "bot", "the old bot")
    set_reply(new, "bot", "the new bot")
    room("agent", "add", "bot", "--command", old_way, "--timeout", "30")
    tick(room, 0)
    asked = post(room, 1, "ada", "@bot first question")
    tick(room, 2)
    (first,) = wakes(room)
    post(room, 3, "ada", "@bot a mention it will never answer")

    assert "removed agent bot (its history is kept" in room("agent", "remove", "bot",
                                                            "--now", at(4)).out
    assert agents(room) == {}
    tick(room, 5)
    tick(room, 4000)
    assert len(wakes(room)) == 1 and len(agent_wakes(old, "bot")) == 1
    status = json.loads(room("status", "--json", "--now", at(4001)).out)
    assert status["agents"] == [] and status["next_due"] == []
    assert "no person or agent 'bot'" in one_line(room.fails("agent", "set", "bot",
                                                             "--timeout", "3"))
    r = room.fails("post", "lobby", "--as", "bot", "--at", at(4002), "still here?")
    assert "'bot' was removed and can no longer post" in one_line(r)

    # The handle is free; the history still names the old bot.
    room("agent", "add", "bot", "--command", new_way)
    listed = agents(room, "--all")
    assert set(listed) == {"bot", "bot~"}
    assert listed["bot~"]["timeout"] == 30 and listed["bot~"]["retired_at"] == at(4)
    assert listed["bot"]["id"] != listed["bot~"]["id"]
    table = room("agent", "list", "--all").out
    assert "REMOVED" in table and "2026-11-30 12:00 UTC" in table  # at(4), as people read it
    texts = [(p["sender"], p["text"]) for p in posts(room)]
    assert ("ada", "@bot first question") in texts and ("bot", "the old bot") in texts
    shown = json.loads(room("wakes", "show", str(first["id"]), "--json").out)
    assert shown["agent"] == "bot" and shown["answers"] == [asked]

    # A mention of the handle now wakes the new agent, and only it.
    post(room, 4010, "ada", "@bot are you the new one?")
    tick(room, 4011)
    assert posts(room)[-1]["text"] == "the new bot"
    assert len(agent_wakes(old, "bot")) == 1 and len(agent_wakes(new, "bot")) == 1


def test_remove_names_who_it_cannot_find(room):
    assert "no person or agent 'ghost'" in one_line(room.fails("agent", "remove", "ghost"))
    assert "'ada' is a person, not an agent" in one_line(room.fails("agent", "remove", "ada"))


# -- people ---------------------------------------------------------------------------------


def test_person_set_trust_is_person_trust(room):
    assert room("person", "set", "ada", "--trust", "none").out == "ada now has trust none\n"
    assert json.loads(room("person", "list", "--json").out)[0]["trust"] == "none"
    room("agent", "add", "bot", "--command", "cat")
    assert "is an agent" in one_line(room.fails("person", "set", "bot", "--trust", "full"))
    assert "--trust" in room.fails("person", "set", "ada").err


def test_a_removed_person_cannot_post_and_their_handle_is_free(room):
    post(room, 1, "ada", "before I go")
    out = room("person", "remove", "ada", "--now", at(2)).out
    assert out == "removed person ada (their posts are kept; the handle is free)\n"
    assert json.loads(room("person", "list", "--json").out) == []
    r = room.fails("post", "lobby", "--as", "ada", "--at", at(3), "I am back")
    assert "'ada' was removed and can no longer post" in one_line(r)
    assert "no person or agent 'ada'" in one_line(room.fails("person", "trust", "ada", "full"))

    room("person", "add", "ada", "--trust", "look")
    post(room, 4, "ada", "a new ada")
    assert [(p["sender"], p["text"]) for p in posts(room)] == [("ada", "before I go"),
                                                               ("ada", "a new ada")]
    everyone = json.loads(room("person", "list", "--all", "--json").out)
    assert sorted((p["trust"], p["retired_at"]) for p in everyone) == [("full", at(2)),
                                                                       ("look", None)]
    room("agent", "add", "bot", "--command", "cat")
    assert "use `mood-poller agent remove`" in one_line(room.fails("person", "remove", "bot"))


def test_the_store_refuses_a_post_from_a_removed_sender(any_cli):
    from poller import errors
    from poller.store import Store, db

    any_cli("mood", "add", "lobby")
    any_cli("person", "add", "bob")
    engine = db.make_engine(any_cli.db_url)
    try:
        store = Store(engine)
        now = T0
        bob = store.retire_person("bob", now)
        assert bob.who.retired_at == now
        with pytest.raises(errors.UserError, match="'bob' was removed and can no longer post"):
            store.add_post("lobby", "bob", "hello", now)
        with pytest.raises(errors.UserError, match="was removed"):
            store.add_posts([("lobby", "BOB", "hello", now)])
    finally:
        engine.dispose()


# -- Moods ------------------------------------------------------------------------------------


def test_mood_archive_and_undo(room):
    assert room("mood", "archive", "lobby").out == "archived Mood lobby\n"
    assert json.loads(room("mood", "list", "--json").out)[0]["archived"] is True
    assert "archived" in room("mood", "list").out
    assert room("mood", "archive", "lobby", "--undo").out == "unarchived Mood lobby\n"
    assert json.loads(room("mood", "list", "--json").out)[0]["archived"] is False
    assert "no Mood 'nowhere'" in one_line(room.fails("mood", "archive", "nowhere"))


# -- HTTP headers ---------------------------------------------------------------------------------


@pytest.fixture
def http_agent():
    server = HttpAgent()
    yield server
    server.close()


def test_a_variable_inside_a_header_value_is_expanded_at_send_time(room, http_agent, monkeypatch):
    room("agent", "add", "hal", "--url", http_agent.url("ok"),
         "--header", "Authorization:Bearer ${HAL_TOKEN}", "--header", "X-Trace:${HAL_A}-${HAL_B}/x")
    monkeypatch.setenv("HAL_TOKEN", "tok-from-env-0123456789")
    monkeypatch.setenv("HAL_A", "one")
    monkeypatch.setenv("HAL_B", "two")
    tick(room, 0)
    post(room, 1, "ada", "@hal status?")
    out = tick(room, 2)
    assert "tok-from-env" not in out
    (w,) = wakes(room)
    assert w["status"] == "replied" and posts(room)[-1]["text"] == "hal heard mention"
    (req,) = http_agent.seen
    assert req["headers"]["Authorization"] == "Bearer tok-from-env-0123456789"
    assert req["headers"]["X-Trace"] == "one-two/x"
    listed = room("agent", "list").out + room("agent", "list", "--json").out
    assert "tok-from-env" not in listed and "HAL_TOKEN" not in listed


def test_an_unset_variable_in_a_header_fails_the_turn_naming_it(room, http_agent, monkeypatch):
    monkeypatch.delenv("HAL_MISSING", raising=False)
    room("agent", "add", "hal", "--url", http_agent.url("ok"),
         "--header", "Authorization:Bearer ${HAL_MISSING}")
    tick(room, 0)
    post(room, 1, "ada", "@hal status?")
    tick(room, 2)
    (w,) = wakes(room)
    assert w["status"] == "failed"
    assert w["error"] == ("header Authorization needs environment variable HAL_MISSING, "
                          "which is not set")
    assert posts(room)[-1]["text"] == ("@hal's turn ended without a reply: the poller lacks a "
                                       "value for one of its request headers.")
    assert http_agent.seen == []  # nothing half-authorised was sent


def test_the_http_waker_expands_every_reference_and_names_an_unset_one(http_agent, monkeypatch):
    monkeypatch.setenv("PART_A", "alpha")
    monkeypatch.delenv("PART_B", raising=False)
    w = wakers.HttpWaker(http_agent.url("ok"), {"X-Both": "${PART_A}:${PART_B}",
                                                "X-Plain": "no $ref {here}"})
    with pytest.raises(LookupError, match="header X-Both needs environment variable PART_B"):
        w.resolved_headers()
    monkeypatch.setenv("PART_B", "beta")
    assert w.resolved_headers() == {"X-Both": "alpha:beta", "X-Plain": "no $ref {here}"}
    monkeypatch.setenv("PART_B", "line\r\nX-Injected: 1")
    with pytest.raises(LookupError, match="PART_B holds a line break") as caught:
        w.resolved_headers()
    assert "Injected" not in str(caught.value)


LITERALS = [
    ("Authorization", "Bearer abcdefghijklmnop123456", "a Bearer credential"),
    ("Authorization", "Basic dXNlcjpwYXNzd29yZA==", "a Basic credential"),
    ("X-Api-Key", "sk-proj-abc123def456", "an API key"),
    ("X-Api-Key", "Zq8vN3xK7pL2mR9tW4yB6cD1", "a long random-looking string"),
]


@pytest.mark.parametrize("name, value, why", LITERALS)
def test_a_literal_secret_in_a_header_is_refused_unless_allowed(room, name, value, why):
    header = f"{name}:{value}"
    r = room.fails("agent", "add", "svc", "--url", "http://127.0.0.1:9/", "--header", header)
    line = one_line(r)
    assert f"--header {name}: the value looks like a literal secret ({why})" in line
    assert "${VAR}" in line and "--allow-literal-secret" in line and value not in r.out + r.err
    assert agents(room) == {}

    room("agent", "add", "svc", "--url", "http://127.0.0.1:9/", "--header", "X-Other:${T}")
    r = room.fails("agent", "set", "svc", "--header", header)
    assert why in one_line(r) and value not in r.out + r.err

    shown = [room("agent", "set", "svc", "--header", header, "--allow-literal-secret").out,
             room("agent", "list").out, room("agent", "list", "--json").out,
             room("agent", "list", "--all").out]
    assert not any(value in s for s in shown)
    assert shown[0] == f"changed agent svc:\n  header {name}: added\n"
    assert f"(headers: X-Other, {name})" in shown[1]
    assert agents(room)["svc"]["options"]["headers"] == {"X-Other": "***", name: "***"}


@pytest.mark.parametrize("value", [
    "Bearer ${TOKEN}", "${TOKEN}", "Basic ${BASIC_CREDENTIALS}", "application/vnd.github+json",
    "2022-11-28", "Bearer t0ps3cret", "mood-poller/1.0 (+https://example.org/bot)",
])
def test_ordinary_header_values_are_accepted(room, value):
    room("agent", "add", "svc", "--url", "http://127.0.0.1:9/", "--header", f"X-H:{value}")
    assert agents(room)["svc"]["options"]["headers"] == {"X-H": "***"}


def test_header_values_are_never_printed_when_they_change(room):
    room("agent", "add", "svc", "--url", "http://127.0.0.1:9/",
         "--header", "Authorization:Bearer ${OLD_TOKEN}", "--header", "X-Team:blue-team")
    out = room("agent", "set", "svc", "--header", "Authorization:Bearer ${NEW_TOKEN}",
               "--header", "X-Team:", "--header", "X-Extra:green").out
    assert out == ("changed agent svc:\n  header Authorization: changed\n"
                   "  header X-Extra: added\n  header X-Team: removed\n")
    for secret in ("OLD_TOKEN", "NEW_TOKEN", "blue", "green"):
        assert secret not in out + room("agent", "list").out + room("agent", "list", "--json").out
    assert agents(room)["svc"]["options"]["headers"] == {"Authorization": "***", "X-Extra": "***"}


def test_a_command_whose_program_is_not_here_is_added_with_a_note(cli, tmp_path):
    r = cli("agent", "add", "ghost", "--command", "/no/such/binary --reply")
    assert "note: /no/such/binary is not an executable file on this machine" in r.err
    assert "ghost" in agents(cli)
    r = cli("agent", "set", "ghost", "--command", "no-such-program-here --reply")
    assert "note: no-such-program-here is not found on this PATH" in r.err
    r = cli("agent", "set", "ghost", "--command", "LANG=C cat >/dev/null; echo hi")
    assert r.err == ""  # a program that is there, behind a variable: nothing to say
