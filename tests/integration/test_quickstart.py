"""README's Quick start, run word for word, gets an answer; tripping over history is named.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import json


def test_posting_before_the_first_cycle_is_named_by_post_and_by_why(cli, tmp_path):
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "helper", "--command", "cat")
    r = cli("post", "lobby", "--as", "ada", "hello @helper")
    assert "has not run its first cycle" in r.err and "mood-poller tick" in r.err
    why = cli("why", "--mood", "lobby", "--agent", "helper").out
    assert "has not run its first cycle" in why
    cli("tick", "--now", "2026-11-30T12:00:00Z")
    answer = json.loads(cli("why", "--mood", "lobby", "--agent", "helper", "--json").out)
    assert answer["first_cycle_run"] and answer["mentions_before_first_cycle"] == 1
    why = cli("why", "--mood", "lobby", "--agent", "helper").out
    assert "posted before the poller's first cycle" in why
    r = cli("post", "lobby", "--as", "ada", "and now, @helper?")
    assert r.err == ""  # the poller has run: no note


def test_init_answer_from_now_marks_the_starting_point_at_once(cli, tmp_path):
    from support.agents import agent_command

    r = cli("init", "--answer-from-now", "--now", "2026-11-30T12:00:00Z")
    assert "listening from now" in r.out
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "helper", "--command", agent_command(tmp_path, "reply"))
    r = cli("post", "lobby", "--as", "ada", "--at", "2026-11-30T12:00:01Z", "hello @helper")
    assert r.err == ""  # heard: no warning about history
    cli("tick", "--now", "2026-11-30T12:00:02Z", "--wait")
    (w,) = json.loads(cli("wakes", "--json").out)
    assert (w["kind"], w["status"]) == ("mention", "replied")
    again = json.loads(cli("init", "--answer-from-now", "--json").out)
    assert again["before"] == again["after"] and again["listening_from_post"] == 0
