"""The tool registry's pure parts: argument checking, the blocks of acting tools that
need no store, how they join a reply, and errors that are lines, never exceptions."""

from __future__ import annotations

import datetime as dt

import pytest

from poller import tools
from poller.turns import blocks

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)

SPEC = tools.ToolSpec("probe", "A probe.", tools.schema({
    "n": {"type": "integer", "minimum": 1, "maximum": 10},
    "word": {"type": ["string", "null"]},
    "mode": {"type": "string", "enum": ["a", "b"]}}, ("n",)), acting=False)


@pytest.mark.parametrize("args,said", [
    ({"n": 3}, ""),
    ({"n": 3, "word": None, "mode": "b"}, ""),
    (None, "probe needs the argument 'n'"),
    ({}, "probe needs the argument 'n'"),
    ({"n": 3, "extra": 1}, "unknown argument 'extra' for probe (it takes: n, word, mode)"),
    ({"n": 3.5}, "n must be integer, not number"),
    ({"n": False}, "n must be integer, not boolean"),
    ({"n": 0}, "n must be at least 1, got 0"),
    ({"n": 11}, "n must be at most 10, got 11"),
    ({"n": 1, "word": 5}, "word must be string or null, not integer"),
    ({"n": 1, "mode": "c"}, "mode must be one of a, b"),
    ("n=1", "the arguments of probe must be an object, not str"),
])
def test_arguments_are_checked_against_the_schema(args, said):
    assert tools.check_args(SPEC, args) == said


def box(tier: str = "full", **kw) -> tools.Toolbox:
    # No store: the tools used here read none, and one that does fails as a line.
    return tools.Toolbox(None, wake_id=1, agent_id=2, agent="bot", mood_id=3, mood="lobby",
                         tools=tier, clock=lambda: NOW, **kw)


def test_every_tool_declares_an_object_schema_and_its_tier():
    names = {t.spec.name: t.spec.acting for t in tools.registered()}
    assert names == {"read_history": False, "read_post": False, "who_is_here": False,
                     "list_moods": False, "search": False, "handoff": True, "change_settings": True,
                     "set_alarm": True, "go_away": True, "checkin": True}
    for t in tools.registered():
        p = t.spec.parameters
        assert p["type"] == "object" and p["additionalProperties"] is False
        assert set(p["required"]) <= set(p["properties"])
        assert 0 < len(t.spec.description) < 300


def test_an_alarm_is_the_block_the_parser_reads_and_joins_the_reply():
    b = box()
    assert b.call("set_alarm", {"at": "2026-12-24 18:00", "tz": "Europe/Berlin",
                                "note": "the presents"}) == (
        "ok: an alarm at 2026-12-24 18:00 Europe/Berlin, first due 2026-12-24 18:00 "
        "Europe/Berlin (Thu, UTC+01:00); it is applied when your reply is posted (a refusal "
        "then is said there).")
    assert b.blocks == [
        "```alarm\nat: 2026-12-24 18:00\ntz: Europe/Berlin\nnote: the presents\n```"]
    joined = b.reply_with_blocks("See you then.")
    assert joined == "See you then.\n\n" + b.blocks[0]
    parsed = blocks.parse(joined, tools="full")
    assert parsed.text == "See you then." and parsed.alarm.note == "the presents"
    assert b.reply_with_blocks("") == b.blocks[0]


def test_a_reply_that_leaves_a_fence_open_does_not_swallow_the_blocks():
    b = box()
    b.call("change_settings", {"settings": {"verbosity": "brief"}})
    joined = b.reply_with_blocks("Try:\n```sh\nls")
    parsed = blocks.parse(joined, tools="full")
    assert parsed.settings.changes == {"verbosity": "brief"}
    assert parsed.text == "Try:\n```sh\nls\n```"


def test_a_second_block_of_a_kind_is_refused_and_the_first_kept():
    b = box()
    assert b.call("change_settings", {"settings": {"verbosity": "brief"}}).startswith("ok:")
    assert b.call("change_settings", {"settings": {"discretion": "reserved"}}) == (
        "error: a settings block was already accepted this turn, and a reply carries one "
        "settings block")
    assert len(b.blocks) == 1 and "verbosity: brief" in b.blocks[0]


def test_a_value_cannot_smuggle_a_line_into_the_block():
    b = box()
    out = b.call("change_settings", {"settings": {"verbosity": "brief\nlistening: off"}})
    assert out == "error: verbosity must be one line of text (no line breaks or control characters)"
    out = b.call("change_settings", {"settings": {"note": "x"}})
    assert out.startswith("error: unknown setting 'note'")
    assert b.blocks == []


def test_look_only_turns_refuse_acting_tools_and_too_many_calls_are_refused():
    b = box("look", max_calls=2)
    out = b.call("change_settings", {"settings": {"verbosity": "brief"}})
    assert out.startswith("error: change_settings is an acting tool and this turn is look-only")
    assert b.call("set_alarm", {"daily": "09:00", "tz": "UTC"}).startswith("error:")
    assert b.call("set_alarm", {"daily": "09:00", "tz": "UTC"}) == (
        "error: too many tool calls: a turn may make 2; write your reply now")
    assert b.calls == 3 and b.blocks == []


def test_a_failing_read_is_a_line_for_the_model():
    b = box()
    assert b.call("who_is_here", {}) == \
        "error: who_is_here failed: the store could not be read just now"
    # what cannot be offered (the store cannot say) is left out, not raised
    assert "go_away" not in [s.name for s in b.specs()]
