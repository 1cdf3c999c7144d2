"""Signed webhooks, delivered to a real HTTP receiver on loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from support.agents import agent_command
from support.cli import Cli
from support.machine import REPO
from support.waiting import HANG_GUARD_S, wait_for

from poller.bridges import webhooks

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


def test_events_arrive_signed_once_each_through_a_500_and_a_hang(cli, db_url, tmp_path):
    secret = {}
    rx = Receiver(lambda: secret["value"], script=["500", "hang"])
    try:
        hook_id, secret["value"] = add_hook(cli, rx.url)
        cli("agent", "add", "helper", "--command", agent_command(tmp_path, "reply"))
        cli("post", "lobby", "--as", "ada", "@helper hi", "--now", T0)
        cli("tick", "--wait", "--now", T0)
        env = dict(os.environ, PYTHONPATH=str(REPO))
        proc = subprocess.Popen([sys.executable, "-m", "poller", "--db", db_url, "bridge",
                                 "webhooks", "--timeout", "1"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)
        try:
            wait_for(lambda: len(rx.taken) == 4, what="four events taken")
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            _, err = proc.communicate(timeout=HANG_GUARD_S)
        events = [rx.taken[k]["event"] for k in sorted(rx.taken, key=int)]
        assert events == ["post", "turn_started", "reply", "turn_ended"]
        assert [r["action"] for r in rx.requests[:2]] == ["500", "hang"]
        assert all(r["signed"] for r in rx.requests)
        assert len(rx.requests) == 6  # two refused, then each of the four once
        assert rx.taken[min(rx.taken, key=int)]["text"] == "@helper hi"
        assert secret["value"] not in err.decode()
        items = json.loads(cli("outbox", "--json").out)
        assert {i["status"] for i in items} == {"sent"} and len(items) == 4
    finally:
        rx.close()


def test_a_redirect_is_not_followed_and_a_failed_item_can_be_sent_again(cli, db_url):
    rx = Receiver(lambda: "", script=["redirect"] * 20)
    try:
        add_hook(cli, rx.url)
        cli("post", "lobby", "--as", "ada", "hello", "--now", T0)
        for minute in range(3):
            cli("bridge", "webhooks", "--once", "--timeout", "5", "--max-attempts", "3",
                "--now", f"2026-03-02T09:{minute + 1:02d}:00Z")
        failed = json.loads(cli("outbox", "--failed", "--json").out)
        assert len(failed) == 1 and failed[0]["attempts"] == 3
        assert "HTTP 302" in failed[0]["last_error"] and "not followed" in failed[0]["last_error"]
        assert "/elsewhere" not in rx.paths
        rx.script.clear()
        rx.secret_of = lambda: secret_of(cli)
        cli("outbox", "retry", str(failed[0]["id"]), "--now", "2026-03-02T10:00:00Z")
        out = cli("bridge", "webhooks", "--once", "--now", "2026-03-02T10:00:00Z").out
        assert "delivered 1" in out
        assert json.loads(cli("outbox", "--json").out)[0]["status"] == "sent"
        again = cli.fails("outbox", "retry", str(failed[0]["id"]))
        assert "never sent twice" in again.err
    finally:
        rx.close()


def secret_of(cli) -> str:
    from poller.store import bridges
    from support.webserver import store_for

    return bridges.webhook_of(store_for(cli.db_url), 1)[1]


@pytest.mark.parametrize("url", ["ftp://example.org/x", "file:///etc/passwd", "example.org",
                                 "javascript:alert(1)", "http://"])
def test_only_http_urls_are_accepted(cli, url):
    r = cli.fails("mood", "webhook", "add", "lobby", url)
    assert "http:// or https://" in r.err
    assert json.loads(cli("mood", "webhook", "list", "--json").out) == []


def test_the_signature_covers_the_time_and_the_body():
    body = b'{"event": "post"}'
    sig = webhooks.signature("s3cret", 1000, body)
    assert webhooks.verify("s3cret", "1000", body, sig, now=1100)
    assert not webhooks.verify("s3cret", "1000", body + b" ", sig, now=1100)
    assert not webhooks.verify("other", "1000", body, sig, now=1100)
    assert not webhooks.verify("s3cret", "1000", body, sig, now=1000 + 3600)  # played again later
    assert not webhooks.verify("s3cret", "1001", body, sig, now=1100)
