"""Delta wakes: an agent that keeps a session is shown each post once.

A Claude Code agent resumes one session per Mood, so its next wake there
carries only what is new since its last wake in that session, with a pointer
line to the rest; the full catch-up comes back when the session starts, is
forgotten, or sat unused past ``archive_after``.  Owed mentions are always
shown.  Agents without a session (command, HTTP) get the full catch-up every
time.  Real `tick` cycles, a stand-in ``claude`` and a command agent, both
real processes.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from poller import models
from poller.store import db
from support.turns import post, tick  # real cycles and posts at T0 + seconds (12:00 UTC)
from support.fakes import agent_wakes, claude_calls, reply_agent, set_claude, write_claude

POINTER = "Earlier posts: in this session (up to "


def execute(cli, statement):
    engine = db.make_engine(cli.db_url)
    try:
        with engine.begin() as conn:
            return conn.execute(statement)
    finally:
        engine.dispose()


@pytest.fixture
def room(any_cli, tmp_path):
    """A Mood with a Claude Code agent and a command agent, the first cycle run."""
    c = any_cli
    c("mood", "add", "lobby")
    c("person", "add", "ada", "--trust", "full")
    c("person", "add", "bob", "--trust", "full")
    c("set", "cooldown", "0")
    exe = write_claude(tmp_path / "bin", reply="On it.")
    c("agent", "add", "claude", "--claude-code", "--claude-bin", str(exe),
      "--session-dir", str(tmp_path / "sessions"))
    c("agent", "add", "bot", "--command", reply_agent(tmp_path / "agents"))
    tick(c, 0)
    return c


def seen_by_claude(tmp_path) -> list[str]:
    return [call["stdin"] for call in claude_calls(tmp_path / "bin")]


def seen_by_bot(tmp_path) -> list[str]:
    return [w["text"] for w in agent_wakes(tmp_path / "agents", "bot")]


def test_a_session_is_shown_each_post_once_and_a_sessionless_agent_everything(room, tmp_path):
    post(room, 1, "ada", "first topic: the oven")
    post(room, 2, "ada", "@claude @bot please look at the build")
    tick(room, 3)
    (first,) = seen_by_claude(tmp_path)
    assert "first topic: the oven" in first and POINTER not in first  # a new session: everything

    post(room, 10, "bob", "second topic: the fridge")
    post(room, 11, "ada", "@claude @bot and the tests?")
    tick(room, 12)
    second = seen_by_claude(tmp_path)[1]
    assert "second topic: the fridge" in second and "@claude @bot and the tests?" in second
    assert "first topic: the oven" not in second and "please look at the build" not in second
    assert POINTER + "12:00 UTC)." in second  # the build mention, at 12:00:02
    # The standing how-tos were in the session's first wake; later ones name them in a line.
    assert "```handoff" in first and "```handoff" not in second
    assert "as earlier in this session." in second and "This turn has your full tools" in second

    post(room, 20, "bob", "chatter: who took the last coffee")
    tick(room, 31)  # the chatter has settled: one agent takes the floor for a consider,
    tick(room, 32)  # the other is weighed again once that turn has ended
    consider = seen_by_claude(tmp_path)[2]
    assert 'reason="consider"' in consider and "who took the last coffee" in consider
    for old in ("first topic", "second topic", "and the tests?"):
        assert old not in consider  # no post twice in one session
    assert "[claude (agent)" not in consider  # nor its own replies: the session holds them
    assert "[bot (agent)" in consider  # another agent's reply is news to it

    # The command agent keeps no session: its consider carries the Mood lately in full.
    bot = seen_by_bot(tmp_path)
    assert len(bot) == 3 and 'reason="consider"' in bot[2]
    assert all(POINTER not in text for text in bot)
    for old in ("first topic: the oven", "second topic: the fridge", "and the tests?"):
        assert old in bot[2]


def test_an_owed_mention_is_shown_even_when_the_session_has_seen_it(room, tmp_path):
    post(room, 1, "ada", "@claude hello")
    tick(room, 2)
    room("set", "listening", "off", "--agent", "claude")
    held = post(room, 10, "ada", "@claude the one that waits")
    tick(room, 11)
    assert len(seen_by_claude(tmp_path)) == 1  # held while listening is off
    # The session's last wake says it showed everything up to the held mention
    # (as when a wake reads a post that a later scan finds owed).
    execute(room, sa.update(models.Wake).where(models.Wake.agent_id == sa.select(
        models.Participant.id).where(models.Participant.handle == "claude").scalar_subquery())
        .values(seen_id=held))
    room("set", "listening", "on", "--agent", "claude")
    tick(room, 12)
    last = seen_by_claude(tmp_path)[-1]
    assert 'reason="mention"' in last and "@claude the one that waits" in last
    assert POINTER in last


def test_a_forgotten_session_starts_over_with_the_full_catch_up(room, tmp_path):
    post(room, 2, "ada", "@claude hello")
    tick(room, 3)
    set_claude(tmp_path / "bin", "no-resume")  # Claude Code no longer knows the session
    post(room, 10, "ada", "@claude still there?")
    tick(room, 11)
    assert POINTER in seen_by_claude(tmp_path)[1]  # sent into the session that is lost
    set_claude(tmp_path / "bin", "ok")
    post(room, 20, "ada", "@claude and now?")
    tick(room, 21)
    third = seen_by_claude(tmp_path)[2]
    # A new session: what was said since it last spoke, in full, with no pointer.
    assert "@claude still there?" in third and POINTER not in third
    assert "--resume" not in claude_calls(tmp_path / "bin")[2]["argv"]


@pytest.mark.parametrize("archive_after, delta", [("60", False), ("0", False), ("3600", True)])
def test_a_session_unused_past_archive_after_gets_the_full_catch_up(room, tmp_path, archive_after,
                                                                    delta):
    room("set", "archive_after", archive_after, "--agent", "claude")
    post(room, 1, "ada", "first topic: the oven")
    post(room, 2, "ada", "@claude hello")
    tick(room, 3)
    post(room, 300, "bob", "five minutes later: anyone?")
    tick(room, 311)  # a consider, five minutes after the session was last used (one agent
    tick(room, 312)  # takes the floor; the other's consider comes once its turn has ended)
    later = seen_by_claude(tmp_path)[1]
    assert 'reason="consider"' in later and "five minutes later: anyone?" in later
    assert ("first topic: the oven" not in later) is delta
    assert (POINTER in later) is delta


def test_a_post_made_while_the_sessions_turn_ran_reaches_its_next_wake(room, tmp_path):
    # bob speaks after claude's wake was composed and before its reply: the
    # session never saw it, so the next wake there must carry it.  The first turn
    # waits at its start until bob has spoken (from outside: its sandbox hides the
    # database from it).
    import json
    import sys

    from support.waiting import wait_for

    bindir = tmp_path / "bin"
    real = bindir / "claude-real"
    (bindir / "claude").rename(real)
    started, go = bindir / "started", bindir / "go"
    (bindir / "claude").write_text(f"""#!{sys.executable}
import os, sys, time
if not os.path.exists({str(started)!r}):
    open({str(started)!r}, "w").close()
    give_up = time.monotonic() + 120
    while not os.path.exists({str(go)!r}) and time.monotonic() < give_up:
        time.sleep(0.05)
os.execv({str(real)!r}, [{str(real)!r}] + sys.argv[1:])
""")
    (bindir / "claude").chmod(0o755)
    post(room, 1, "ada", "@claude hello")
    room("tick", "--now", "2026-11-30T12:00:03Z")  # its runner goes on in the background
    wait_for(started.exists, what="the first turn to start")
    post(room, 4, "bob", "DURING-THE-TURN the oven is on fire")
    go.touch()
    wait_for(lambda: all(w["status"] not in ("pending", "running")
                         for w in json.loads(room("wakes", "--json").out)),
             what="the first turn to settle")
    post(room, 20, "ada", "@claude anything new?")
    tick(room, 21)
    first, second = seen_by_claude(tmp_path)[:2]
    assert "DURING-THE-TURN" not in first
    assert "DURING-THE-TURN" in second and POINTER in second


def test_a_notice_in_the_agents_name_reaches_its_session(room, tmp_path):
    post(room, 1, "ada", "@claude hello")
    tick(room, 2)  # a session now
    set_claude(tmp_path / "bin", "error-quiet")  # resumes, says nothing, ends in an error
    post(room, 10, "ada", "@claude and now?")
    tick(room, 11)
    set_claude(tmp_path / "bin", "ok")
    post(room, 20, "ada", "@claude once more")
    tick(room, 21)
    last = seen_by_claude(tmp_path)[-1]
    assert POINTER in last  # still the same session, shown only what is new
    assert "turn ended without a reply" in last  # the notice in its name, never seen before
