"""The front door, served for real in tests: uvicorn on a free loopback port.

``Served`` runs :func:`poller.web.app.create_app` under uvicorn in a thread of
the test process (``start``), or the real ``mood-poller serve`` as a
subprocess (``serve_process``), and hands out an httpx client per person.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import re
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import httpx

from support.waiting import wait_for

T0 = dt.datetime(2031, 5, 6, 9, 0, tzinfo=dt.timezone.utc)  # the tests' clock starts here


def store_for(url: str):
    from poller import tokens
    from poller.store import Store, db

    return Store(db.make_engine(url), tokens.counter())


def config_for(url: str):
    from poller import config

    return config.load(None, db_url=url)


@dataclass
class Served:
    url: str
    store: object
    app: object = None
    server: object = None
    thread: Optional[threading.Thread] = None
    tokens: dict = field(default_factory=dict)

    @property
    def door(self):
        return self.app.state.door

    def client(self, token: Optional[str] = None, **kwargs) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60, **kwargs)

    def person(self, handle: str, trust: str = "full", operator: bool = False) -> str:
        """Add the person HANDLE and return a new token of theirs."""
        from poller.store import access

        self.store.add_person(handle, trust, T0)
        if operator:
            access.set_operator(self.store, handle, True)
        token, _ = access.new_token(self.store, handle, T0)
        self.tokens[handle] = token
        return token

    def stop(self) -> None:
        if self.server is not None:
            self.server.should_exit = True
            self.thread.join(timeout=60)


def start(db_url: str, clock=None, **options) -> Served:
    """The app over the store at *db_url*, under uvicorn in a thread, on a free port."""
    import uvicorn

    from poller.clock import Clock
    from poller.web.app import Options, create_app
    from poller.web.serving import Server, listen

    store = store_for(db_url)
    app = create_app(store, config_for(db_url), clock=clock or Clock.at(T0),
                     options=Options(**options))
    sock = listen("127.0.0.1", 0)
    server = Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on",
                                   timeout_graceful_shutdown=1), announce=lambda line: None)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_for(lambda: server.started, what="uvicorn to start")
    port = sock.getsockname()[1]
    return Served(f"http://127.0.0.1:{port}", store, app, server, thread)


class Caught(logging.Handler):
    """Every record logged with an exception attached: a server error, a traceback."""

    LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.asgi", "")

    def __init__(self):
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        if record.exc_info and record not in self.records:
            self.records.append(record)

    def lines(self) -> list[str]:
        return [f"{r.name}: {r.getMessage()}: {r.exc_info[1]!r}" for r in self.records]


@contextlib.contextmanager
def caught_errors():
    """A :class:`Caught` listening to the server's loggers while in the block."""
    handler = Caught()
    for name in Caught.LOGGERS:
        logging.getLogger(name).addHandler(handler)
    try:
        yield handler
    finally:
        for name in Caught.LOGGERS:
            logging.getLogger(name).removeHandler(handler)


@contextlib.contextmanager
def lobby(cli, **options):
    """The app over *cli*'s database with the Mood ``lobby``, served while in the block."""
    s = start(cli.db_url, **options)
    s.cli = cli
    try:
        cli("mood", "add", "lobby", "--title", "The lobby")
        yield s
    finally:
        s.stop()


@dataclass
class ServeProcess:
    proc: subprocess.Popen
    url: str
    log: Path

    def stop(self, sig=signal.SIGTERM, timeout: float = 120) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)


def serve_process(db_url: str, tmp_path: Path, *args: str, config: Optional[Path] = None,
                  env: Optional[dict] = None) -> ServeProcess:
    """The real ``mood-poller serve --port 0 ARGS`` as a subprocess, once it listens."""
    log = tmp_path / "serve.log"
    argv = [sys.executable, "-m", "poller", "--db", db_url]
    if config is not None:
        argv += ["--config", str(config)]
    argv += ["serve", "--port", "0", *args]
    fh = open(log, "w")
    proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env={**os.environ, **(env or {})})
    fh.close()

    def announced():
        if proc.poll() is not None:
            raise AssertionError(f"serve exited {proc.returncode}: {log.read_text()}")
        m = re.search(r"serving on (http://[\d.]+:\d+)/", log.read_text())
        return m.group(1) if m else None

    return ServeProcess(proc, wait_for(announced, what="serve to listen"), log)


class Events:
    """An event stream read in a thread: every event and comment, in order."""

    def __init__(self, client: httpx.Client, path: str, headers: Optional[dict] = None):
        self.items: list[dict] = []
        self.status: Optional[int] = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(client, path, headers or {}),
                                        daemon=True)
        self._thread.start()

    def _read(self, client, path, headers) -> None:
        import json

        with client.stream("GET", path, headers=headers) as r:
            self.status = r.status_code
            item: dict = {}
            for line in r.iter_lines():
                if self._stop.is_set():
                    return
                if line.startswith(":"):
                    self.items.append({"comment": line[1:].strip()})
                elif line == "":
                    if item:
                        if "data" in item:
                            item["data"] = json.loads(item["data"])
                        self.items.append(item)
                    item = {}
                else:
                    key, _, value = line.partition(": ")
                    item[key] = value

    def of(self, event: str) -> list[dict]:
        return [i for i in self.items if i.get("event") == event]

    def wait(self, predicate, what: str):
        return wait_for(lambda: predicate(self), what=what)

    def close(self) -> None:
        self._stop.set()


def csrf_of(html: str) -> str:
    return re.search(r'name="csrf" value="([0-9a-f]+)"', html).group(1)


def signed_in(s, token: str):
    """A client that signed in through the sign-in form, as a person would."""
    c = s.client(follow_redirects=False)
    form = c.get("/signin")
    assert form.status_code == 200
    r = c.post("/signin", data={"token": token, "csrf": csrf_of(form.text), "next": "/m/lobby"})
    assert r.status_code == 303 and r.headers["location"] == "/m/lobby", r.text
    return c
