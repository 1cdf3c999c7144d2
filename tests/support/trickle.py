"""A web server on a loopback port that answers one byte at a time and never finishes.

It runs as a subprocess, so its threads and sockets are not counted with the
test's, and it keeps every connection trickling until the client closes it.
``part`` says where the trickle starts: in the ``headers`` (the status line
comes, the header block never ends) or in the ``body`` (the headers come
whole and promise a body that never does).  ``open_connections()`` asks it how
many connections it still holds.

Use the ``trickle`` fixture, parametrized indirectly with the part::

    from support.trickle import trickle  # noqa: F401  (a pytest fixture)
"""

from __future__ import annotations

import subprocess
import sys
import urllib.request

import pytest

INTERVAL_S = 0.1  # between two bytes: well under any per-read timeout a client sets

_SERVER = r'''
import socket, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

part, interval = sys.argv[1], float(sys.argv[2])
held = set()
lock = threading.Lock()

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/_connections":
            with lock:
                count = len(held) - 1  # not this one
            body = str(count).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.trickle()

    do_POST = do_GET

    def trickle(self):
        with lock:
            held.add(self)
        try:
            if part == "body":
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 b"Content-Length: 1000000\r\n\r\n{")
                self.wfile.flush()
                drip = b" "
            else:
                self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Pad: ")
                self.wfile.flush()
                drip = b"a"
            while True:
                time.sleep(interval)
                self.wfile.write(drip)
                self.wfile.flush()
        except OSError:
            pass  # the client went away
        finally:
            with lock:
                held.discard(self)
            self.close_connection = True

    def setup(self):
        super().setup()
        with lock:
            held.add(self)

    def finish(self):
        with lock:
            held.discard(self)
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
'''


class Trickle:
    def __init__(self, part: str) -> None:
        self.part = part
        self.proc = subprocess.Popen([sys.executable, "-c", _SERVER, part, str(INTERVAL_S)],
                                     stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline())

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def open_connections(self) -> int:
        """How many client connections the server still holds (not counting this ask)."""
        with urllib.request.urlopen(f"http://{self.host}/_connections", timeout=30) as answer:
            return int(answer.read())

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()


@pytest.fixture
def trickle(request):
    server = Trickle(getattr(request, "param", "headers"))
    yield server
    server.stop()
