"""Running the front door: uvicorn over the app, and (``--with-poller``) the poller
beside it in a thread (its cycles are recorded for ``/healthz`` by ``Poller.run``)."""

from __future__ import annotations

import signal
import socket
import sys
import threading

import uvicorn

from poller.cycle import loop
from poller.web.app import Options, create_app


class Server(uvicorn.Server):
    """uvicorn's server, saying where it listens once it does (``--port 0`` picks one):
    ``announce`` is called with the URL.  Stopping, it ends the app's event streams
    first, so it need not wait them out."""

    def __init__(self, config: uvicorn.Config, announce=None):
        super().__init__(config)
        self.door = getattr(getattr(config.app, "state", None), "door", None)
        self.announce = announce or (lambda url: print(f"serving on {url}", file=sys.stderr,
                                                       flush=True))

    async def startup(self, sockets=None):
        await super().startup(sockets)
        if self.started:
            for server in self.servers:
                for sock in server.sockets:
                    host, port = sock.getsockname()[:2]
                    self.announce(f"http://{host}:{port}/")

    async def shutdown(self, sockets=None):
        if self.door is not None:
            await self.door.feed.close()
        await super().shutdown(sockets)


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to HOST:PORT, or OSError (in use, not an address of this machine)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(False)
    return sock


def build(store, config, clock, dials, *, host: str, port: int, with_poller: bool,
          interval: float, **options):
    """The server, the event that stops the poller, and the poller's thread (or None);
    *options* are :class:`poller.web.app.Options`."""
    web = create_app(store, config, clock=clock, dials=dials,
                     options=Options(poller_interval=interval if with_poller else None,
                                     **options))
    server = Server(uvicorn.Config(web, host=host, port=port, log_level="warning",
                                   access_log=False, lifespan="on",
                                   timeout_graceful_shutdown=5, server_header=False))
    stop = threading.Event()
    thread = None
    if with_poller:
        poller = loop.Poller(store, config, dials=dials.current, detach=False)  # it beats as it runs
        poller.check_catalogs()  # an invalid activities catalog stops serve as it would run
        thread = threading.Thread(target=_cycle, args=(poller, interval, stop, clock),
                                  name="poller")
    return server, stop, thread


def _cycle(poller, interval: float, stop: threading.Event, clock) -> None:
    """The poller beside the front door.  A store whose file is gone stops it (it
    logs why); the door goes on answering, refusing with the reason, and
    ``/healthz`` names the file."""
    from poller import errors

    try:
        poller.run(interval, stop, clock)
    except errors.StoreGone:
        pass


def run(store, config, clock, *, host: str, port: int, with_poller: bool, interval: float,
        announce=None, **options) -> None:
    """Serve until SIGTERM or SIGINT; with the poller, its running turns get their grace.

    Raises UserError when HOST:PORT cannot be listened on (in use, not this machine's).
    """
    from poller import errors
    from poller.store import bell
    from wiki_rules.source import DialSource

    dials = DialSource.from_config(config, store.engine)
    try:
        sock = listen(host, port)
    except OSError as exc:
        raise errors.UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    server, stop, thread = build(store, config, clock, dials, host=host, port=port,
                                 with_poller=with_poller, interval=interval, **options)
    if announce is not None:
        server.announce = announce
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if thread is not None:
        thread.start()
    try:
        server.run(sockets=[sock])  # returns on SIGTERM/SIGINT, once requests are done
    finally:
        stop.set()
        bell.BELL.ring()  # the poller may be asleep between cycles
        if thread is not None:
            thread.join()  # the poller's own shutdown: grace for running turns
