"""Agents cannot reach the poller's secrets, and no output shows a credential.

The attacks are real: a real ``tick`` starts a real agent, a shell script
that tries every route to a secret it can think of (its own environment,
``/proc/<pid>/environ`` and the open files of each ancestor, the files it
inherited, the database file) and posts what it found as its reply.  Root
can read any process's environment, so the agent that runs as the poller's
own user runs as a throwaway non-root user, poller and all; the ``--run-as``
agent runs as the throwaway user under a root poller.

Here, the pure part (no database, no process); the rest sits under the same name
in the other layers.
"""

from __future__ import annotations

import json
import os

import pytest

from support.cli import Cli
from poller import secure
from poller.turns import wakers


# -- what agents see of the environment ---------------------------------------------------


def test_the_allowlist_names_every_standard_locale_and_xdg_base_directory():
    turn = wakers.TurnRequest(1, "bot", "lobby", "mention", "look", "hi")
    env = {"LC_MEASUREMENT": "C", "LC_PAPER": "C", "LC_SECRET_TOKEN": "x", "XDG_STATE_HOME": "/s",
           "XDG_CACHE_HOME": "/c", "XDG_SECRET": "x", "SHELL": "/bin/sh", "TERM": "dumb"}
    old = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)
        got = wakers.turn_env(turn)
        other = wakers.turn_env(turn, wakers.RunAs("agent", 1234, 1234, "/home/agent"))
    finally:
        os.environ.clear()
        os.environ.update(old)
    assert set(got) == {"LC_MEASUREMENT", "LC_PAPER", "XDG_STATE_HOME", "XDG_CACHE_HOME",
                        "MOOD_WAKE_ID", "MOOD_AGENT", "MOOD_SLUG", "MOOD_WAKE_KIND", "MOOD_TOOLS"}
    # Run as another user: its own HOME, USER and LOGNAME, none of the poller's own directories.
    assert other["HOME"] == "/home/agent" and other["USER"] == other["LOGNAME"] == "agent"
    assert "XDG_STATE_HOME" not in other and "XDG_CACHE_HOME" not in other


# -- credentials in command output ----------------------------------------------------


@pytest.mark.parametrize("url, shown", [
    ("postgresql+psycopg://mood:sekrit-pw@db.example.org/moods",
     "postgresql+psycopg://mood:***@db.example.org/moods"),
    ("postgresql+psycopg://mood@db/moods?password=sekrit-pw&sslmode=require",
     "postgresql+psycopg://mood@db/moods?password=***&sslmode=require"),
    ("postgresql://mood@db/moods?sslPassWord=sekrit-pw&AUTH_token=sekrit-t&application_name=x",
     "postgresql://mood@db/moods?sslPassWord=***&AUTH_token=***&application_name=x"),
    ("postgresql://mood:a/b?c@sekrit@db/moods", "postgresql://mood:***@db/moods"),
    ("https://bot:sekrit-pw@agent.example/wake?key=sekrit-k#access_token=sekrit-t",
     "https://***@agent.example/wake?key=***#access_token=***"),
    ("https://ghp_sekrit@agent.example/wake", "https://***@agent.example/wake"),
    ("https://agent.example/users/@bob?page=2", "https://agent.example/users/@bob?page=2"),
    ("sqlite:////var/lib/mood-poller/moods.db", "sqlite:////var/lib/mood-poller/moods.db"),
])
def test_mask_url(url, shown):
    assert secure.mask_url(url) == shown


def test_mask_text():
    text = ("connect failed: host=db password=sekrit-pw port=5432; Authorization: Bearer sekrit-t\n"
            "see postgresql://u:sekrit-pw@h/d and --api-key=sekrit-k")
    masked = secure.mask_text(text)
    assert "sekrit" not in masked
    assert "host=db password=*** port=5432" in masked and "postgresql://u:***@h/d" in masked


def test_config_check_masks_every_url(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[summarizer]\nkind = "llm"\nmodel = "m"\n'
                      'url = "http://u:sekrit-s@127.0.0.1:9/v1?api_key=sekrit-k"\n')
    cli = Cli("postgresql+psycopg://mood:sekrit-pw@127.0.0.1:9/moods?sslpassword=sekrit-q",
              str(config))
    out = cli("config", "check").out
    resolved = json.loads(cli("config", "check", "--json").out)
    assert "sekrit" not in out + json.dumps(resolved)
    assert resolved["database"]["url"] == "postgresql+psycopg://mood:***@127.0.0.1:9/moods?sslpassword=***"
    assert resolved["summarizer"]["url"] == "http://***@127.0.0.1:9/v1?api_key=***"
