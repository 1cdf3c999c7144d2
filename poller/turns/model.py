"""The model waker: a language model as an agent, through pydantic-ai.

``mood-poller agent add NAME --model PROVIDER:MODEL [--base-url URL] [--api-key-env VAR]``
makes one (:mod:`poller.llm.providers` says which providers).  A turn is one run:

- the system prompt is the instruction bundle: the agent's persona (the ``persona``
  setting, or a default that explains Moods) and the Mood's ``rules``; the wake is the
  user message, exactly as composed;
- the conversation is kept per (agent, Mood) in the store (``agent_sessions.history``):
  the runner hands it in (:attr:`TurnRequest.history`) and settling writes the new one
  in the transaction that posts the reply, so a turn that dies mid-run leaves the
  session as it was.  Past ``session_tokens`` the older part is replaced by a summary
  the model writes, and the next wake carries the full catch-up (``compacted``);
- the tools are the turn's :class:`poller.tools.Toolbox` (reading tools on look-only
  turns; acting tools add the matching reply blocks to the reply, which settling applies
  with the reply blocks' own code); calls per turn are capped (``max_tool_calls``);
- tokens in and out come from the provider's usage, dollars from pydantic-ai's price
  table (genai-prices) where it knows the model, else from ``poller.usd_per_mtok_*``;
- 429s and 5xx are retried with backoff within the turn's deadline; a bad key, an
  unknown model or an unreachable server fails the turn with one line naming the cause,
  never the key.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path
from typing import Callable, Optional

from poller import errors
from poller.llm import providers
from poller.turns import wakers
from poller.turns.wakers import TurnRequest, TurnResult

DEFAULT_TIMEOUT_S = 300.0  # a turn with no limit of its own still ends
REQUEST_TIMEOUT_S = 120.0  # one request to the provider, at most
PERSONA_FILE_CHARS = 20_000
RETRIES = 3  # of a 429 or a 5xx, inside the turn's deadline
DEFAULT_PERSONA = (
    "You are {agent}, an AI agent taking part in a Mood: a group conversation of people and "
    "agents, where you are woken with what was said since you last looked. Answer as a "
    "thoughtful member of the group, in the language of the conversation; when nothing "
    "needs you, reply <silent>why</silent> instead of posting.")
SUMMARY_PROMPT = (
    "Your conversation in this Mood has grown long. Write a summary of it for yourself: "
    "who is here, what was asked and answered, what you promised or are working on, and "
    "anything you must remember. Plain text, at most 300 words. It replaces the older "
    "part of the conversation.")


def persona_text(persona: str, agent: str) -> str:
    """The persona: the setting's text, a file it names (absolute path, one line), or the
    default."""
    value = (persona or "").strip()
    if value.startswith("/") and "\n" not in value:
        try:
            value = Path(value).read_text(encoding="utf-8", errors="replace")[:PERSONA_FILE_CHARS]
        except OSError as exc:
            raise errors.UserError(f"the persona file {value} cannot be read: "
                                   f"{exc.strerror}") from None
    return value.strip() or DEFAULT_PERSONA.format(agent=agent)


def system_prompt(turn: TurnRequest) -> str:
    parts = [persona_text(turn.persona, turn.agent)]
    if turn.rules:
        parts.append(f"The rules of the Mood \"{turn.mood}\", set by its operators:\n{turn.rules}")
    return "\n\n".join(parts)


def failure(error: str, public: str = "") -> TurnResult:
    return TurnResult("failed", error=error, public=public or error)


class ModelWaker(wakers.Waker):
    name = "model"
    title = "Language model"
    target = ""
    accepts = ("model", "base_url", "api_key_env")
    keeps_session = True
    keeps_history = True
    calls_tools = True
    reports_cost = True  # from the price table; by tokens where it does not know the model
    reports_tokens = True
    reports_progress = True
    instructions_in_wake = False  # persona and rules are the system prompt

    def __init__(self, options: dict):
        self.options = dict(options or {})

    @classmethod
    def from_agent(cls, agent) -> "ModelWaker":
        return cls(agent.options)

    @classmethod
    def summary(cls, options: dict) -> str:
        model, url = options.get("model", ""), options.get("base_url", "")
        return " ".join(filter(None, [model, url and f"at {url}"]))

    def run(self, turn: TurnRequest, on_start: Callable[[int], None],
            cancel: threading.Event) -> TurnResult:
        try:
            import pydantic_ai  # noqa: F401
        except ImportError:
            why = "model agents need the models extra: pip install 'mood-poller[models]'"
            return failure(why, "its model library is not installed")
        try:
            spec = providers.with_model(providers.parse(
                self.options.get("model", ""), self.options.get("base_url", ""),
                self.options.get("api_key_env", "")), turn.model)
            instructions = system_prompt(turn)
        except errors.UserError as exc:
            return failure(str(exc))
        missing = spec.missing_key()
        if missing:
            return failure(missing, "it has no API key")
        return Run(self, turn, spec, instructions, cancel).go()


class Run:
    """One model turn."""

    def __init__(self, waker: ModelWaker, turn: TurnRequest, spec: providers.Spec,
                 instructions: str, cancel: threading.Event) -> None:
        self.turn, self.spec, self.instructions, self.cancel = turn, spec, instructions, cancel
        self.timeout = turn.timeout or DEFAULT_TIMEOUT_S
        self.deadline = time.monotonic() + self.timeout
        self.notes: list[str] = []

    def progress(self, doing: str) -> None:
        if self.turn.on_progress is not None:
            self.turn.on_progress(doing)

    def go(self) -> TurnResult:
        import asyncio

        return asyncio.run(self._go())

    async def _go(self) -> TurnResult:
        from pydantic_ai import Agent, CancellationToken
        from pydantic_ai.messages import ModelMessagesTypeAdapter
        from pydantic_ai.usage import UsageLimits

        history, session = self.history()
        self.model, client = providers.build(self.spec, timeout=min(REQUEST_TIMEOUT_S, self.timeout),
                                             max_retries=RETRIES)
        box = self.turn.toolbox
        agent = Agent(self.model, instructions=self.instructions, tools=self.tools(box))
        token = CancellationToken()
        ended = threading.Event()
        threading.Thread(target=self._watch, args=(token, ended), daemon=True).start()
        calls = box.max_calls if box is not None else 0
        self.progress("thinking…")
        try:
            try:
                result = await agent.run(
                    self.turn.text, message_history=history, timeout=self.timeout,
                    cancellation_token=token,
                    usage_limits=UsageLimits(request_limit=calls + 3, tool_calls_limit=None))
            except Exception as exc:  # the provider or the library said no: one line, no key
                return self.failed(exc)
            reply = result.output if isinstance(result.output, str) else str(result.output)
            if box is not None and box.blocks:  # settled as reply blocks, by their own code
                reply = box.reply_with_blocks(reply)
            messages = result.all_messages()
            tokens_in, tokens_out, cost = self.usage(result.new_messages())
            held = last_size(messages)
            compacted = False
            if held > self.turn.session_tokens:
                messages, compacted = await self.compact(messages, token)
        finally:
            ended.set()
            await client.close()
        kept = ModelMessagesTypeAdapter.dump_json(messages).decode()
        return TurnResult("replied", reply=reply, session=session, cost=cost,
                          note="; ".join(self.notes), history=kept,
                          history_tokens=0 if compacted else held, compacted=compacted,
                          tokens_in=tokens_in, tokens_out=tokens_out)

    def history(self) -> tuple[list, str]:
        """The kept conversation and its session id; a fresh one when there is none (or it
        cannot be read: noted, and the wake carries the full catch-up anyway)."""
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        if self.turn.session and self.turn.history:
            try:
                return list(ModelMessagesTypeAdapter.validate_json(self.turn.history)), self.turn.session
            except ValueError:
                self.notes.append("the kept conversation could not be read: a new one started")
        return [], f"model-{uuid.uuid4().hex}"

    def tools(self, box) -> list:
        from pydantic_ai import Tool

        if box is None:
            return []
        out = []
        for spec in box.specs():
            def call(_name=spec.name, **args):
                self.progress("reading history" if _name == "read_history" else f"using {_name}")
                answer = box.call(_name, args)
                self.progress("thinking…")
                return answer
            out.append(Tool.from_schema(call, name=spec.name, description=spec.description,
                                        json_schema=spec.parameters))
        return out

    def _watch(self, token, ended: threading.Event) -> None:
        """Cancel the run when the turn is stopped (or its deadline passes)."""
        while not ended.wait(0.2):
            if self.cancel.is_set() or time.monotonic() > self.deadline + 5:
                try:
                    token.cancel()
                except Exception:
                    pass
                return

    def failed(self, exc: BaseException) -> TurnResult:
        from pydantic_ai import exceptions as x

        if self.cancel.is_set() or isinstance(exc, x.RunCancelled):
            return wakers.stopped()
        if isinstance(exc, (x.RunTimedOut, x.ModelTimeoutError, x.ModelRequestTimeout)):
            return wakers.timed_out(self.timeout)
        where = f"{self.spec.label}" + (f" at {self.spec.url}" if self.spec.url else "")
        if isinstance(exc, x.ModelAuthenticationError):
            why, public = f"{where} refused the API key in {self.spec.key_env}", "its API key was refused"
        elif isinstance(exc, x.ModelNotFoundError):
            why, public = f"{where}: the model {self.spec.model!r} is not known there", "its model is not known"
        elif isinstance(exc, x.ModelConnectionError):
            why, public = f"{where} cannot be reached", "its model server cannot be reached"
        elif isinstance(exc, x.ModelRateLimitError):
            why, public = f"{where} kept answering 429 (rate limited) after {RETRIES} retries", "its model was rate limited"
        elif isinstance(exc, x.UsageLimitExceeded):
            why, public = f"the model went on calling tools past the limit: {one_line(exc)}", "it made too many tool calls"
        elif isinstance(exc, x.ModelHTTPError):
            why, public = f"{where} answered HTTP {exc.status_code}", f"its model answered HTTP {exc.status_code}"
        else:
            why, public = f"{where}: {type(exc).__name__}: {one_line(exc)}", "its model failed"
        from poller.secure import mask_text

        return failure(mask_text(why.replace(self.spec.key() or "\0", "***")), public)

    def usage(self, new: list) -> tuple[Optional[int], Optional[int], Optional[float]]:
        """Tokens in and out of this turn's requests, and their price if the table knows it."""
        from pydantic_ai.messages import ModelResponse

        responses = [m for m in new if isinstance(m, ModelResponse)]
        if not responses:
            return None, None, None
        tokens_in = sum(r.usage.input_tokens or 0 for r in responses)
        tokens_out = sum(r.usage.output_tokens or 0 for r in responses)
        try:
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cost = sum(float(r.cost().total_price) for r in responses)
        except Exception:  # a model the table does not know: priced by tokens, if configured
            cost = None
        return tokens_in, tokens_out, cost

    async def compact(self, messages: list, token) -> tuple[list, bool]:
        """The conversation with its older part replaced by the model's own summary; the
        whole of it kept, with a note, if no summary could be had."""
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

        self.progress("summarising its conversation")
        try:
            summary = (await Agent(self.model, instructions=self.instructions).run(
                SUMMARY_PROMPT, message_history=messages, cancellation_token=token,
                timeout=max(5.0, min(60.0, self.deadline - time.monotonic())))).output
        except Exception as exc:
            self.notes.append(f"the conversation could not be summarised ({type(exc).__name__}); "
                              f"it was kept whole")
            return messages, False
        self.notes.append("the conversation passed session_tokens: its older part was summarised")
        return [ModelRequest(parts=[UserPromptPart(
                    "A summary of your conversation in this Mood so far, written by you:\n"
                    + str(summary).strip())]),
                ModelResponse(parts=[TextPart("Noted.")])], True


def last_size(messages: list) -> int:
    """Tokens the conversation holds: the last request's input and its answer, as the
    provider counted them."""
    from pydantic_ai.messages import ModelResponse

    for m in reversed(messages):
        if isinstance(m, ModelResponse) and m.usage.input_tokens:
            return (m.usage.input_tokens or 0) + (m.usage.output_tokens or 0)
    return sum(len(json.dumps(getattr(m, "parts", []), default=str)) // 4 for m in messages)


def one_line(exc: BaseException) -> str:
    text = (str(exc).strip().splitlines() or [""])[0]
    return text[:300]
