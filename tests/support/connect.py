"""Loopback servers for ``config check --connect`` (``Fake``: a MediaWiki action API and an
OpenAI-compatible model list in a thread), a config pointing at them, and the checks read back."""

from __future__ import annotations

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest


SECRET = "sekrit-4f9a2c"


def write(tmp_path, body: str, mode: int = 0o600):
    path = tmp_path / "config.toml"
    path.write_text(body)
    os.chmod(path, mode)
    return path


class Fake:
    """A loopback HTTP server: a MediaWiki action API serving the dials page and an
    OpenAI-compatible model list; *behaviour* picks "ok", "hang" or "denied"."""

    def __init__(self, behaviour: str = "ok"):
        self.behaviour = behaviour
        self.seen: list[tuple[str, str | None]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                fake.seen.append((self.path, self.headers.get("Authorization")))
                if fake.behaviour == "hang":
                    time.sleep(3)
                    return
                if fake.behaviour == "denied":
                    self.reply(401, {"error": "bad key"})
                    return
                parts = urlsplit(self.path)
                if parts.path.endswith("/api.php"):
                    title = parse_qs(parts.query).get("titles", [""])[0]
                    page = {"title": title, "revisions": [
                        {"revid": 77, "slots": {"main": {"content": "== discretion =="}}}]}
                    self.reply(200, {"query": {"pages": [page]}})
                elif parts.path == "/v1/models":
                    self.reply(200, {"data": [{"id": "m"}]})
                else:
                    self.reply(404, {})

            def reply(self, code: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake():
    servers = []

    def start(behaviour: str = "ok") -> Fake:
        servers.append(Fake(behaviour))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def connect_config(tmp_path, wiki_host: str, summarizer_url: str, timeout: float = 5.0):
    return write(tmp_path, f"[wiki]\nsite = \"{wiki_host}\"\nscheme = \"http\"\ntimeout = {timeout}\n"
                           f"[summarizer]\nkind = \"llm\"\nmodel = \"m\"\nurl = \"{summarizer_url}\"\n"
                           f"timeout = {timeout}\n")


def checks(out: str) -> dict[str, str]:
    found = {}
    for line in out.splitlines():
        for name in ("database", "wiki", "summarizer", "mail"):
            if line.startswith(f"# {name}: "):
                found[name] = line[len(f"# {name}: "):]
    return found
