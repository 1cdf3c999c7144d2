"""A turn's door to its tools: a Unix socket its runner keeps open while the turn runs.

A sandboxed turn cannot open the store (the database is hidden from it), so the
``mood-poller mcp`` its agent starts relays each request through this socket to
the runner, which holds the store.  The socket lives in a directory of its own,
made for the turn (0700, the agent's user's when it runs as another), bound into
the sandbox; every request carries the turn's token, checked against its hash in
the store, so a stale or foreign token is refused even here.

One JSON object a line each way: ``{"token", "op": "specs"}`` -> ``{"specs": [...]}``,
``{"token", "op": "call", "name", "args"}`` -> ``{"text", "error"}``,
``{"token", "op": "moods"}`` -> ``{"moods": [...]}``, ``{"token", "op": "read",
"mood"}`` -> ``{"text", "error"}``; a refusal is ``{"refused": "why"}``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import socketserver
import tempfile
import threading
from typing import Callable, Optional

from poller import errors
from poller.tools.registry import ToolSpec
from poller.toolserver.callers import Answer, TurnCaller

log = logging.getLogger("poller.toolserver")

SOCKET_NAME = "tools.sock"
LINE_LIMIT = 4 * 1024 * 1024


class Door:
    """The runner's side: serves one turn's requests until :meth:`close`."""

    def __init__(self, store, clock: Callable, owner: Optional[tuple[int, int]] = None):
        self.store, self.clock = store, clock
        self.dir = tempfile.mkdtemp(prefix="mood-turn-")
        self.path = os.path.join(self.dir, SOCKET_NAME)
        door = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                callers: dict[str, TurnCaller] = {}
                for raw in self.rfile:
                    if len(raw) > LINE_LIMIT:
                        break
                    reply = door.answer(raw, callers)
                    self.wfile.write(json.dumps(reply).encode("utf-8") + b"\n")
                    self.wfile.flush()

        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True

        self.server = Server(self.path, Handler)
        os.chmod(self.path, 0o600)
        if owner is not None:
            os.chown(self.dir, *owner)
            os.chown(self.path, *owner)
        self.thread = threading.Thread(target=self.server.serve_forever, name="turn-door",
                                       daemon=True)
        self.thread.start()

    def answer(self, raw: bytes, callers: dict) -> dict:
        try:
            ask = json.loads(raw)
            token, op = str(ask.get("token", "")), ask.get("op")
            caller = callers.get(token)
            if caller is None:
                caller = callers[token] = TurnCaller(self.store, token, self.clock)
            if op == "specs":
                return {"specs": [s.to_json() for s in caller.specs()]}
            if op == "call":
                a = caller.call(ask.get("name"), ask.get("args"))
                return {"text": a.text, "error": a.error}
            if op == "moods":
                return {"moods": caller.moods()}
            if op == "read":
                a = caller.read(str(ask.get("mood", "")))
                return {"text": a.text, "error": a.error}
            return {"refused": f"unknown request {str(op)[:40]!r}"}
        except errors.UserError as exc:
            return {"refused": str(exc)}
        except Exception as exc:  # one bad request must not end the turn's door
            log.warning("turn door: a request failed: %s", type(exc).__name__, exc_info=True,
                        extra={"action": "door_failed"})
            return {"refused": f"the request failed: {type(exc).__name__}"}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        shutil.rmtree(self.dir, ignore_errors=True)


class RemoteCaller:
    """The relaying side, in ``mood-poller mcp``: a :class:`TurnCaller` over the socket."""

    def __init__(self, path: str, token: str, timeout: Optional[float] = None):
        self.token = token
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
        except OSError as exc:
            raise errors.UserError(f"cannot reach the turn's tools at {path}: "
                                   f"{exc.strerror or exc}") from None
        self.file = self.sock.makefile("rwb")
        self.lock = threading.Lock()
        first = self._ask({"op": "specs"})  # the token is checked at once
        self._specs = first["specs"]

    def _ask(self, ask: dict) -> dict:
        with self.lock:
            self.file.write(json.dumps({"token": self.token, **ask}).encode("utf-8") + b"\n")
            self.file.flush()
            line = self.file.readline()
        if not line:
            raise errors.UserError("the turn's tools are closed: its turn has ended")
        reply = json.loads(line)
        if "refused" in reply:
            raise errors.UserError(reply["refused"])
        return reply

    def specs(self) -> list[ToolSpec]:
        return [ToolSpec(s["name"], s["description"], s["parameters"], acting=False)
                for s in self._ask({"op": "specs"})["specs"]]

    def call(self, name: str, args: Optional[dict]) -> Answer:
        try:
            reply = self._ask({"op": "call", "name": name, "args": args or {}})
        except errors.UserError as exc:
            return Answer(f"refused: {exc}", True)
        return Answer(reply["text"], bool(reply["error"]))

    def moods(self) -> list[str]:
        return self._ask({"op": "moods"})["moods"]

    def read(self, slug: str) -> Answer:
        reply = self._ask({"op": "read", "mood": slug})
        return Answer(reply["text"], bool(reply["error"]))
