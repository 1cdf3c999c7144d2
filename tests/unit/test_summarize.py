"""Summaries of older posts: extractive, and the fallback (the LLM summarizer over real HTTP
is in tests/integration/test_summarize_llm.py)."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone

import pytest

from poller.wake import compose, summarize
from poller import tokens
from poller.config import SummarizerConfig, WakeConfig

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
