"""Defaults that surprise nobody: no footer links to a wiki that is not configured, a
finite limit on full-tool turns, and ``agent_env`` as a TOML list."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import pytest

from support.cli import Cli
from poller import config
from poller.turns import runner

NOW = "2026-04-01T10:00:00Z"


def lobby(c: Cli, command: str = "cat") -> None:
    c("mood", "add", "lobby")
    c("person", "add", "ada", "--trust", "full")
    c("agent", "add", "bot", "--command", command)
    c("tick", "--now", NOW)
    c("post", "lobby", "--as", "ada", "--at", "2026-04-01T10:00:01Z", "@bot are you there?")


def footer_links(text: str) -> list[str]:
    return [line for line in text.splitlines()
            if line.startswith(("To-do list for this Mood:", "How we talk here:"))]


# -- the footer's links ---------------------------------------------------------------------------

def test_without_a_wiki_the_footer_points_nowhere(cli):
    lobby(cli)
    text = cli("preview", "--mood", "lobby", "--agent", "bot", "--kind", "mention").out
    frames = cli("preview", "--frames").out
    for out in (text, frames):
        assert footer_links(out) == []
        assert "example.org" not in out and "Cryptograss" not in out
    assert "To answer, just write your reply" in text  # the rest of the footer stays
    resolved = json.loads(cli("config", "check", "--json").out)
    assert resolved["wake"]["etiquette_url"] == "" and resolved["wake"]["todo_pattern"] == ""


def test_with_a_wiki_the_links_point_beside_its_dials_page(tmp_path, sqlite_url):
    path = tmp_path / "config.toml"
    path.write_text('[wiki]\nsite = "wiki.test.invalid"\ntitle = "Team:Moods/Dials"\n')
    c = Cli(sqlite_url, str(path))
    page = "https://wiki.test.invalid/w/index.php?title="
    assert footer_links(c("preview", "--frames").out)[:2] == [
        f"To-do list for this Mood: {page}Team:Moods/«slug»/todo",
        f"How we talk here: {page}Team:Moods/Etiquette"]
    resolved = json.loads(c("config", "check", "--json").out)
    assert resolved["wake"]["todo_pattern"] == page + "Team:Moods/{slug}/todo"
    assert resolved["sources"]["wake.todo_pattern"] == "wiki.site"


def test_an_explicit_link_is_used_without_a_wiki(tmp_path, sqlite_url):
    path = tmp_path / "config.toml"
    path.write_text('[wake]\netiquette_url = "https://team.test/etiquette"\n')
    c = Cli(sqlite_url, str(path))
    c("init")
    lobby(c)
    text = c("preview", "--mood", "lobby", "--agent", "bot", "--kind", "mention").out
    assert footer_links(text) == ["How we talk here: https://team.test/etiquette"]


def test_no_links_by_default_and_links_derived_from_a_wiki():
    cfg = config.load(env={}, path=None)
    assert (cfg.wake.etiquette_url, cfg.wake.todo_pattern) == ("", "")
    links = config.derived_links(config.WikiConfig(site="wiki.test", scheme="http", path="/mw/"))
    assert links == {
        "etiquette_url": "http://wiki.test/mw/index.php?title=Cryptograss:Moods/Etiquette",
        "todo_pattern": "http://wiki.test/mw/index.php?title=Cryptograss:Moods/{slug}/todo"}


def test_explicit_wake_values_are_kept_when_a_wiki_is_set(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[wiki]\nsite = "wiki.test"\n[wake]\netiquette_url = ""\n'
                    'todo_pattern = "https://tasks.test/{slug}"\n')
    cfg = config.load(path, env={})
    assert cfg.wake.etiquette_url == ""  # written empty: the line is left out
    assert cfg.wake.todo_pattern == "https://tasks.test/{slug}"
    assert cfg.sources["wake.todo_pattern"] == "file"


# -- full-tool turns end ------------------------------------------------------------------------

def test_full_tool_turns_have_a_finite_default_timeout(tmp_path):
    agent = SimpleNamespace(timeout=None)
    assert config.PollerConfig().full_timeout == 3600.0
    assert runner.timeout_for(agent, "full", config.PollerConfig()) == 3600.0
    assert runner.timeout_for(agent, "look", config.PollerConfig()) == 900.0
    path = tmp_path / "c.toml"
    path.write_text("[poller]\nfull_timeout = 0\n")
    unlimited = config.load(path, env={}).poller
    assert unlimited.full_timeout == 0.0
    assert runner.timeout_for(agent, "full", unlimited) is None  # 0 still means no limit
    assert runner.timeout_for(SimpleNamespace(timeout=12.0), "full", unlimited) == 12.0


# -- agent_env as a list --------------------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [
    ('["ANTHROPIC_API_KEY"]', "ANTHROPIC_API_KEY"),
    ('["A_KEY", " B_KEY "]', "A_KEY,B_KEY"),
    ("[]", ""),
    ('"A_KEY, B_KEY"', "A_KEY, B_KEY"),
])
def test_agent_env_takes_a_list_or_a_comma_string(tmp_path, value, expected):
    path = tmp_path / "c.toml"
    path.write_text(f"[poller]\nagent_env = {value}\n")
    assert config.load(path, env={}).poller.agent_env == expected


def test_an_agent_sees_the_variables_a_list_names(tmp_path, sqlite_url, monkeypatch):
    monkeypatch.setenv("NAMED_IN_A_LIST", "visible")
    monkeypatch.setenv("NOT_NAMED", "hidden")
    path = tmp_path / "config.toml"
    path.write_text('[poller]\nagent_env = ["NAMED_IN_A_LIST"]\n')
    script = tmp_path / "envdump.py"
    script.write_text("import json, os, sys\nsys.stdin.read()\n"
                      "print(json.dumps({k: os.environ.get(k) for k in "
                      "('NAMED_IN_A_LIST', 'NOT_NAMED')}))\n")
    c = Cli(sqlite_url, str(path))
    c("init")
    lobby(c, f"{sys.executable} {script}")
    c("tick", "--now", "2026-04-01T10:00:02Z", "--wait")
    reply = json.loads(c("posts", "lobby", "--json").out)[-1]
    assert reply["sender"] == "bot"
    assert json.loads(reply["text"]) == {"NAMED_IN_A_LIST": "visible", "NOT_NAMED": None}
