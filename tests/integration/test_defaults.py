"""Defaults that surprise nobody: no footer links to a wiki that is not configured, a
finite limit on full-tool turns, and ``agent_env`` as a TOML list.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import json
import sys


from support.cli import Cli
from support.defaults import footer_links

NOW = "2026-04-01T10:00:00Z"


def lobby(c: Cli, command: str = "cat") -> None:
    c("mood", "add", "lobby")
    c("person", "add", "ada", "--trust", "full")
    c("agent", "add", "bot", "--command", command)
    c("tick", "--now", NOW)
    c("post", "lobby", "--as", "ada", "--at", "2026-04-01T10:00:01Z", "@bot are you there?")


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


def test_an_explicit_link_is_used_without_a_wiki(tmp_path, sqlite_url):
    path = tmp_path / "config.toml"
    path.write_text('[wake]\netiquette_url = "https://team.test/etiquette"\n')
    c = Cli(sqlite_url, str(path))
    c("init")
    lobby(c)
    text = c("preview", "--mood", "lobby", "--agent", "bot", "--kind", "mention").out
    assert footer_links(text) == ["How we talk here: https://team.test/etiquette"]


# -- agent_env as a list --------------------------------------------------------------------------

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
