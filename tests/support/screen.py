"""A screen on loopback (``Screen``, a chat-completions server that judges posts, and its
fixture ``endpoint``); a tick read as JSON and the consider decision in its report."""

from __future__ import annotations

import json
import time

import pytest

from support.chatserver import ChatServer
from support.timeline import at


class Screen(ChatServer):
    """A screen on loopback: "no" unless the posts ask a question; or it fails (*mode*)."""

    def __init__(self):
        self.mode = "judge"
        super().__init__(self.judge)

    def judge(self, body: dict) -> tuple[int, str]:
        if self.mode == "fail":
            return 500, ""
        if self.mode == "hang":
            time.sleep(3)
        if self.mode == "babble":
            return 200, "Well, it depends on many things."
        talk = body["messages"][1]["content"]
        return 200, ("yes: someone asks a question" if "?" in talk
                     else "no: people are chatting among themselves")


@pytest.fixture
def endpoint():
    ep = Screen()
    yield ep
    ep.close()


def tick(c, seconds) -> dict:
    return json.loads(c("tick", "--now", at(seconds), "--wait", "--json").out)


def consider(report) -> str:
    return next(d["code"] for d in report["decisions"] if d["kind"] == "consider")
