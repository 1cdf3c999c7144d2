"""Turning an agent's stdout into a post or a silent dot."""

from __future__ import annotations

import pytest

from poller.turns import settle
from poller.text import MAX_POST_CHARS


@pytest.mark.parametrize("raw,why", [
    ("<silent/>", ""),
    ("  <silent />\n", ""),
    ("<silent>nothing to add</silent>", "nothing to add"),
    ("**<silent>busy elsewhere</silent>**", "busy elsewhere"),
    ("```\n<silent/>\n```", ""),
    ("```text\n<silent>ok</silent>\n```", "ok"),
    ("_<SILENT/>_", ""),
    ("", ""),
    ("   \n\t", ""),
])
def test_silent_replies(raw, why):
    r = settle.classify(raw)
    assert (r.kind, r.text) == ("silent", why)


@pytest.mark.parametrize("raw", [
    "I'd stay <silent/> here but: the build is green.",
    "<silent>no</silent> actually, one thing",
    "silent",
])
def test_anything_else_is_a_post(raw):
    r = settle.classify(raw)
    assert r.kind == "post" and r.text == raw.strip()


def test_huge_replies_are_truncated_with_a_marker():
    r = settle.classify("x" * (MAX_POST_CHARS * 3))
    assert r.kind == "post" and len(r.text) <= MAX_POST_CHARS
    assert "reply truncated" in r.text and r.note == "truncated"


def test_invalid_utf8_is_replaced_and_noted():
    text, note = settle.decode(b"ok \xff\xfe then")
    assert text.startswith("ok ") and "\ufffd" in text
    assert "invalid UTF-8 at byte 3" in note
    assert settle.decode("fine ✓".encode()) == ("fine ✓", "")
