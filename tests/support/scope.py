"""Two moods split between scoped pollers."""

from __future__ import annotations

import pytest

from support.agents import agent_command
from support.timeline import TimelineCli, at


@pytest.fixture
def split(any_cli, tmp_path):
    """The lobby and the attic, ada, and an agent that replies; one cycle run."""
    c = TimelineCli(any_cli.db_url)
    c("mood", "add", "lobby")
    c("mood", "add", "attic")
    c("person", "add", "ada", "--trust", "full")
    c("agent", "add", "helper", "--command", agent_command(tmp_path, "reply"))
    c("tick", "--now", at(0))
    return c
