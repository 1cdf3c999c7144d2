"""Summaries of older posts: extractive, LLM over real HTTP, and the fallback."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone

import pytest

from poller.wake import compose, summarize
from poller import tokens
from poller.config import SummarizerConfig, WakeConfig
from support.endpoint import endpoint  # noqa: F401  (the fixture: a real endpoint on loopback)

NOW = datetime(2025, 5, 1, 12, 0, tzinfo=timezone.utc)
COUNTER = tokens.counter()
SECRET = "sk-test-do-not-log-3141592653"


def post(i, text, sender="alice"):
    return compose.WakePost(id=i, sender=sender, created_at=NOW - timedelta(minutes=500 - i),
                            text=text, tokens=COUNTER.count(text))


POSTS = [post(i, f"Point {i} is settled. Then more detail that should not appear.", ["alice", "bob"][i % 2])
         for i in range(1, 41)]


# --- a real HTTP server on loopback --------------------------------------------


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


def test_endpoint_url_accepts_a_base_with_or_without_v1():
    assert llm("http://h:1/").endpoint == "http://h:1/v1/chat/completions"
    assert llm("http://h:1/v1").endpoint == "http://h:1/v1/chat/completions"


# --- extractive and none -------------------------------------------------------


def test_extractive_is_deterministic_within_budget_and_names_people():
    summarizer = summarize.ExtractiveSummarizer(COUNTER)
    text = run(summarizer, budget=120)
    assert text == run(summarizer, budget=120)
    assert text.startswith("42 earlier posts not shown word for word (by ")
    assert "alice ×20" in text and "bob ×20" in text and "2 even older" in text
    assert "Point 40 is settled." in text and "should not appear" not in text
    from poller.wake import lines
    assert COUNTER.count(lines.quote(text)) <= 120


def test_extractive_with_a_tiny_budget_or_no_posts_says_how_many():
    summarizer = summarize.ExtractiveSummarizer(COUNTER)
    assert run(summarizer, budget=5) == "[42 earlier posts not shown]"
    assert summarizer.summarize([], also_unseen=3, budget=300, agent="a", now=NOW) == "[3 earlier posts not shown]"


def test_null_and_from_config():
    assert run(summarize.NullSummarizer()) == "[42 earlier posts not shown]"
    assert summarize.not_shown_line(1) == "[1 earlier post not shown]"
    assert isinstance(summarize.from_config(SummarizerConfig(), COUNTER), summarize.ExtractiveSummarizer)
    assert isinstance(summarize.from_config(SummarizerConfig(kind="none"), COUNTER), summarize.NullSummarizer)
    assert isinstance(summarize.from_config(SummarizerConfig(kind="llm", url="http://x", model="m"), COUNTER),
                      summarize.LLMSummarizer)
