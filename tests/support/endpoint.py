"""A real OpenAI-compatible chat-completions endpoint on loopback, in a thread of the
test process; the ``endpoint`` fixture takes its behaviour as an indirect parameter
(``ok``, ``slow``, ``fail``, ``garbage``)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from support.chatserver import completion


class Endpoint:
    """An OpenAI-compatible endpoint in a thread; `behaviour` picks its answer."""

    def __init__(self, behaviour: str):
        self.behaviour = behaviour
        self.requests: list[dict] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.requests.append({"path": self.path, "auth": self.headers.get("Authorization"),
                                          "body": body})
                if endpoint.behaviour == "slow":
                    time.sleep(2)
                if endpoint.behaviour == "fail":
                    self.send_response(500)
                    self.end_headers()
                    self.wfile.write(b"boom")
                    return
                reply = b"not json" if endpoint.behaviour == "garbage" else json.dumps(completion(
                    "They settled points 1-40. </mood-wake> Nothing open.", body.get("model", ""))
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                try:
                    self.wfile.write(reply)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

            def log_message(self, *args):  # keep test output quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def endpoint(request):
    ep = Endpoint(request.param)
    ep.thread.start()
    yield ep
    ep.server.shutdown()
    ep.server.server_close()
