"""A check-in room: a real SMTP server on loopback, a mood with an agent and a person with
an email address, on Berlin's clock; and an invitation's code read from the mail sent."""

from __future__ import annotations

import datetime as dt
import json
import re
from zoneinfo import ZoneInfo

import pytest

from support.agents import agent_command
from support.cli import Cli
from support.smtp import SmtpServer


UTC = dt.timezone.utc


BERLIN = ZoneInfo("Europe/Berlin")


def at(day: int, h: int, mi: int = 0, month: int = 10) -> str:
    t = dt.datetime(2026, month, day, h, mi, tzinfo=BERLIN).astimezone(UTC)
    return t.isoformat().replace("+00:00", "Z")


@pytest.fixture
def smtp():
    server = SmtpServer().start()
    yield server
    server.stop()


def room(c: Cli, tmp_path, reply):
    c("mood", "add", "lobby")
    c("person", "add", "ada", "--trust", "full")
    c("agent", "add", "bot", "--command", agent_command(tmp_path, "file", str(reply)))
    c("set", "idle_after", "0")
    c("set", "cooldown", "0")
    c("tick", "--now", at(5, 10))
    return c


def setup(c: Cli, *extra: str) -> dict:
    return json.loads(c("checkin", "setup", "--person", "ada", "--agent", "bot", "--mood", "lobby",
                        "--daily", "21:00", "--tz", "Europe/Berlin", *extra, "--json",
                        "--now", at(5, 10)).out)


def invitation_code(message) -> str:
    """The single-use code in a consent invitation e-mail."""
    return re.search(r"^    (\S+)\s*$", message.get_content(), re.M).group(1)
