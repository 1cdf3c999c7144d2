"""Wakers against real processes and a real loopback HTTP server (no database)."""

from __future__ import annotations

import threading

import pytest

from poller.turns import wakers
from support.fakes import HttpAgent, claude_calls, free_port, set_claude, write_claude


def turn(tools="full", session=None, timeout=30.0, **kw) -> wakers.Turn:
    return wakers.Turn(7, "ada", "lobby", "mention", tools, "<mood-wake>hi</mood-wake>", (3, 4),
                       timeout=timeout, session=session, **kw)


def run(waker, t, cancel=None):
    return waker.run(t, lambda pgid: None, cancel or threading.Event())


# -- Claude Code --------------------------------------------------------------------


@pytest.fixture
def claude(tmp_path):
    bindir = tmp_path / "bin"
    return bindir, write_claude(bindir)


def test_a_full_tool_turn_gets_the_agents_tools_and_the_result(claude, tmp_path):
    bindir, exe = claude
    w = wakers.ClaudeWaker({"bin": str(exe), "model": "opus", "session_dir": str(tmp_path / "s")})
    out = run(w, turn("full"))
    assert out.status == "replied" and out.reply == "Hello from the stand-in claude."
    assert out.cost == pytest.approx(0.0123)
    assert out.session and len(out.session) == 36
    (call,) = claude_calls(bindir)
    argv = call["argv"]
    assert argv[:4] == ["-p", "--output-format", "stream-json", "--verbose"]
    assert argv[argv.index("--model") + 1] == "opus"
    assert argv[argv.index("--permission-mode") + 1] == "acceptEdits"
    assert "--allowedTools" not in argv and "--disallowedTools" not in argv
    assert "--resume" not in argv
    assert call["stdin"] == "<mood-wake>hi</mood-wake>"  # the wake is the prompt, on stdin
    assert call["cwd"] == str(tmp_path / "s")
    assert call["env"]["MOOD_TOOLS"] == "full" and call["env"]["MOOD_WAKE_ID"] == "7"


def test_a_look_only_turn_is_read_only(claude):
    bindir, exe = claude
    out = run(wakers.ClaudeWaker({"bin": str(exe), "permission_mode": "bypassPermissions"}),
              turn("look"))
    assert out.status == "replied"
    argv = claude_calls(bindir)[0]["argv"]
    assert argv[argv.index("--permission-mode") + 1] == "dontAsk"  # never the agent's own mode
    allowed = argv[argv.index("--allowedTools") + 1].split(",")
    assert set(allowed) == {"Read", "Grep", "Glob", "LS", "WebSearch", "WebFetch"}
    denied = argv[argv.index("--disallowedTools") + 1].split(",")
    assert {"Bash", "Edit", "Write"} <= set(denied)


def test_a_stored_session_is_resumed(claude):
    bindir, exe = claude
    out = run(wakers.ClaudeWaker({"bin": str(exe)}), turn(session="sess-123"))
    argv = claude_calls(bindir)[0]["argv"]
    assert argv[argv.index("--resume") + 1] == "sess-123"
    assert out.session == "sess-123"


@pytest.mark.parametrize("mode, error", [
    ("noresult-quiet", "ended without a final result"),
    ("crash-quiet", "ended without a final result (exit code 1"),
    ("error-quiet", "claude reported error_max_turns: reached the maximum number of turns"),
    ("budget-quiet", "claude reported error_max_budget_usd"),
])
def test_no_final_success_and_nothing_said_is_a_failure(claude, mode, error):
    bindir, exe = claude
    set_claude(bindir, mode)
    out = run(wakers.ClaudeWaker({"bin": str(exe)}), turn())
    assert out.status == "failed" and error in out.error
    assert out.reply == ""


@pytest.mark.parametrize("mode, error", [
    ("noresult", "ended without a final result"),
    ("crash", "ended without a final result (exit code 1"),
    ("error", "claude reported error_max_turns"),
    ("budget", "claude reported error_max_budget_usd"),
])
def test_what_the_agent_said_before_an_error_is_its_reply(claude, mode, error):
    bindir, exe = claude
    set_claude(bindir, mode, reply="Here is the summary you asked for.")
    out = run(wakers.ClaudeWaker({"bin": str(exe)}), turn())
    assert out.status == "replied" and out.reply == "Here is the summary you asked for."
    assert error in out.error and error in out.note  # kept beside the reply, for `wakes show`


def test_a_session_that_cannot_be_resumed_is_forgotten(claude):
    bindir, exe = claude
    set_claude(bindir, "no-resume")
    out = run(wakers.ClaudeWaker({"bin": str(exe)}), turn(session="gone"))
    assert out.status == "failed" and "No conversation found" in out.error
    assert out.session == ""  # tells the runner to drop it


def test_invalid_utf8_in_the_stream_is_noted_not_fatal(claude):
    bindir, exe = claude
    set_claude(bindir, "badutf8")
    out = run(wakers.ClaudeWaker({"bin": str(exe)}), turn())
    assert out.status == "replied"
    assert "invalid UTF-8" in out.note and "unreadable stream lines skipped" in out.note


def test_a_missing_claude_executable_fails_cleanly(tmp_path):
    out = run(wakers.ClaudeWaker({"bin": str(tmp_path / "nope")}), turn())
    assert out.status == "failed" and "could not start" in out.error


def test_claude_on_path_is_used_by_default(claude, monkeypatch):
    bindir, _ = claude
    monkeypatch.setenv("PATH", f"{bindir}:{__import__('os').environ['PATH']}")
    assert run(wakers.ClaudeWaker({}), turn()).status == "replied"
    assert len(claude_calls(bindir)) == 1


def test_the_stream_parser_reads_lines_split_across_chunks():
    s = wakers.ClaudeStream()
    data = (b'{"type":"system","subtype":"init","session_id":"abc"}\n'
            b'{"type":"result","subtype":"success","result":"hi","session_id":"abc"}\n')
    for i in range(0, len(data), 7):
        s.feed(data[i:i + 7])
    s.close()
    assert s.session == "abc" and s.result["result"] == "hi"


def test_the_stream_parser_drops_a_giant_line_but_keeps_reading(monkeypatch):
    monkeypatch.setattr(wakers, "LINE_LIMIT", 1000)
    s = wakers.ClaudeStream()
    s.feed(b'{"type":"assistant","x":"' + b"z" * 5000)
    s.feed(b'"}\n{"type":"result","subtype":"success","result":"ok","session_id":"q"}\n')
    s.close()
    assert s.result["result"] == "ok" and "dropped" in s.notes[0]


# -- HTTP -------------------------------------------------------------------------------


@pytest.fixture
def http_agent():
    server = HttpAgent()
    yield server
    server.close()


def test_a_json_reply_and_the_request_it_answers(http_agent):
    w = wakers.HttpWaker(http_agent.url("ok"), {"Authorization": "Bearer s3cret"})
    out = run(w, turn("look"))
    assert (out.status, out.reply) == ("replied", "ada heard mention")
    (req,) = http_agent.seen
    assert req["body"] == {"wake_id": 7, "agent": "ada", "mood": "lobby", "kind": "mention",
                           "tools": "look", "text": "<mood-wake>hi</mood-wake>", "answers": [3, 4]}
    assert req["headers"]["Authorization"] == "Bearer s3cret"


def test_a_header_value_can_come_from_the_environment(http_agent, monkeypatch):
    w = wakers.HttpWaker(http_agent.url("ok"), {"Authorization": "${AGENT_TOKEN}"})
    out = run(w, turn())
    assert out.status == "failed" and "AGENT_TOKEN" in out.error and http_agent.seen == []
    monkeypatch.setenv("AGENT_TOKEN", "Bearer from-env")
    assert run(w, turn()).status == "replied"
    assert http_agent.seen[-1]["headers"]["Authorization"] == "Bearer from-env"


def test_a_text_plain_body_is_the_reply(http_agent):
    out = run(wakers.HttpWaker(http_agent.url("text")), turn())
    assert (out.status, out.reply) == ("replied", "plain words back")


@pytest.mark.parametrize("route, error", [
    ("fail", "HTTP 500 Internal Server Error: the model backend is down"),
    ("bad", 'HTTP 400 Bad Request: {"error": "wake_id missing"}'),
    ("malformed", "the response is not valid JSON"),
    ("noreply", "no text 'reply' field"),
    ("hugejson", "the JSON response was over 4,194,304 bytes"),
    ("nowhere", "HTTP 404"),
])
def test_bad_answers_are_failures_with_a_reason_and_never_retried(http_agent, route, error):
    out = run(wakers.HttpWaker(http_agent.url(route), {"X-Key": "hush"}), turn())
    assert out.status == "failed" and error in out.error, out.error
    assert "hush" not in out.error
    assert len(http_agent.seen) == 1


def test_a_huge_text_body_is_cut_with_a_note(http_agent):
    out = run(wakers.HttpWaker(http_agent.url("huge")), turn())
    assert out.status == "replied" and len(out.reply) == wakers.BODY_LIMIT
    assert "cut at 4,194,304 bytes" in out.note


def test_invalid_utf8_in_a_text_body_is_replaced_and_noted(http_agent):
    out = run(wakers.HttpWaker(http_agent.url("badutf8")), turn())
    assert out.status == "replied" and "\ufffd" in out.reply and "invalid UTF-8" in out.note


def test_a_slow_agent_is_cut_off_at_the_timeout(http_agent):
    # The agent answers after 5 s; the turn's 1 s timeout ends it first.
    out = run(wakers.HttpWaker(http_agent.url("slow")), turn(timeout=1.0))
    assert out.status == "cut_off" and out.error == "timed out after 1 s"
    assert out.reply == ""


def test_a_cancelled_http_turn_ends_without_waiting_for_the_answer(http_agent):
    # No timeout and an agent that answers after 5 s: only the cancel can end the turn.
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    out = run(wakers.HttpWaker(http_agent.url("slow")), turn(timeout=None), cancel)
    assert out.status == "cut_off" and out.error == wakers.STOPPED
    assert out.reply == ""


def test_connection_refused_is_retried_then_fails(monkeypatch):
    monkeypatch.setattr(wakers, "CONNECT_BACKOFF_S", 0.01)
    out = run(wakers.HttpWaker(f"http://127.0.0.1:{free_port()}/ok"), turn())
    assert out.status == "failed"
    assert f"could not connect after {wakers.CONNECT_ATTEMPTS} attempts" in out.error


def test_a_failure_after_the_request_was_sent_is_not_retried(http_agent):
    out = run(wakers.HttpWaker(http_agent.url("drop")), turn())
    assert out.status == "failed" and "after it was sent, not retried" in out.error
    assert len(http_agent.seen) == 1



# -- The silence limit -----------------------------------------------------------------


def test_a_turn_silent_past_its_limit_is_cut_off_with_its_children():
    out = run(wakers.CommandWaker("sleep 120 & sleep 120"), turn(timeout=None, silence_limit=1.0))
    assert out.status == "cut_off" and out.error == "produced no output for 1 s"


def test_output_keeps_a_turn_alive_past_its_silence_limit():
    # 6 s of work, a line every 0.25 s, a 4 s silence limit: never silent for long.
    script = "for i in $(seq 24); do echo step $i; sleep 0.25; done"
    out = run(wakers.CommandWaker(script), turn(timeout=None, silence_limit=4.0))
    assert out.status == "replied" and out.reply.strip().endswith("step 24")
