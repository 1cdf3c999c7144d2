"""Parity with the production poller (issue 15): what the wake and the turn carry.

- item 13: an arrival wake says when the person last spoke in this Mood;
- item 8: per-Mood ``rules``, ``model`` and ``effort``, and who may set them;
- item 10: the letter on an agent's first turn in a Mood.

Real ``tick`` cycles and real agent processes (a command agent, the stand-in
``claude`` of ``test_wakers_fakes``), on the tests' timeline.
"""

from __future__ import annotations

import pytest

import test_poller
from agents import wakes_seen
from test_turns import post, tick, wakes
from timeline import at

DAY = 24 * 3600
cli, world = test_poller.cli, test_poller.world  # its fixtures, used here too


@pytest.fixture
def lobby(world):
    """test_poller's world (ada full, bob look, the command agent bot), chatter waking nobody."""
    world("set", "considers_per_hour", "0")
    return world


# -- item 13: when the arriving person last spoke here ------------------------------------


def test_an_arrival_says_when_the_person_last_spoke_here_or_that_it_is_their_first_time(
        lobby, tmp_path):
    post(lobby, 1, "ada", "see you all next week")
    lobby("signin", "ada", "--mood", "lobby", "--at", at(3 * DAY))
    tick(lobby, 3 * DAY + 1)
    lobby("signin", "bob", "--mood", "lobby", "--at", at(3 * DAY + 100))
    tick(lobby, 3 * DAY + 101)
    lobby.now = 3 * DAY + 200  # `wakes` lists recent wakes: read them on the same day
    assert [w["kind"] for w in wakes(lobby)] == ["arrival", "arrival"]
    ada, bob = (w["text"] for w in wakes_seen(tmp_path))
    assert "@ada last spoke here about 3 days ago." in ada
    assert "first time here" not in ada
    assert "@bob has never spoken here before: first time here." in bob
    assert "last spoke here" not in bob
