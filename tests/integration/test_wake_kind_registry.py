"""A kind of wake declared outside the core (tests/plugins/tea_organ) is due, decided,
composed, recorded, and shown by `why` and `preview --frames`: the registry is the
only place the core learns of it."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from support.agents import agent_command, wakes_seen
from plugins import tea_organ
from poller import kinds, law, settings
from poller.store import Store, db
from support.timeline import T0, TimelineCli, at


@pytest.fixture(autouse=True)
def tea():
    """The tea organ, loaded for these tests only: no other test sees its kind."""
    tea_organ.declare()
    yield
    kinds.withdraw("tea")


@pytest.fixture
def room(any_cli, tmp_path):
    c = TimelineCli(any_cli.db_url)
    c("mood", "add", "lobby", "--title", "The lobby")
    c("person", "add", "ada", "--trust", "full")
    c("agent", "add", "bot", "--command", agent_command(tmp_path, "reply"))
    c("tick", "--now", at(0))  # first run: the poller listens from now on
    return c


def ids(c) -> tuple[int, int]:
    agent = [a for a in json.loads(c("agent", "list", "--json").out) if a["handle"] == "bot"][0]
    mood = [m for m in json.loads(c("mood", "list", "--json").out) if m["slug"] == "lobby"][0]
    return agent["id"], mood["id"]


def order(c, seconds: float, brew: int = 1) -> None:
    engine = db.make_engine(c.db_url)
    try:
        tea_organ.order(Store(engine), *ids(c), T0 + dt.timedelta(seconds=seconds), brew)
    finally:
        engine.dispose()


def wakes(c) -> list[dict]:
    return sorted(json.loads(c("wakes", "--json").out), key=lambda w: w["id"])


def why(c) -> dict:
    return json.loads(c("why", "--mood", "lobby", "--agent", "bot", "--json").out)


def test_a_kind_declared_outside_the_core_wakes_with_its_own_template(room, tmp_path):
    order(room, 60, brew=2)
    room("tick", "--now", at(30), "--wait")
    assert wakes(room) == []  # not due yet
    room("tick", "--now", at(61), "--wait")
    (w,) = wakes(room)
    assert (w["kind"], w["tools"], w["status"]) == ("tea", "look", "replied")
    text = wakes_seen(tmp_path)[0]["text"]
    assert '<mood-wake mood="lobby" reason="tea">' in text
    assert 'The kettle has boiled in the Mood "The lobby": a pot of rooibos is ready.' in text
    assert why(room)["decisions"]["tea"]["code"] == "woke"
    room("tick", "--now", at(200), "--wait")
    assert len(wakes(room)) == 1  # the wake took the mark: one wake, not one a cycle


def test_the_law_weighs_it_by_its_traits(room):
    room("stop", "--agent", "bot", "--mood", "lobby", "--by", "ada")
    order(room, 10)
    room("tick", "--now", at(11), "--wait")
    assert wakes(room) == []
    assert why(room)["decisions"]["tea"]["code"] == "skipped:stopped"
    assert kinds.spec("tea").paced  # declared paced: a cooldown defers it
    until = T0 + dt.timedelta(minutes=5)
    defaults = {k: v.default for k, v in settings.KEYS.items()}
    assert law.decide(law.Facts(kind="tea", now=T0, settings=defaults,
                                cooldown_until=until)).code == \
        "deferred:cooldown-until-2026-11-30T12:05:00Z"


def test_preview_frames_show_it(room):
    frames = room("preview", "--frames").out
    assert "==== tea wake, look-only ====" in frames
    assert "The kettle has boiled in the Mood \"«Mood title»\": «what is brewing» is ready." in frames
