"""Search's pure parts: a query cut into words and quoted for FTS5, the excerpt around
the matched words and its marks, a hit as the API shows it.

Here, the pure part (no database, no process); the rest sits under the same name
in the other layers."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from poller import errors
from poller.store import search


@pytest.mark.parametrize("raw,words", [
    ("cats", ("cats",)),
    ("Cats DOGS cats", ("cats", "dogs")),  # lower-cased, each once, in order
    ('"it\'s" NEAR(x, 3) AND *', ("it", "s", "near", "x", "3", "and")),
    ("foo_bar-baz https://ci.example.org/a?b=1", ("foo", "bar", "baz", "https", "ci", "example",
                                                  "org", "a", "b", "1")),
    ("café 日本語 ²", ("café", "日本語", "²")),
    ('" * \' ( ) «» 🐈 _', ()),  # no word: nothing to find, and no error
])
def test_a_query_is_the_words_in_it(raw, words):
    assert search.parse(raw).words == words


@pytest.mark.parametrize("raw,said", [
    ("", "give words to search for"),
    (" \t\n", "give words to search for"),
    ("x" * 501, "the query too long: 501 characters (the limit is 500)"),
    (" ".join(f"w{i}" for i in range(33)), "the query has 33 words: search for at most 32"),
    ("a\x00b", "the query contains a NUL character"),
])
def test_a_query_that_cannot_be_asked_is_a_user_error(raw, said):
    with pytest.raises(errors.UserError, match=said.replace("(", r"\(").replace(")", r"\)")):
        search.parse(raw)


def test_fts5_gets_every_word_as_a_string_never_an_operator():
    q = search.parse('AND "NEAR(cats" OR dogs*')
    assert search.fts5_match(q) == '"and" "near" "cats" "or" "dogs"'
    assert search.fts5_near(q) == 'NEAR("and" "near" "cats" "or" "dogs", 10)'
    assert search.fts5_near(search.parse("cats")) is None
    assert search.fts5_string('a"b') == '"a""b"'


def test_a_short_text_is_its_own_excerpt_with_the_words_marked():
    parts = search.excerpt("Tea <b>or</b>\n\n  coffee? TEA!", frozenset({"tea"}))
    assert parts == (("Tea", True), (" <b>or</b> coffee? ", False), ("TEA", True), ("!", False))
    assert search.marked(parts) == "«Tea» <b>or</b> coffee? «TEA»!"


def test_only_whole_words_are_marked():
    parts = search.excerpt("cat cats concat cat_nap", frozenset({"cat"}))
    assert search.marked(parts) == "«cat» cats concat «cat»_nap"


def test_a_long_text_is_cut_around_the_most_matches_at_spaces():
    body = " ".join(["filler"] * 60 + ["the", "kettle", "and", "the", "kettle"] + ["tail"] * 60)
    parts = search.excerpt(body, frozenset({"kettle"}), width=80)
    shown = search.marked(parts)
    assert shown.startswith("… ") is False and shown.startswith("…")
    assert shown.endswith("…") and shown.count("«kettle»") == 2
    inner = shown.strip("…")
    assert len(inner) <= 80 + 20 and not inner.startswith(" ") and not inner.endswith(" ")
    assert all(w in ("filler", "the", "«kettle»", "and", "tail") for w in inner.split())


def test_a_long_text_with_no_word_found_shows_its_start():
    parts = search.excerpt("word " * 100, frozenset({"absent"}), width=30)
    assert search.marked(parts) == "word word word word word word…"


def test_a_hit_as_json():
    at = dt.datetime(2026, 3, 2, 9, tzinfo=dt.timezone.utc)
    hit = search.Hit(7, "lobby", "ada", "person", at, "post", None, (("a ", False), ("cat", True)))
    assert hit.to_json() == {"id": 7, "mood": "lobby", "sender": "ada", "sender_kind": "person",
                             "created_at": "2026-03-02T09:00:00Z", "kind": "post",
                             "reply_to": None, "snippet": "a «cat»",
                             "parts": [{"text": "a ", "match": False},
                                       {"text": "cat", "match": True}]}


@settings(max_examples=300, deadline=None)
@given(body=st.text(st.sampled_from("ab cé«»…_\n\t<>"), max_size=400),
       words=st.sets(st.sampled_from(["ab", "c", "é", "b"]), max_size=3),
       width=st.integers(10, 120))
def test_the_parts_are_the_text_itself_and_marks_only_the_words(body, words, width):
    parts = search.excerpt(body, frozenset(words), width)
    flat = " ".join(body.split())
    joined = "".join(t for t, _ in parts)
    # the text, or a stretch of it with an ellipsis where it was cut
    assert any(cut in flat for cut in (joined, joined[1:], joined[:-1], joined[1:-1])
               if cut == joined or "…" in joined)
    assert all(t.lower() in words for t, matched in parts if matched)
    assert all(a[1] != b[1] for a, b in zip(parts, parts[1:]))  # neighbours differ
    assert all(t for t, _ in parts)
