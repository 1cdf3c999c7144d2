"""The model waker's own logic with pydantic-ai's function model in place of a provider:
what the model is told, the kept conversation, tools, compaction and failures.  The
provider wire formats are tested against loopback servers (tests/integration)."""

from __future__ import annotations

import json
import threading

import pytest

pytest.importorskip("pydantic_ai", reason="the models extra is part of the test extras")

from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart  # noqa: E402
from pydantic_ai.models.function import FunctionModel  # noqa: E402
from pydantic_ai.usage import RequestUsage  # noqa: E402

from poller import errors  # noqa: E402
from poller.llm import providers  # noqa: E402
from poller.tools import ToolSpec  # noqa: E402
from poller.turns import model as model_waker  # noqa: E402
from poller.turns.wakers import TurnRequest  # noqa: E402


def turn(**kw) -> TurnRequest:
    base = dict(wake_id=1, agent="sage", mood="lobby", kind="mention", tools="full",
                text="<mood-wake>ada asks: what is 2+2?</mood-wake>", timeout=30)
    return TurnRequest(**(base | kw))


def run_with(fn, t: TurnRequest, monkeypatch, options=None):
    class Client:
        async def close(self):
            pass

    monkeypatch.setattr(providers, "build", lambda spec, **kw: (FunctionModel(fn), Client()))
    waker = model_waker.ModelWaker(options or {"model": "openai:gpt-test",
                                               "base_url": "http://127.0.0.1:9/v1"})
    return waker.run(t, lambda pgid: None, threading.Event())


def said(text, tin=50, tout=5):
    return ModelResponse(parts=[TextPart(text)], usage=RequestUsage(input_tokens=tin, output_tokens=tout))


def test_the_system_prompt_is_persona_and_rules_and_the_wake_is_the_user_message(monkeypatch):
    seen = {}

    def fn(messages, info):
        seen["instructions"] = messages[0].instructions
        seen["user"] = messages[-1].parts[-1].content
        return said("Four.")

    out = run_with(fn, turn(rules="Answer in French.", persona="You are Sage, terse."), monkeypatch)
    assert out.status == "replied" and out.reply == "Four."
    assert seen["instructions"].startswith("You are Sage, terse.")
    assert "Answer in French." in seen["instructions"]
    assert seen["user"] == turn().text
    assert (out.tokens_in, out.tokens_out) == (50, 5)


def test_the_default_persona_explains_moods_and_a_persona_file_is_read(tmp_path):
    assert "Mood" in model_waker.persona_text("", "sage") and "sage" in model_waker.persona_text("", "sage")
    f = tmp_path / "persona.md"
    f.write_text("You are the build bot.\n")
    assert model_waker.persona_text(str(f), "x") == "You are the build bot."
    with pytest.raises(errors.UserError, match="cannot be read"):
        model_waker.persona_text(str(tmp_path / "missing.md"), "x")


def test_the_conversation_comes_back_and_is_resumed(monkeypatch):
    lengths = []

    def fn(messages, info):
        lengths.append(len(messages))
        return said(f"answer {len(lengths)}")

    first = run_with(fn, turn(), monkeypatch)
    assert first.session.startswith("model-") and first.history
    second = run_with(fn, turn(session=first.session, history=first.history,
                               text="<mood-wake>and 3+3?</mood-wake>"), monkeypatch)
    assert second.session == first.session
    assert lengths == [1, 3]  # the second request carries the first exchange
    kept = json.loads(second.history)
    assert len(kept) == 4


def test_an_unreadable_history_starts_a_new_session_with_a_note(monkeypatch):
    out = run_with(lambda m, i: said("hi"), turn(session="model-x", history="{not json"), monkeypatch)
    assert out.status == "replied" and out.session != "model-x"
    assert "could not be read" in out.note


class Box:
    """A toolbox as the model waker sees it (the real one is tested on real stores)."""

    def __init__(self):
        self.max_calls, self.blocks, self.calls = 8, [], []

    def specs(self):
        return [ToolSpec("read_post", "Read one post.", {
            "type": "object", "properties": {"post_id": {"type": "integer"}},
            "required": ["post_id"], "additionalProperties": False}, False),
            ToolSpec("set_alarm", "Set an alarm.", {
                "type": "object", "properties": {"daily": {"type": "string"}},
                "required": ["daily"], "additionalProperties": False}, True)]

    def reply_with_blocks(self, reply):
        return "\n\n".join([reply.rstrip(), *self.blocks])

    def call(self, name, args):
        self.calls.append((name, args))
        if name == "set_alarm":
            self.blocks.append(f"```alarm\ndaily: {args['daily']}\ntz: UTC\n```")
            return "accepted"
        return f"post {args['post_id']}: the build is green"


def test_a_tool_call_runs_and_its_result_goes_back_before_the_answer(monkeypatch):
    box, progress = Box(), []

    def fn(messages, info):
        assert [t.name for t in info.function_tools] == ["read_post", "set_alarm"]
        last = messages[-1].parts[-1]
        if last.part_kind == "user-prompt":
            return ModelResponse(parts=[ToolCallPart("read_post", {"post_id": 7}),
                                        ToolCallPart("set_alarm", {"daily": "09:00"})])
        results = {p.tool_name: p.content for p in messages[-1].parts}
        return said(f"Read it: {results['read_post']}")

    out = run_with(fn, turn(toolbox=box, on_progress=progress.append), monkeypatch)
    # The model asked for both at once: they may run in either order.
    assert sorted(box.calls) == [("read_post", {"post_id": 7}), ("set_alarm", {"daily": "09:00"})]
    assert out.reply.startswith("Read it: post 7: the build is green")
    assert out.reply.endswith("```alarm\ndaily: 09:00\ntz: UTC\n```")  # settled as a block
    assert progress[0] == "thinking…" and "using read_post" in progress and "using set_alarm" in progress


def test_past_session_tokens_the_older_part_is_summarised(monkeypatch):
    def fn(messages, info):
        if "grown long" in str(messages[-1].parts[-1].content):
            return said("We talked about the build.", 10, 5)
        return said("Four.", 40_000, 10)

    out = run_with(fn, turn(session_tokens=32_000), monkeypatch)
    assert out.compacted and out.history_tokens == 0
    kept = json.loads(out.history)
    assert len(kept) == 2 and "We talked about the build." in json.dumps(kept)
    assert "summarised" in out.note
    small = run_with(lambda m, i: said("Four.", 100, 10), turn(), monkeypatch)
    assert not small.compacted and small.history_tokens == 110


def test_a_key_that_is_missing_fails_the_turn_in_one_line(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = model_waker.ModelWaker({"model": "openai:gpt-4o-mini"}).run(turn(), lambda p: None,
                                                                       threading.Event())
    assert out.status == "failed" and "OPENAI_API_KEY" in out.error and "\n" not in out.error


def test_a_mood_model_setting_overrides_the_agents_model():
    spec = providers.parse("openai:gpt-4o-mini", "http://127.0.0.1:8080/v1", "MY_KEY")
    assert providers.with_model(spec, "gpt-4.1").label == "openai:gpt-4.1"
    other = providers.with_model(spec, "anthropic:claude-haiku")
    assert (other.label, other.base_url, other.key_env) == ("anthropic:claude-haiku",
                                                           "http://127.0.0.1:8080/v1", "MY_KEY")


@pytest.mark.parametrize("model, base, env, why", [
    ("gpt-4o", "", "", "PROVIDER:MODEL"),
    ("mistral:large", "", "", "PROVIDER:MODEL"),
    ("openai:", "", "", "model name"),
    ("openai:x", "ftp://h", "", "--base-url"),
    ("openai:x", "http://u:p@h/v1", "", "--base-url"),
    ("openai:x", "", "sk-live-abc", "not a key"),
])
def test_bad_specs_are_refused_in_one_line(model, base, env, why):
    with pytest.raises(errors.UserError, match=why) as e:
        providers.parse(model, base, env)
    assert "sk-live-abc" not in str(e.value)


def test_ollama_needs_no_key_and_has_its_local_url():
    spec = providers.parse("ollama:llama3.2")
    assert spec.url == "http://127.0.0.1:11434/v1" and spec.missing_key({}) == ""
    assert providers.parse("openai:x").missing_key({}) != ""
    assert providers.parse("openai:x", "http://127.0.0.1:1/v1").missing_key({}) == ""
