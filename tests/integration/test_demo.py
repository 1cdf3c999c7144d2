"""``mood-poller demo`` and the bundled example agent."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from support.cli import Cli
from support.machine import REPO
from support.waiting import HANG_GUARD_S

AGENT = REPO / "memory-lane" / "example_agent.py"


def run_agent(wake: str, kind: str, agent: str = "helper") -> str:
    env = {"MOOD_AGENT": agent, "MOOD_WAKE_KIND": kind, "MOOD_SLUG": "lobby",
           "MOOD_WAKE_ID": "1", "MOOD_TOOLS": "look", "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, str(AGENT)], input=wake, capture_output=True, text=True,
                       env=env, timeout=HANG_GUARD_S, check=True)
    return r.stdout.strip()


def test_demo_prints_a_wake_of_each_kind_and_the_replies(tmp_path):
    out = Cli()("demo", "--dir", str(tmp_path / "demo")).out
    assert f"demo database: {tmp_path / 'demo' / 'moods.db'}" in out
    kinds = re.findall(r"WAKE \d+: \w+ in \w+, (\w+) \(tools (\w+)\)", out)
    assert {k for k, _ in kinds} == {"mention", "consider", "quiet", "arrival"}
    assert ("mention", "full") in kinds and ("consider", "look") in kinds
    assert '<mood-wake mood="lobby" reason="mention">' in out
    assert "[ada, 09:01] @helper what time is the build review tomorrow?" in out
    assert "Also asked: scout" in out  # one post asked both agents
    assert "more lines" in out  # wakes are abridged
    replies = re.findall(r"REPLY (\w+) <(\w+)> (.*)", out)
    assert len(replies) >= 4
    assert any(m == "lobby" and a == "helper" and "@ada asked" in t for m, a, t in replies)
    assert "SILENT helper in lobby" in out  # the quiet look found nothing hanging
    assert "Where to look next:" in out and "wakes" in out and "why --mood" in out

    # What it printed is what the database holds.
    db = Cli(f"sqlite:///{tmp_path / 'demo' / 'moods.db'}")
    wakes = json.loads(db("wakes", "--json").out)
    assert sorted({w["kind"] for w in wakes}) == ["arrival", "consider", "mention", "quiet"]
    assert all(w["status"] in ("replied", "silent") for w in wakes)
    assert len(wakes) == len(kinds)
    assert "skipped:listening-mentions" in db("why", "--mood", "garden", "--agent", "helper").out


def test_example_agent_quotes_who_asked_what():
    wake = ('<mood-wake mood="lobby" reason="mention">\nYou were called.\n\n'
            "The post that called you:\n[ada, 09:01] @helper is the @scout report done?\n\n"
            "Nothing else was said here since you last spoke.\n</mood-wake>\n")
    reply = run_agent(wake, "mention")
    assert reply.startswith("@ada asked \u201chelper is the scout report done?\u201d")
    assert "@scout" not in reply and "@helper" not in reply  # quoting never re-mentions an agent


def test_example_agent_stays_silent_when_nothing_is_left_hanging():
    wake = ("The Mood lately (oldest first, times in UTC):\n[ada, 09:01] is it done?\n"
            "[helper (agent), 09:02] yes, done.\n\nIs anything left hanging?\n")
    assert run_agent(wake, "quiet").startswith("<silent>")
    wake = "The Mood lately (oldest first, times in UTC):\n[ada, 09:01] is it done?\n\n"
    assert "ada asked" in run_agent(wake, "quiet")


def test_example_agent_greets_an_arrival_only_with_something_for_them():
    wake = ('Dee (@dee, trust: look) just signed in to the Mood "The lobby".\n\n'
            "The Mood lately (oldest first, times in UTC):\n[ada, 09:01] the review moved to 3pm\n\n")
    reply = run_agent(wake, "arrival")
    assert reply.startswith("@dee") and "review moved to 3pm" in reply
    assert run_agent('Dee (@dee) just signed in to the Mood "The lobby".\n', "arrival") \
        .startswith("<silent>")


def test_a_demo_without_dir_leaves_nothing_behind(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # where its temporary directory goes
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    out = Cli()("demo").out
    assert "removed when the demo ends" in out and "Where to look next:" not in out
    assert re.findall(r"REPLY (\w+) <(\w+)> (.*)", out)  # it played
    assert not list(tmp_path.glob("mood-poller-demo-*"))
