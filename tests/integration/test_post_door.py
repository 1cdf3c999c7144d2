"""One door for posts: whichever way a post comes (the CLI, its JSON lines, the API,
a chat bridge), its text is judged once, by the store's ingest verb, and a refusal
reads the same and writes nothing."""

from __future__ import annotations

import datetime as dt
import sys

import pytest
import sqlalchemy as sa

from support import webserver
from poller import errors, text
from poller.models import BridgeEvent, Participant, Post
from poller.store import bridges
from poller.store.bridges import Incoming

ROOM = "!room:hs.example"
TOO_LONG = "x" * (text.MAX_POST_CHARS + 1)
REASON = (f"post too long: {text.MAX_POST_CHARS + 1:,} characters "
          f"(the limit is {text.MAX_POST_CHARS:,})")


@pytest.fixture
def door(cli):
    """A Mood linked to a chat room, a person for the CLI, the API served in process."""
    cli("init", "--answer-from-now", "--now", "2031-05-06T08:00:00Z")
    cli("mood", "add", "lobby", "--matrix-room", ROOM)
    cli("person", "add", "bea")
    served = webserver.start(cli.db_url)
    served.cli = cli
    yield served
    served.stop()


@pytest.fixture
def judges(monkeypatch):
    """Who judged which text: the module and function that called the check."""
    seen: list[tuple[str, str]] = []
    real = text.check_post_text

    def spy(body: str) -> str:
        caller = sys._getframe(1)
        seen.append((f"{caller.f_globals['__name__']}.{caller.f_code.co_name}", body))
        return real(body)

    monkeypatch.setattr(text, "check_post_text", spy)
    return seen


def chat(eid: str, body: str) -> Incoming:
    return Incoming(eid, ROOM, "@cy:hs.example", "cy", body, mentions=())


def written(store) -> tuple[int, int, int]:
    """Posts, bridge events and participants in the store."""
    with store.reading() as s:
        return tuple(s.scalar(sa.select(sa.func.count()).select_from(t))
                     for t in (Post, BridgeEvent, Participant))


def test_a_post_too_long_is_refused_alike_by_one_check_whichever_way_it_comes(door, judges):
    before = written(door.store)
    cli_err = door.cli.fails("post", "lobby", "--as", "bea", TOO_LONG).err
    jsonl_err = door.cli.fails("post", "lobby", "--as", "bea", "--stdin-jsonl",
                               input=f'{{"text": "{TOO_LONG}"}}\n').err
    api = door.client(door.person("ada")).post("/api/v1/moods/lobby/posts",
                                               json={"text": TOO_LONG})
    with pytest.raises(errors.PostTooLong) as bridged:
        bridges.ingest(door.store, "matrix", chat("$1", TOO_LONG), webserver.T0)

    assert REASON in cli_err and len(cli_err.strip().splitlines()) == 1
    assert f"line 1: {REASON}" in jsonl_err
    assert api.status_code == 413
    assert api.json() == {"error": "post_too_long", "detail": REASON}
    assert str(bridged.value) == REASON
    assert [who for who, body in judges if body == TOO_LONG] == ["poller.store.core._judged"] * 4
    assert written(door.store) == (before[0], before[1], before[2] + 1)  # ada, the API's person


def test_a_post_that_gets_in_is_judged_exactly_once_on_each_way(door, judges):
    ada = door.client(door.person("ada"))
    door.cli("post", "lobby", "--as", "bea", "by the command line")
    door.cli("post", "lobby", "--as", "bea", "--stdin-jsonl",
             input='{"text": "by a line"}\n{"text": "and another"}\n')
    assert ada.post("/api/v1/moods/lobby/posts", json={"text": "by the API"}).status_code == 201
    assert bridges.ingest(door.store, "matrix", chat("$2", "by the chat"),
                          webserver.T0 + dt.timedelta(seconds=1)) is not None

    texts = ["by the command line", "by a line", "and another", "by the API", "by the chat"]
    assert [p.text for p in door.store.posts("lobby")] == texts
    assert judges == [("poller.store.core._judged", t) for t in texts]
