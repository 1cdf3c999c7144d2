"""Wakers against real processes and a real loopback HTTP server (no database).

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations


import pytest

from poller.turns import wakers
from support.fakes import claude_calls, set_claude, write_claude
from support.wakers import run, turn


# -- Claude Code --------------------------------------------------------------------


@pytest.fixture
def claude(tmp_path):
    bindir = tmp_path / "bin"
    return bindir, write_claude(bindir)


def test_a_full_tool_turn_gets_the_agents_tools_and_the_result(claude, tmp_path):
    bindir, exe = claude
    w = wakers.ClaudeWaker({"bin": str(exe), "model": "opus", "session_dir": str(tmp_path / "s")})
    out = run(w, turn("full"))
    assert out.status == "replied" and out.reply == "Hello from the stand-in claude."
    assert out.cost == pytest.approx(0.0123)
    assert out.session and len(out.session) == 36
    (call,) = claude_calls(bindir)
    argv = call["argv"]
    assert argv[:4] == ["-p", "--output-format", "stream-json", "--verbose"]
    assert argv[argv.index("--model") + 1] == "opus"
    assert argv[argv.index("--permission-mode") + 1] == "acceptEdits"
    assert "--allowedTools" not in argv and "--disallowedTools" not in argv
    assert "--resume" not in argv
    assert call["stdin"] == "<mood-wake>hi</mood-wake>"  # the wake is the prompt, on stdin
    assert call["cwd"] == str(tmp_path / "s")
    assert call["env"]["MOOD_TOOLS"] == "full" and call["env"]["MOOD_WAKE_ID"] == "7"


def test_a_look_only_turn_is_read_only(claude):
    bindir, exe = claude
    out = run(wakers.ClaudeWaker({"bin": str(exe), "permission_mode": "bypassPermissions"}),
              turn("look"))
    assert out.status == "replied"
    argv = claude_calls(bindir)[0]["argv"]
    assert argv[argv.index("--permission-mode") + 1] == "dontAsk"  # never the agent's own mode
    allowed = argv[argv.index("--allowedTools") + 1].split(",")
    assert set(allowed) == {"Read", "Grep", "Glob", "LS", "WebSearch", "WebFetch"}
    denied = argv[argv.index("--disallowedTools") + 1].split(",")
    assert {"Bash", "Edit", "Write"} <= set(denied)


def test_a_stored_session_is_resumed(claude):
    bindir, exe = claude
    out = run(wakers.ClaudeWaker({"bin": str(exe)}), turn(session="sess-123"))
    argv = claude_calls(bindir)[0]["argv"]
    assert argv[argv.index("--resume") + 1] == "sess-123"
    assert out.session == "sess-123"


@pytest.mark.parametrize("mode, error", [
    ("noresult-quiet", "ended without a final result"),
    ("crash-quiet", "ended without a final result (exit code 1"),
    ("error-quiet", "claude reported error_max_turns: reached the maximum number of turns"),
    ("budget-quiet", "claude reported error_max_budget_usd"),
])
def test_no_final_success_and_nothing_said_is_a_failure(claude, mode, error):
    bindir, exe = claude
    set_claude(bindir, mode)
    out = run(wakers.ClaudeWaker({"bin": str(exe)}), turn())
    assert out.status == "failed" and error in out.error
    assert out.reply == ""


@pytest.mark.parametrize("mode, error", [
    ("noresult", "ended without a final result"),
    ("crash", "ended without a final result (exit code 1"),
    ("error", "claude reported error_max_turns"),
    ("budget", "claude reported error_max_budget_usd"),
])
def test_what_the_agent_said_before_an_error_is_its_reply(claude, mode, error):
    bindir, exe = claude
    set_claude(bindir, mode, reply="Here is the summary you asked for.")
    out = run(wakers.ClaudeWaker({"bin": str(exe)}), turn())
    assert out.status == "replied" and out.reply == "Here is the summary you asked for."
    assert error in out.error and error in out.note  # kept beside the reply, for `wakes show`


def test_a_session_that_cannot_be_resumed_is_forgotten(claude):
    bindir, exe = claude
    set_claude(bindir, "no-resume")
    out = run(wakers.ClaudeWaker({"bin": str(exe)}), turn(session="gone"))
    assert out.status == "failed" and "No conversation found" in out.error
    assert out.session == ""  # tells the runner to drop it


def test_invalid_utf8_in_the_stream_is_noted_not_fatal(claude):
    bindir, exe = claude
    set_claude(bindir, "badutf8")
    out = run(wakers.ClaudeWaker({"bin": str(exe)}), turn())
    assert out.status == "replied"
    assert "invalid UTF-8" in out.note and "unreadable stream lines skipped" in out.note


def test_a_missing_claude_executable_fails_cleanly(tmp_path):
    out = run(wakers.ClaudeWaker({"bin": str(tmp_path / "nope")}), turn())
    assert out.status == "failed" and "could not start" in out.error


def test_claude_on_path_is_used_by_default(claude, monkeypatch):
    bindir, _ = claude
    monkeypatch.setenv("PATH", f"{bindir}:{__import__('os').environ['PATH']}")
    assert run(wakers.ClaudeWaker({}), turn()).status == "replied"
    assert len(claude_calls(bindir)) == 1


# -- The silence limit -----------------------------------------------------------------


def test_a_turn_silent_past_its_limit_is_cut_off_with_its_children():
    out = run(wakers.CommandWaker("sleep 120 & sleep 120"), turn(timeout=None, silence_limit=1.0))
    assert out.status == "cut_off" and out.error == "produced no output for 1 s"


def test_output_keeps_a_turn_alive_past_its_silence_limit():
    # 6 s of work, a line every 0.25 s, a 4 s silence limit: never silent for long.
    script = "for i in $(seq 24); do echo step $i; sleep 0.25; done"
    out = run(wakers.CommandWaker(script), turn(timeout=None, silence_limit=4.0))
    assert out.status == "replied" and out.reply.strip().endswith("step 24")
