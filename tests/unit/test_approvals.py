"""Approvals' pure parts: reading an answer from a post, the notice's safe rendering of a
tool's input, what the permission prompt answers, the approve_tools setting."""

from __future__ import annotations

import datetime as dt

import pytest

from poller import errors, settings
from poller.store.capabilities import ApprovalInfo
from poller.toolserver.approvals import outcome, parse_answer, shown

T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


@pytest.mark.parametrize("body, agent, want", [
    ("@claude approve", "claude", (True, None, "")),
    ("  @Claude: approve #12", "claude", (True, 12, "")),
    ("@claude deny not on the build box", "claude", (False, None, "not on the build box")),
    ("@claude, DENY 7 too risky\nreally", "claude", (False, 7, "too risky really")),
    ("@claude approved it yesterday", "claude", None),  # not the word approve
    ("@sage approve", "claude", None),  # someone else's
    ("please @claude approve", "claude", None),  # an answer starts the post
    ("@claude what do you approve of?", "claude", None),
])
def test_an_answer_is_read_only_from_a_post_that_starts_with_it(body, agent, want):
    got = parse_answer(body, agent)
    assert (None if got is None else (got.approve, got.approval_id, got.reason)) == want


def test_the_notice_shows_the_command_masked_and_short(monkeypatch):
    monkeypatch.setenv("DEPLOY_TOKEN", "tok-4242-abcdef")
    line = shown("Bash", {"command": "curl -H 'X: tok-4242-abcdef' https://u:pw@example.org/?key=zz"})
    assert "tok-4242-abcdef" not in line and "pw@" not in line and "zz" not in line
    assert line.startswith("curl")
    long = shown("Write", {"file_path": "/srv/" + "x" * 1000, "content": "secret body"})
    assert len(long) <= 300 and "secret body" not in long  # the path, not the content
    other = shown("mcp__thing__do", {"b": 1, "a": "`tick`"})
    assert other == '{"a": "\'tick\'", "b": 1}'  # no backtick to break out of the notice's code


def _decided(status: str, reason: str = "") -> ApprovalInfo:
    return ApprovalInfo(1, 9, "claude", "lobby", "Bash", "ls", status, T0, T0, "ada", "post",
                        reason, 3)


def test_the_permission_prompt_answers_allow_with_the_input_or_deny_with_why():
    assert outcome(_decided("approved"), {"command": "ls"}) == {
        "behavior": "allow", "updatedInput": {"command": "ls"}}
    denied = outcome(_decided("denied", "not now"), {"command": "ls"})
    assert denied["behavior"] == "deny" and "denied by ada: not now" in denied["message"]
    assert "in time" in outcome(_decided("timed_out"), {})["message"]
    assert "turn ended" in outcome(_decided("ended"), {})["message"]


def test_approve_tools_is_a_list_of_tool_names():
    parse = settings.KEYS["approve_tools"].parse
    assert parse(" set_alarm,handoff  set_alarm ") == "set_alarm,handoff"
    assert parse("") == ""
    with pytest.raises(errors.InvalidSetting, match="tool names"):
        parse("rm -rf")
