"""Parsing handoff and settings blocks out of agents' replies (pure)."""

from __future__ import annotations

import pytest

from poller.turns import blocks

HANDOFF = """Done here.

```handoff
to: kitchen
about: the oven timer bug
for: @chef
---
The timer resets when the door opens.
```python
print("a code fence inside the context")
```
Repro in ticket 12.
```

Back to you all."""


def test_a_handoff_block_is_taken_out_and_read():
    p = blocks.parse(HANDOFF, tools="look")
    assert p.text == "Done here.\n\nBack to you all."
    assert p.refused == ()
    h = p.handoff
    assert (h.direction, h.mood, h.about, h.for_agent) == ("to", "kitchen", "the oven timer bug", "chef")
    assert h.context.startswith("The timer resets") and h.context.endswith("Repro in ticket 12.")
    assert 'print("a code fence inside the context")' in h.context


def test_from_and_no_for():
    p = blocks.parse("```handoff\nfrom: lab\nabout: results\n---\nall green\n```", tools="look")
    assert (p.handoff.direction, p.handoff.mood, p.handoff.for_agent) == ("from", "lab", None)
    assert p.text == ""


def test_a_reply_without_blocks_is_untouched():
    reply = "Just text\n```python\nx = 1\n```\n"
    assert blocks.parse(reply, tools="full") == blocks.Parsed(reply)


def test_a_block_quoted_inside_another_fence_is_plain_text():
    reply = "Example:\n```markdown\n```handoff\nto: x\nabout: y\n---\nz\n```\n```\nend"
    p = blocks.parse(reply, tools="full")
    assert p.handoff is None and p.refused == () and p.text == reply


def test_settings_block_on_a_full_turn():
    p = blocks.parse("ok\n```settings\nverbosity: brief\nidle_after: 600\nnote: too chatty\n```",
                     tools="full")
    assert p.settings == blocks.Settings({"verbosity": "brief", "idle_after": "600"}, "too chatty")
    assert p.text == "ok"


@pytest.mark.parametrize("body, reason", [
    ("colour: blue", "unknown setting 'colour'"),
    ("verbosity: loud", "verbosity must be one of brief, normal, thorough"),
    ("idle_after: 99999999", "idle_after must be between 0 and 604800"),
    ("consider_after: -1", "consider_after must be between 0 and 3600"),
    ("cooldown: 0", "cooldown cannot be changed from a reply"),
    ("max_wakes_per_hour: 600", "max_wakes_per_hour cannot be changed from a reply"),
    ("verbosity: brief\nverbosity: thorough", "verbosity is given twice"),
    ("just some words", "is not 'key: value'"),
    ("", "sets nothing"),
    ("note: only a note", "sets nothing"),
])
def test_bad_settings_blocks_are_refused_whole(body, reason):
    p = blocks.parse(f"hi\n```settings\n{body}\n```", tools="full")
    assert p.settings is None
    (r,) = p.refused
    assert r.block == "settings" and reason in r.reason
    assert p.text == "hi"


def test_a_settings_block_with_one_good_and_one_bad_key_applies_neither():
    p = blocks.parse("```settings\nverbosity: brief\ncatch_up_tokens: 5\n```", tools="full")
    assert p.settings is None
    assert "catch_up_tokens must be between" in p.refused[0].reason


def test_settings_on_a_look_only_turn_are_refused():
    p = blocks.parse("```settings\nverbosity: brief\n```", tools="look")
    assert p.settings is None
    assert "only honoured on a full-tool turn" in p.refused[0].reason


@pytest.mark.parametrize("block, reason", [
    ("to: kitchen\nabout: x\ncontext without separator", "no --- line"),
    ("about: x\n---\nctx", "exactly one of to: or from:"),
    ("to: a\nfrom: b\nabout: x\n---\nctx", "exactly one of to: or from:"),
    ("to: Not A Slug!\nabout: x\n---\nctx", "invalid Mood slug"),
    ("to: kitchen\n---\nctx", "needs about:"),
    ("to: kitchen\nabout: " + "x" * 101 + "\n---\nctx", "about: is 101 characters"),
    ("to: kitchen\nabout: x\n---\n" + "y" * 8_001, "8,001 characters; the limit is 8,000"),
    ("to: kitchen\nabout: x\n---\n   \n", "no context"),
    ("to: kitchen\nabout: x\nwhen: now\n---\nctx", "unknown line 'when:'"),
    ("to: kitchen\nto: hall\nabout: x\n---\nctx", "to: is given twice"),
    ("to: kitchen\nabout: x\nfor: not a handle\n---\nctx", "for: invalid handle"),
])
def test_bad_handoff_blocks_are_refused(block, reason):
    p = blocks.parse(f"before\n```handoff\n{block}\n```\nafter", tools="full")
    assert p.handoff is None
    (r,) = p.refused
    assert r.block == "handoff" and reason in r.reason, r.reason
    assert p.text == "before\nafter"


def test_exactly_8000_characters_of_context_pass():
    p = blocks.parse("```handoff\nto: k\nabout: x\n---\n" + "y" * 8_000 + "\n```", tools="look")
    assert p.refused == () and len(p.handoff.context) == 8_000


def test_two_blocks_of_a_kind_refuse_both():
    one = "```handoff\nto: a\nabout: x\n---\nctx\n```"
    p = blocks.parse(f"{one}\nmiddle\n{one}\n```settings\nverbosity: brief\n```", tools="full")
    assert p.handoff is None
    assert [r.block for r in p.refused] == ["handoff"]
    assert "2 handoff blocks" in p.refused[0].reason
    assert p.settings is not None  # the other kind stands on its own
    assert p.text == "middle"


def test_an_unclosed_block_is_refused_and_not_posted():
    p = blocks.parse("hello\n```handoff\nto: a\nabout: x\n---\nsecret context", tools="look")
    assert p.text == "hello"
    assert "no closing" in p.refused[0].reason


def test_a_huge_reply_parses_quickly():
    reply = ("word " * 200_000) + "\n```settings\nverbosity: brief\n```\n" + ("more " * 200_000)
    p = blocks.parse(reply, tools="full")
    assert p.settings.changes == {"verbosity": "brief"}
    assert "```" not in p.text
