"""`preview` shows what a wake would say, from the same templates, changing nothing."""

from __future__ import annotations

import json

from support.agents import agent_command


def test_preview_each_kind_changes_nothing(cli, tmp_path):
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "bot", "--command", agent_command(tmp_path, "reply"))
    cli("post", "lobby", "--as", "ada", "what do we ship on Friday?")
    cli("signin", "ada", "--mood", "lobby")
    before = cli("posts", "lobby", "--json").out
    for kind in ("mention", "consider", "quiet", "arrival"):
        out = cli("preview", "--mood", "lobby", "--agent", "bot", "--kind", kind).out
        assert out.startswith(f'<mood-wake mood="lobby" reason="{kind}">')
        assert "what do we ship on Friday?" in out
        if kind != "mention":  # ada has full trust: her mention gets full tools
            assert "This turn can look but not touch" in out
    full = cli("preview", "--mood", "lobby", "--agent", "bot", "--kind", "quiet", "--full").out
    assert "This turn has your full tools" in full and "```settings" in full
    assert cli("posts", "lobby", "--json").out == before
    assert json.loads(cli("wakes", "--json").out) == []


def test_preview_frames_shows_every_kind_with_placeholders(cli):
    out = cli("preview", "--frames").out
    for kind in ("mention", "consider", "quiet", "arrival"):
        assert f'reason="{kind}"' in out
    assert "«" in out


def test_preview_frames_shows_the_scheduled_frames(cli):
    out = cli("preview", "--frames").out
    for kind in ("alarm", "checkin-missed", "checkin-contact"):
        assert f'==== {kind} wake, look-only ====' in out and f'reason="{kind}"' in out
    contact = out.split('reason="checkin-contact"')[1]
    assert "«the contact's e-mail address»" in contact and "```contact" in contact
    missed = out.split('reason="checkin-missed"')[1].split("</mood-wake>")[0]
    assert "@«person» has a check-in agreement with you here" in missed
    assert "```checkin" in missed and "«the note left with the alarm»" not in missed
    alarm = out.split('reason="alarm"')[1].split("</mood-wake>")[0]
    assert "  «the note left with the alarm»" in alarm


def test_preview_errors(cli):
    cli("mood", "add", "empty")
    cli("agent", "add", "bot", "--command", "cat")
    assert "needs --agent" in cli.fails("preview", "--mood", "empty", "--kind", "quiet").err
    assert "nothing to preview" in cli.fails("preview", "--mood", "empty", "--agent", "bot",
                                             "--kind", "mention").err
    assert "no Mood" in cli.fails("preview", "--mood", "x", "--agent", "bot", "--kind", "quiet").err
