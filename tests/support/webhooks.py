"""A loopback receiver for webhook deliveries that answers as scripted, a CLI on each
database, and hooks added through it with their signing secret read back."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from poller.bridges import webhooks

from support.cli import Cli


T0 = "2026-03-02T09:00:00Z"


class Receiver:
    """A subscriber: answers each request as *script* says, in turn, then 200; records
    what it took (each delivery id with its event and body) and every request."""

    def __init__(self, secret_of, script=()):
        self.script = list(script)
        self.requests: list[dict] = []
        self.taken: dict[str, dict] = {}
        self.paths: list[str] = []
        self.secret_of = secret_of
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.paths.append(self.path)
                action = receiver.script.pop(0) if receiver.script else "ok"
                ok = webhooks.verify(receiver.secret_of(), self.headers["X-Mood-Timestamp"], body,
                                     self.headers["X-Mood-Signature"],
                                     now=int(self.headers["X-Mood-Timestamp"]))
                receiver.requests.append({"action": action, "signed": ok,
                                          "delivery": self.headers["X-Mood-Delivery"]})
                if action == "hang":
                    time.sleep(3)
                    return
                if action == "redirect":
                    self.send_response(302)
                    self.send_header("Location", "/elsewhere")
                    self.end_headers()
                    return
                status = 500 if action == "500" else 200
                if status == 200 and ok:
                    receiver.taken.setdefault(self.headers["X-Mood-Delivery"], json.loads(body))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def cli(db_url):
    c = Cli(db_url)
    c("init", "--answer-from-now", "--now", T0)
    c("mood", "add", "lobby")
    c("person", "add", "ada", "--trust", "full")
    return c


def add_hook(cli, url: str) -> tuple[int, str]:
    made = json.loads(cli("mood", "webhook", "add", "lobby", url, "--json").out)
    return made["id"], made["secret"]


def secret_of(cli) -> str:
    from poller.store import bridges
    from support.webserver import store_for

    return bridges.webhook_of(store_for(cli.db_url), 1)[1]
