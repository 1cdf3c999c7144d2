"""Stop one agent in one Mood: ``mood-poller stop`` and a trusted person's "@agent stop".

Here, the pure part (no database, no process); the rest sits under the same name
in the other layers.
"""

from __future__ import annotations

import datetime as dt

import pytest

from poller.control import commands
from poller import law, settings

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)
DEFAULTS = {k: v.default for k, v in settings.KEYS.items()}


@pytest.mark.parametrize("kind,code", [
    ("mention", "held:stopped"), ("consider", "skipped:stopped"),
    ("quiet", "skipped:stopped"), ("arrival", "skipped:stopped"),
])
def test_a_stopped_agent_holds_mentions_and_takes_no_other_turn(kind, code):
    f = law.Facts(kind=kind, now=NOW, settings=dict(DEFAULTS), stopped=True)
    assert law.decide(f).code == code
    assert law.gate(kind, NOW, dict(DEFAULTS), stopped=True).code == code


@pytest.mark.parametrize("body,parsed", [
    ("@helper stop", ("helper", "stop")),
    ("  @Helper, STOP! ", ("helper", "stop")),
    ("@helper: resume.", ("helper", "resume")),
    ("@helper stop the build please", None),   # a request to the agent, not a command
    ("please @helper stop", None),
    ("@helper /stop", None),
])
def test_only_a_whole_post_is_a_command(body, parsed):
    assert commands.parse(body) == parsed


