"""Language-model servers on 127.0.0.1 for the model agents' tests: an OpenAI-compatible
``/v1/chat/completions`` and an Anthropic-shaped ``/v1/messages``, each in a thread.

A test scripts what each request gets, one step per request (the last step repeats):
:class:`Say` (text, with token counts), :class:`Call` (tool calls), :class:`Fail` (an
HTTP status with the provider's error body), :class:`Hang` (no answer until closed).
``think`` seconds pass before each answer.  Every request is kept in ``requests``
(path, headers, JSON body), so a test can read the system prompt, the history sent, the
tools offered and the key (or that none was sent).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Union


@dataclass(frozen=True)
class Say:
    text: str
    tokens_in: int = 100
    tokens_out: int = 10


@dataclass(frozen=True)
class Call:
    """Tool calls: (name, arguments) pairs."""

    calls: tuple
    tokens_in: int = 100
    tokens_out: int = 10


@dataclass(frozen=True)
class Fail:
    status: int
    message: str = "no"
    retry_after: float | None = None


@dataclass(frozen=True)
class Hang:
    pass


Step = Union[Say, Call, Fail, Hang]


@dataclass
class Request:
    path: str
    headers: dict
    body: dict

    @property
    def key(self) -> str:
        auth = self.headers.get("authorization", "")
        return auth.removeprefix("Bearer ") if auth else self.headers.get("x-api-key", "")


class _Server:
    wire = ""

    def __init__(self, script: Union[list, Callable[[dict], Step]], think: float = 0.0):
        self.script, self.think = script, think
        self.requests: list[Request] = []
        self.closing = threading.Event()
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw or b"{}")
                headers = {k.lower(): v for k, v in self.headers.items()}
                step = outer._next(Request(self.path, headers, body))
                if outer.think:
                    outer.closing.wait(outer.think)
                if isinstance(step, Hang):
                    outer.closing.wait()
                    return
                status, extra, payload = outer.answer(step, body)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in extra.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _next(self, request: Request) -> Step:
        with self._lock:
            self.requests.append(request)
            if callable(self.script):
                return self.script(request.body)
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class OpenAIServer(_Server):
    """``POST /v1/chat/completions`` as OpenAI (and vLLM, llama.cpp, ollama) answer it."""

    def answer(self, step: Step, body: dict) -> tuple[int, dict, dict]:
        if isinstance(step, Fail):
            code = {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}
            extra = {"retry-after": str(step.retry_after)} if step.retry_after is not None else {}
            return step.status, extra, {"error": {"message": step.message, "type": "error",
                                                  "code": code.get(step.status, "server_error")}}
        message: dict = {"role": "assistant", "content": None}
        finish = "stop"
        if isinstance(step, Say):
            message["content"] = step.text
        else:
            finish = "tool_calls"
            message["tool_calls"] = [{"id": f"call_{uuid.uuid4().hex[:8]}", "type": "function",
                                      "function": {"name": n, "arguments": json.dumps(a)}}
                                     for n, a in step.calls]
        return 200, {}, {"id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()),
                         "model": body.get("model", "m"),
                         "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                         "usage": {"prompt_tokens": step.tokens_in, "completion_tokens": step.tokens_out,
                                   "total_tokens": step.tokens_in + step.tokens_out}}


class AnthropicServer(_Server):
    """``POST /v1/messages`` in the Anthropic Messages shape."""

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, step: Step, body: dict) -> tuple[int, dict, dict]:
        if isinstance(step, Fail):
            kind = {401: "authentication_error", 404: "not_found_error",
                    429: "rate_limit_error"}.get(step.status, "api_error")
            extra = {"retry-after": str(step.retry_after)} if step.retry_after is not None else {}
            return step.status, extra, {"type": "error", "error": {"type": kind, "message": step.message}}
        if isinstance(step, Say):
            content, stop = [{"type": "text", "text": step.text}], "end_turn"
        else:
            content = [{"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:8]}", "name": n,
                        "input": a} for n, a in step.calls]
            stop = "tool_use"
        return 200, {}, {"id": "msg_1", "type": "message", "role": "assistant",
                         "model": body.get("model", "m"), "content": content,
                         "stop_reason": stop, "stop_sequence": None,
                         "usage": {"input_tokens": step.tokens_in, "output_tokens": step.tokens_out}}


def system_of(request: Request) -> str:
    """The system prompt a request carried (either wire format)."""
    if "system" in request.body:
        system = request.body["system"]
        return system if isinstance(system, str) else "".join(b.get("text", "") for b in system)
    return "".join(str(m.get("content")) for m in request.body.get("messages", [])
                   if m.get("role") in ("system", "developer"))


def tools_of(request: Request) -> list[str]:
    return [t.get("function", t).get("name") for t in request.body.get("tools", [])]
