"""Model agents through the whole loop, against language-model servers on loopback
(OpenAI-compatible and Anthropic-shaped), on SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pydantic_ai", reason="the models extra is part of the test extras")

from support.llmserver import (AnthropicServer, Call, Fail, Hang, OpenAIServer, Say,  # noqa: E402
                               system_of, tools_of)
from support.timeline import TimelineCli, at  # noqa: E402

KEY = "sk-test-0123456789abcdefSECRET"


@pytest.fixture
def room(any_cli, monkeypatch):
    monkeypatch.setenv("MODEL_TEST_KEY", KEY)
    c = TimelineCli(any_cli.db_url)
    c("mood", "add", "lobby")
    c("person", "add", "ada", "--trust", "full")
    c("person", "add", "bob", "--trust", "look")
    c("set", "cooldown", "0")
    c("set", "considers_per_hour", "0")
    c("set", "idle_after", "0")
    c("tick", "--now", at(0), "--wait")
    return c


def add_sage(c, server, provider="openai", *extra):
    c("agent", "add", "sage", "--model", f"{provider}:test-model", "--base-url", server.base_url,
      "--api-key-env", "MODEL_TEST_KEY", "--timeout", "20", *extra)


def ask(c, seconds: float, text: str = "@sage what is the build status?", who: str = "ada") -> dict:
    c("post", "lobby", "--as", who, "--at", at(seconds), text)
    c("tick", "--now", at(seconds + 1), "--wait")
    return sorted(json.loads(c("wakes", "--json").out), key=lambda w: w["id"])[-1]


def last_post(c) -> dict:
    return json.loads(c("posts", "lobby", "--json").out)[-1]


def test_a_mention_is_answered_by_the_model_with_persona_rules_and_the_wake(room):
    c = room
    with OpenAIServer([Say("The build is green.", 321, 12)]) as server:
        add_sage(c, server)
        c("set", "rules", "Answer in one line.", "--mood", "lobby")
        w = ask(c, 10)
        assert w["status"] == "replied"
        post = last_post(c)
        assert (post["sender"], post["text"]) == ("sage", "The build is green.")
        (req,) = server.requests
        assert req.key == KEY  # read from the variable at turn time
        system = system_of(req)
        assert "Mood" in system and "Answer in one line." in system
        user = [m for m in req.body["messages"] if m["role"] == "user"][-1]["content"]
        assert user == json.loads(c("wakes", "show", str(w["id"]), "--json").out)["text"]
        shown = json.loads(c("wakes", "show", str(w["id"]), "--json").out)
        assert shown["usage"]["tokens_in"] == 321 and shown["usage"]["tokens_out"] == 12
        assert "321 tokens in" in c("wakes", "show", str(w["id"])).out


def test_the_key_is_never_stored_shown_or_put_in_a_wake(room, any_cli):
    c = room
    with OpenAIServer([Say("ok")]) as server:
        add_sage(c, server)
        c("post", "lobby", "--as", "ada", "--at", at(10), "@sage what is the build status?")
        ticked = c("tick", "--now", at(11), "--wait", "-v")
        (w,) = json.loads(c("wakes", "--json").out)
        assert w["status"] == "replied"
        seen = [ticked.out + ticked.err, c("agent", "list").out, c("agent", "list", "--json").out,
                c("wakes", "show", str(w["id"]), "--json").out, c("status", "--json").out,
                c("config", "check").out + c("config", "check").err,
                c("why", "sage", "lobby").out]
        assert not any(KEY in s for s in seen)
        import sqlalchemy as sa

        engine = sa.create_engine(any_cli.db_url)
        try:
            with engine.connect() as conn:
                for table in ("agents", "agent_sessions", "wakes", "posts", "settings"):
                    rows = conn.exec_driver_sql(f"SELECT * FROM {table}").all()
                    assert KEY not in repr(rows), table
        finally:
            engine.dispose()


def test_a_tool_call_runs_and_its_result_goes_back_before_the_answer(room):
    c = room
    c("post", "lobby", "--as", "ada", "--at", at(5), "the deploy key rotates on Fridays")
    with OpenAIServer([Call((("read_history", {"max_tokens": 500}),)),
                       Say("It rotates on Fridays.")]) as server:
        add_sage(c, server)
        w = ask(c, 10, "@sage when does the deploy key rotate?")
        assert w["status"] == "replied" and last_post(c)["text"] == "It rotates on Fridays."
        first, second = server.requests
        assert {"read_history", "read_post", "set_alarm", "handoff"} <= set(tools_of(first))
        tool_msgs = [m for m in second.body["messages"] if m["role"] == "tool"]
        assert len(tool_msgs) == 1 and "rotates on Fridays" in tool_msgs[0]["content"]


def test_a_look_only_turn_is_offered_no_acting_tool(room):
    c = room
    with OpenAIServer([Say("Looked.")]) as server:
        add_sage(c, server)
        w = ask(c, 10, "@sage have a look", who="bob")
        assert w["tools"] == "look" and w["status"] == "replied"
        offered = set(tools_of(server.requests[0]))
        assert "read_history" in offered
        assert not offered & {"handoff", "change_settings", "set_alarm", "go_away", "checkin"}


def test_an_acting_tool_is_applied_as_its_reply_block(room):
    c = room
    alarm = {"daily": "09:00", "tz": "Europe/Berlin", "note": "look at the overnight build"}
    with OpenAIServer([Call((("set_alarm", alarm),)), Say("I will look every morning.")]) as server:
        add_sage(c, server)
        w = ask(c, 10, "@sage remind yourself to check the build each morning")
        assert w["status"] == "replied"
        reply = json.loads(c("posts", "lobby", "--json").out)[-2]
        assert reply["sender"] == "sage" and reply["text"] == "I will look every morning."
        assert "set alarm" in last_post(c)["text"]  # the block, applied as a block
        (a,) = json.loads(c("alarm", "list", "--json").out)
        assert a["agent"] == "sage" and "overnight build" in a["note"]


def test_an_acting_tool_named_in_approve_tools_waits_for_a_persons_approval(room):
    from support.waiting import wait_for

    c = room
    c("set", "approve_tools", "set_alarm, handoff")
    alarm = {"daily": "09:00", "tz": "Europe/Berlin", "note": "look at the overnight build"}
    with OpenAIServer([Call((("set_alarm", alarm),)), Say("Asked, and set."),
                       Call((("set_alarm", alarm),)), Say("Not set, then.")]) as server:
        add_sage(c, server)
        c("post", "lobby", "--as", "ada", "--at", at(10), "@sage remind yourself each morning")
        c("tick", "--now", at(11))  # the turn runs on while it waits
        (asked,) = wait_for(lambda: json.loads(c("approvals", "--json").out),
                            what="the approval request")
        assert (asked["agent"], asked["tool"]) == ("sage", "set_alarm")
        assert "overnight build" in asked["input"] and "asks to use set_alarm" in last_post(c)["text"]
        refused = c.fails("approve", str(asked["id"]), "--by", "bob")  # trust look: may not
        assert "trust look" in refused.err
        c("approve", str(asked["id"]), "--by", "ada")
        wait_for(lambda: json.loads(c("wakes", "--json").out)[0]["status"] == "replied",
                 what="the turn's end")
        (a,) = json.loads(c("alarm", "list", "--json").out)
        assert a["agent"] == "sage"
        tool_msg = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"][0]
        assert not tool_msg["content"].startswith("error")

        # Denied: the model reads why, and nothing is set.
        c("post", "lobby", "--as", "ada", "--at", at(100), "@sage again, please")
        c("tick", "--now", at(101))
        (asked,) = wait_for(lambda: json.loads(c("approvals", "--json").out),
                            what="the second request")
        c("deny", str(asked["id"]), "--reason", "one alarm is plenty")
        wait_for(lambda: all(w["status"] == "replied" for w in json.loads(c("wakes", "--json").out)),
                 what="the second turn's end")
        tool_msg = [m for m in server.requests[3].body["messages"] if m["role"] == "tool"][-1]
        assert "one alarm is plenty" in tool_msg["content"]
        assert len(json.loads(c("alarm", "list", "--json").out)) == 1  # still only the first


def test_the_second_wake_is_a_delta_and_carries_the_first_exchange(room):
    c = room
    with OpenAIServer([Say("First answer."), Say("Second answer.")]) as server:
        add_sage(c, server)
        ask(c, 10, "@sage first question")
        w2 = ask(c, 100, "@sage second question")
        assert w2["status"] == "replied"
        second = server.requests[-1].body["messages"]
        texts = [str(m.get("content")) for m in second]
        assert any("first question" in t for t in texts) and "First answer." in texts
        assert "Earlier posts: in this session" in json.loads(c("wakes", "show", str(w2["id"]), "--json").out)["text"]


def test_past_session_tokens_the_conversation_is_summarised_and_the_next_wake_is_full(room):
    c = room
    c("set", "session_tokens", "2000")
    with OpenAIServer([Say("First answer.", 5000, 10), Say("We discussed question one."),
                       Say("Second answer.")]) as server:
        add_sage(c, server)
        ask(c, 10, "@sage first question")
        assert len(server.requests) == 2  # the answer, then the summary
        w2 = ask(c, 100, "@sage second question")
        assert w2["status"] == "replied"
        sent = server.requests[-1].body["messages"]
        texts = " ".join(str(m.get("content")) for m in sent)
        assert "We discussed question one." in texts and "First answer." not in texts
        wake = json.loads(c("wakes", "show", str(w2["id"]), "--json").out)["text"]
        assert "Earlier posts: in this session" not in wake  # a full catch-up, not a delta


def test_a_429_is_retried_and_the_turn_answers(room):
    c = room
    with OpenAIServer([Fail(429, "slow down", retry_after=0), Say("Now I can.")]) as server:
        add_sage(c, server)
        w = ask(c, 10)
        assert w["status"] == "replied" and last_post(c)["text"] == "Now I can."
        assert len(server.requests) == 2


@pytest.mark.parametrize("fail, cause", [
    (Fail(401, "Incorrect API key provided"), "refused the API key in MODEL_TEST_KEY"),
    (Fail(404, "The model does not exist"), "is not known there"),
    (Fail(500, "boom"), "HTTP 500"),
])
def test_a_failure_is_one_line_naming_the_cause_never_the_key(room, fail, cause):
    c = room
    with OpenAIServer([fail]) as server:
        add_sage(c, server)
        w = ask(c, 10)
        assert w["status"] == "failed"
        assert cause in w["error"] and "\n" not in w["error"] and KEY not in w["error"]
        why = c("why", "sage", "lobby", "--now", at(12)).out
        assert KEY not in why


def test_an_unreachable_server_fails_the_turn_in_one_line(room):
    c = room
    c("agent", "add", "sage", "--model", "openai:test-model", "--base-url",
      "http://127.0.0.1:9/v1", "--timeout", "20")
    w = ask(c, 10)
    assert w["status"] == "failed" and "cannot be reached" in w["error"]


def test_a_turn_that_never_ends_leaves_the_session_as_it_was(room, any_cli):
    c = room
    with OpenAIServer([Say("First answer."), Hang()]) as server:
        add_sage(c, server)
        ask(c, 10, "@sage first question")
        import sqlalchemy as sa

        def kept():
            engine = sa.create_engine(any_cli.db_url)
            try:
                with engine.connect() as conn:
                    return conn.exec_driver_sql(
                        "SELECT session_id, history FROM agent_sessions").all()
            finally:
                engine.dispose()

        before = kept()
        c("agent", "set", "sage", "--timeout", "2")
        w = ask(c, 100, "@sage second question")
        assert w["status"] in ("failed", "cut_off")
        assert kept() == before


def test_a_runner_killed_mid_turn_leaves_the_session_as_it_was(room, any_cli):
    """kill -9 of the runner while the model is thinking: no half-written exchange is kept,
    recovery closes the turn as cut off, and the session is the one before that turn."""
    import os
    import signal

    import sqlalchemy as sa

    from support.waiting import wait_for

    c = room

    def query(sql: str):
        engine = sa.create_engine(any_cli.db_url)
        try:
            with engine.connect() as conn:
                return conn.exec_driver_sql(sql).all()
        finally:
            engine.dispose()

    with OpenAIServer([Say("First answer."), Hang()]) as server:
        add_sage(c, server)
        ask(c, 10, "@sage first question")
        before = query("SELECT session_id, history FROM agent_sessions")
        assert before and "First answer." in before[0][1]
        c("post", "lobby", "--as", "ada", "--at", at(100), "@sage second question")
        c("tick", "--now", at(101))  # no --wait: the turn runs in a runner process of its own
        wait_for(lambda: len(server.requests) == 2, what="the model to be asked")
        (wake_id, pid), = query("SELECT id, runner_pid FROM wakes WHERE status = 'running'")
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not os.path.exists(f"/proc/{pid}") or
                 open(f"/proc/{pid}/stat").read().split(") ", 1)[1][0] == "Z",
                 what="the runner to die")
        c("tick", "--now", at(102), "--wait")
        w = next(w for w in json.loads(c("wakes", "--json").out) if w["id"] == wake_id)
        assert w["status"] == "cut_off"
        assert query("SELECT session_id, history FROM agent_sessions") == before


def test_anthropic_answers_and_calls_tools(room):
    c = room
    with AnthropicServer([Call((("who_is_here", {}),)), Say("ada and bob are here.")]) as server:
        add_sage(c, server, "anthropic")
        w = ask(c, 10, "@sage who is here?")
        assert w["status"] == "replied" and last_post(c)["text"] == "ada and bob are here."
        first, second = server.requests
        assert first.path.endswith("/v1/messages") and first.key == KEY
        assert "Mood" in system_of(first)
        results = [b for m in second.body["messages"] if isinstance(m.get("content"), list)
                   for b in m["content"] if b.get("type") == "tool_result"]
        assert results and "ada" in json.dumps(results)


def test_a_known_model_is_priced_by_the_table_and_the_daily_budget_holds_it(room):
    c = room
    with OpenAIServer([Say("Priced.", 1_000_000, 1_000_000)]) as server:
        c("agent", "add", "sage", "--model", "openai:gpt-4o-mini", "--base-url", server.base_url,
          "--api-key-env", "MODEL_TEST_KEY", "--timeout", "20")
        c("set", "max_usd_per_day", "0.5", "--agent", "sage", "--mood", "lobby")
        w = ask(c, 10)
        usage = json.loads(c("wakes", "show", str(w["id"]), "--json").out)["usage"]
        assert usage["cost_usd"] == pytest.approx(0.15 + 0.60)  # gpt-4o-mini's list prices
        (agent,) = [a for a in json.loads(c("status", "--json").out)["agents"] if a["handle"] == "sage"]
        assert agent["spent_24h"]["usd"] == pytest.approx(0.75)
        c("post", "lobby", "--as", "ada", "--at", at(60), "@sage and now?")
        c("tick", "--now", at(61), "--wait")
        why = json.loads(c("why", "sage", "lobby", "--json", "--now", at(62)).out)
        assert why["decisions"]["mention"]["reason"] == "over-budget"
        # The answer, then its summary (2M tokens pass session_tokens); no turn since.
        assert len(server.requests) == 2 and "grown long" in json.dumps(server.requests[1].body)


def test_a_model_the_table_does_not_know_is_priced_by_its_tokens(any_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("MODEL_TEST_KEY", KEY)
    config = tmp_path / "config.toml"
    config.write_text("[poller]\nusd_per_mtok_in = 2.0\nusd_per_mtok_out = 10.0\n")
    c = TimelineCli(any_cli.db_url, config=str(config))
    c("mood", "add", "lobby")
    c("person", "add", "ada", "--trust", "full")
    c("tick", "--now", at(0), "--wait")
    with OpenAIServer([Say("Priced by tokens.", 500_000, 100_000)]) as server:
        add_sage(c, server)
        w = ask(c, 10)
        usage = json.loads(c("wakes", "show", str(w["id"]), "--json").out)["usage"]
        assert usage["cost_usd"] == pytest.approx(0.5 * 2.0 + 0.1 * 10.0)
