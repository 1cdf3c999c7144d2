"""A small world on a fresh SQLite store: one mood, a person of each trust level, an
agent that replies, the first cycle run (fixtures ``cli`` and ``world``)."""

from __future__ import annotations

import pytest

from support.agents import agent_command
from support.timeline import TimelineCli, at


@pytest.fixture
def cli(sqlite_url):
    """A CLI on a fresh SQLite database whose commands run at T0 unless told a time."""
    c = TimelineCli(sqlite_url)
    c("init")
    return c


@pytest.fixture
def world(cli, tmp_path):
    """A Mood, people of each trust level, an agent that replies; the first cycle run."""
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("person", "add", "bob", "--trust", "look")
    cli("person", "add", "eve", "--trust", "none")
    cli("agent", "add", "bot", "--command", agent_command(tmp_path, "reply"))
    cli("set", "cooldown", "0")
    cli("tick", "--now", at(0))  # first run: starts from now
    return cli
