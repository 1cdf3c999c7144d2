"""Defaults that surprise nobody: no footer links to a wiki that is not configured, a
finite limit on full-tool turns, and ``agent_env`` as a TOML list.

Here, the pure part (no database, no process); the rest sits under the same name
in the other layers.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from support.cli import Cli
from poller import config
from poller.turns import runner
from support.defaults import footer_links

# -- the footer's links ---------------------------------------------------------------------------

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


