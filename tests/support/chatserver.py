"""An OpenAI-compatible ``/v1/chat/completions`` endpoint on 127.0.0.1, in a thread.

*answer(body)* says what each request gets: ``(status, text)`` — a chat
completion carrying *text* for a 2xx status, an empty body otherwise.  Every
request is kept (``requests``: its Authorization header and JSON body).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


def completion(text: str, model: str = "", prompt_tokens: int | None = None,
               completion_tokens: int | None = None) -> dict:
    """A chat completion as OpenAI-compatible servers send it, carrying *text*."""
    out = {"id": "chatcmpl-test", "object": "chat.completion", "created": 1_767_225_600,
           "model": model or "test-model",
           "choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": text}}]}
    if prompt_tokens is not None:
        out["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens or 0,
                        "total_tokens": prompt_tokens + (completion_tokens or 0)}
    return out


class ChatServer:
    def __init__(self, answer: Callable[[dict], tuple[int, str]]):
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"auth": self.headers.get("Authorization"), "body": body})
                status, text = answer(body)
                reply = json.dumps(completion(text, body.get("model", ""))).encode() \
                    if 200 <= status < 300 else b""
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(reply)))
                    self.end_headers()
                    self.wfile.write(reply)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up
                    pass

            def log_message(self, *args):  # keep test output quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
