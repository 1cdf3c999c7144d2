"""Wakers against real processes and a real loopback HTTP server (no database).

Here, the pure part (no database, no process); the rest sits under the same name
in the other layers.
"""

from __future__ import annotations

import threading

import pytest

from poller.turns import wakers
from support.fakes import HttpAgent, free_port
from support.wakers import run, turn


# -- Claude Code --------------------------------------------------------------------


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
