"""Parity with the production poller (issue 15), what turns do and cost:

- item 7: a Claude Code turn's progress, live, in ``status``, the event stream and
  the agents page, never posted, cleared when the turn ends;
- item 4: a person's slash command (``@claude /compact``) run in the agent's session,
  and the refusals;
- item 6: daily dollar budgets, per Mood and across Moods, resetting at midnight in
  the Mood's time zone.

Real ``tick`` cycles, runner processes and the stand-in ``claude`` of
``support.fakes`` emitting Claude Code's stream-json shapes (tool_use blocks,
tool_result, ``compact_boundary``, ``<local-command-stdout>``, ``result`` with
``total_cost_usd``), on the tests' timeline.

Here, the pure part (no database, no process); the rest sits under the same name
in the other layers.
"""

from __future__ import annotations

import datetime as dt
import json

from poller import law, settings
from poller.control import slash
from poller.turns import wakers
from poller.kinds import WakeKind
from support.streams import event

DEFAULTS = {k: v.default for k, v in settings.KEYS.items()}


# -- item 7: a turn's progress ---------------------------------------------------------------


def assistant(*content) -> dict:
    return event("assistant", message={"role": "assistant", "content": list(content)})


def test_progress_names_the_tool_and_the_files_name_and_nothing_else():
    read = {"type": "tool_use", "id": "t1", "name": "Read",
            "input": {"file_path": "/home/ada/secret-project/notes.md", "offset": 10}}
    bash = {"type": "tool_use", "id": "t2", "name": "Bash",
            "input": {"command": "cat ~/.ssh/id_rsa", "description": "look at the key"}}
    edit = {"type": "tool_use", "id": "t3", "name": "Edit",
            "input": {"file_path": "src/app.py", "old_string": "x = 1", "new_string": "x = 2"}}
    assert wakers.progress_of(event("system", subtype="init")) == "starting"
    assert wakers.progress_of(assistant(read)) == "using Read on notes.md"
    assert wakers.progress_of(assistant(bash)) == "using Bash"
    assert wakers.progress_of(assistant(edit)) == "using Edit on app.py"
    assert wakers.progress_of(assistant({"type": "text", "text": "The plan is X"})) == "writing"
    assert wakers.progress_of(assistant({"type": "thinking", "thinking": "hmm"})) == "thinking"
    tool_result = event("user", message={"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "TOP SECRET"}]})
    assert wakers.progress_of(tool_result) == ""  # the file's content is never shown
    odd = {"type": "tool_use", "id": "t4", "name": "Read\nforged line",
           "input": {"file_path": "/tmp/a\x1b[31mb.md"}}
    assert wakers.progress_of(assistant(odd)) == "using Read forged line on a [31mb.md"


def test_the_stream_reports_progress_as_the_lines_arrive():
    seen = []
    stream = wakers.ClaudeStream(seen.append)
    read = {"type": "tool_use", "id": "t1", "name": "Grep", "input": {"pattern": "password"}}
    for obj in (event("system", subtype="init"), assistant(read),
                event("result", subtype="success", result="ok")):
        stream.feed(json.dumps(obj).encode() + b"\n")
    assert seen == ["starting", "using Grep"]  # the pattern searched for is an argument: left out


# -- item 4: slash commands -----------------------------------------------------------------


def test_a_commands_output_is_read_from_the_result_or_the_local_stdout_or_the_compaction():
    def run(*objs):
        stream = wakers.ClaudeStream()
        for obj in objs:
            stream.feed(json.dumps(obj).encode() + b"\n")
        return stream

    blocks = event("user", message={"role": "user", "content": [
        {"type": "text", "text": "<local-command-stdout>Total cost: $1.20</local-command-stdout>"}]})
    stream = run(blocks)
    empty = wakers.TurnResult("replied", reply="")
    assert wakers.command_output(empty, stream).reply == "Total cost: $1.20"
    said = wakers.TurnResult("replied", reply="Compacted. Summary kept.")
    assert wakers.command_output(said, stream).reply == "Compacted. Summary kept."
    compact = run(event("system", subtype="compact_boundary",
                        compact_metadata={"trigger": "manual", "pre_tokens": 1200}))
    assert wakers.command_output(empty, compact).reply == \
        "The session was compacted (it held 1,200 tokens)."
    failed = wakers.TurnResult("failed", error="claude reported error_during_execution")
    assert wakers.command_output(failed, compact) is failed


def test_what_a_post_asks_for_and_why_a_command_is_refused():
    assert slash.parse("@claude /compact") == slash.Asked("claude", "compact", False)
    assert slash.parse("  @Claude  /CONTEXT \n") == slash.Asked("Claude", "context", False)
    assert slash.parse("@claude /compact now please").extra
    assert slash.parse("@claude /etc/hosts is broken") is None
    assert slash.parse("hey @claude /cost") is None
    ok = slash.parse("@claude /cost")
    assert slash.refusal(ok, "claude", "claude-code", "person", "full") == ""
    assert "only a person with trust full" in slash.refusal(ok, "claude", "claude-code",
                                                               "person", "look")
    assert "only a person with trust full" in slash.refusal(ok, "claude", "claude-code",
                                                               "agent", "full")
    assert "not a Claude Code agent" in slash.refusal(ok, "bot", "command", "person", "full")
    assert "/compact, /context, /usage, /cost" in slash.refusal(
        slash.parse("@claude /clear"), "claude", "claude-code", "person", "full")
    assert "one command at a time" in slash.refusal(ok, "claude", "claude-code", "person",
                                                       "full", waiting="compact")
    note = slash.output_note("context", "claude", "x" * 500, 100)
    assert len(note) == 100 and note.endswith("[output cut]")


def test_a_command_waits_while_the_agent_is_stopped_in_the_mood_and_ignores_the_dials():
    def decide(**kw):
        return law.decide(law.Facts(kind="command", now=NOW, settings=dict(DEFAULTS, **kw.pop(
            "values", {})), **kw))

    assert decide(stopped=True).code == "deferred:stopped"  # not dropped: it runs on resume
    assert decide(values={"listening": "off"}, archived=True,
                  cooldown_until=NOW + dt.timedelta(hours=1), floor_holder="other").code == "woke"
    assert decide(busy_here=True).code == "deferred:busy"


# -- item 6: dollar budgets ----------------------------------------------------------------

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


def facts(kind, spent_here=0.0, spent_all=0.0, **values):
    return law.Facts(kind=kind, now=NOW, settings=dict(DEFAULTS, **values),
                     spent_here=spent_here, spent_all=spent_all)


def test_over_a_daily_budget_mentions_are_held_until_midnight_and_the_rest_skipped():
    here = {"max_usd_per_day": 1.0, "timezone": "Pacific/Auckland"}
    d = law.decide(facts("mention", spent_here=1.0, **here))
    # 12:00 UTC on 30 November is 01:00 on 1 December in Auckland (UTC+13).
    assert (d.code, d.next_due) == ("held:over-budget", dt.datetime(2026, 12, 1, 11, 0,
                                                                     tzinfo=dt.timezone.utc))
    for kind in ("consider", "quiet", "arrival"):
        assert law.decide(facts(kind, spent_here=1.5, **here)).code == "skipped:over-budget"
    assert law.decide(facts("cut-off", spent_here=1.5, **here)).outcome == "defer"
    assert law.decide(facts("mention", spent_here=0.99, **here)).code == "woke"
    assert law.decide(facts("command", spent_here=9.0, **here)).code == "woke"
    assert law.decide(facts("mention", spent_here=500.0)).code == "woke"  # 0: no limit


def test_the_budget_across_moods_counts_every_mood_and_the_first_spent_holds():
    both = {"max_usd_per_day": 5.0, "max_usd_per_day_all_moods": 2.0}
    assert law.decide(facts("mention", spent_here=0.5, spent_all=2.0, **both)).code == \
        "held:over-budget"
    assert law.decide(facts("mention", spent_here=5.0, spent_all=5.0, **both)).code == \
        "held:over-budget"
    assert law.decide(facts("mention", spent_here=1.0, spent_all=1.9, **both)).code == "woke"


def test_a_day_starts_at_midnight_in_the_moods_zone():
    utc = dt.timezone.utc
    assert law.day_start(NOW, "UTC") == dt.datetime(2026, 11, 30, tzinfo=utc)
    assert law.day_start(NOW, "Pacific/Auckland") == dt.datetime(2026, 11, 30, 11, tzinfo=utc)
    assert law.next_midnight(NOW, "America/New_York") == dt.datetime(2026, 12, 1, 5, tzinfo=utc)


