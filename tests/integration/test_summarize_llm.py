"""The LLM summarizer over real HTTP: a loopback OpenAI-compatible endpoint."""

from __future__ import annotations

import logging

import pytest

from poller.config import WakeConfig
from poller.wake import compose, summarize
from support.endpoint import endpoint  # noqa: F401  (the fixture: a real endpoint on loopback)

from datetime import datetime, timedelta, timezone

from poller import tokens
from poller.config import SummarizerConfig

NOW = datetime(2025, 5, 1, 12, 0, tzinfo=timezone.utc)
COUNTER = tokens.counter()
SECRET = "sk-test-do-not-log-3141592653"
POSTS = [compose.WakePost(id=i, sender=["alice", "bob"][i % 2],
                          created_at=NOW - timedelta(minutes=500 - i),
                          text=f"Point {i} is settled. Then more detail that should not appear.",
                          tokens=20) for i in range(1, 41)]


def post(i, text, sender="alice"):
    return compose.WakePost(id=i, sender=sender, created_at=NOW - timedelta(minutes=500 - i),
                            text=text, tokens=COUNTER.count(text))


def llm(url, timeout=5.0):
    return summarize.LLMSummarizer(SummarizerConfig(kind="llm", url=url, model="tiny", api_key=SECRET,
                                                    timeout=timeout), COUNTER)


def run(summarizer, posts=POSTS, budget=300):
    return summarizer.summarize(posts, also_unseen=2, budget=budget, agent="ada", now=NOW)


@pytest.mark.parametrize("endpoint", ["ok"], indirect=True)
def test_llm_summary_from_a_real_server(endpoint):
    text = run(llm(endpoint.url))
    assert text.startswith("42 earlier posts, summarized by a model: They settled points 1-40.")
    assert "</mood-wake" not in text and COUNTER.count(text) <= 300
    (req,) = endpoint.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["auth"] == f"Bearer {SECRET}"
    assert req["body"]["model"] == "tiny" and req["body"]["max_tokens"] == 300
    assert "Point 40 is settled" in req["body"]["messages"][1]["content"]


@pytest.mark.parametrize("endpoint", ["slow"], indirect=True)
def test_slow_server_times_out(endpoint, caplog):
    # The server answers after 2 s; the summarizer gives up at its 0.3 s timeout.
    with pytest.raises(summarize.SummaryError, match="timed out"):
        run(llm(endpoint.url, timeout=0.3))
    assert len(endpoint.requests) == 1


@pytest.mark.parametrize("endpoint", ["fail", "garbage"], indirect=True)
def test_failing_server_raises_summary_error_without_the_key(endpoint):
    with pytest.raises(summarize.SummaryError) as info:
        run(llm(endpoint.url))
    assert SECRET not in str(info.value)


def test_unreachable_server_raises_summary_error():
    with pytest.raises(summarize.SummaryError, match="unreachable"):
        run(llm("http://127.0.0.1:9", timeout=1))


@pytest.mark.parametrize("endpoint", ["fail"], indirect=True)
def test_compose_falls_back_to_a_count_and_never_logs_the_key(endpoint, caplog):
    caplog.set_level(logging.DEBUG)
    request = compose.WakeRequest(kind="consider", mood="m", agent="ada", now=NOW,
                                  woke=[post(99, "what about lunch?")], history=POSTS,
                                  earlier_count=5, catch_up_tokens=300)
    wake = compose.compose(request, config=WakeConfig(), counter=COUNTER, summarizer=llm(endpoint.url))
    assert wake.summary_source == "fallback"
    assert f"[{wake.summarized_count} earlier posts not shown]" in wake.text
    assert wake.summarized_count == 5 + 40 - wake.shown_count
    assert any(getattr(r, "action", None) == "summary_failed" for r in caplog.records)
    assert SECRET not in caplog.text


