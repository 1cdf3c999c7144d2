"""The floor of ``bench/api.py``: a minimal Starlette app doing one INSERT per request.

Not a benchmark itself (the leading underscore): ``bench/api.py`` runs it as a
process, as it runs ``serve``, under the same uvicorn settings, and sends it the
same posts.  ``POST /api/v1/moods/{slug}/posts`` reads the JSON body and inserts
one row (Mood, sender, text, time) into ``floor_posts``, then answers 201 with
the new id.  No authentication, no checks, no events: what any web front to the
database pays at the least.

* SQLite: the insert runs in Starlette's thread pool, on a connection per thread, WAL, ``synchronous=NORMAL``, one ``INSERT`` and a
  commit per request;
* PostgreSQL: an async endpoint on a pool of ``POOL`` psycopg async
  connections in autocommit (an ``asyncio.Queue`` of them), one ``INSERT ...
  RETURNING id`` per request.

Run: ``python bench/_floor_api.py DB_URL`` prints ``{"url": ...}`` once it listens.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import socket
import sqlite3
import sys
import threading

import uvicorn
from sqlalchemy.engine import make_url
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

POOL = 10
TABLE_SQLITE = ("CREATE TABLE IF NOT EXISTS floor_posts (id INTEGER PRIMARY KEY, mood TEXT, "
                "sender TEXT, text TEXT, created_at TEXT)")
TABLE_PG = ("CREATE TABLE IF NOT EXISTS floor_posts (id BIGSERIAL PRIMARY KEY, mood TEXT, "
            "sender TEXT, text TEXT, created_at TIMESTAMPTZ)")
INSERT_SQLITE = "INSERT INTO floor_posts (mood, sender, text, created_at) VALUES (?, ?, ?, ?)"
INSERT_PG = ("INSERT INTO floor_posts (mood, sender, text, created_at) VALUES (%s, %s, %s, %s) "
             "RETURNING id")


def sqlite_app(path: str) -> Starlette:
    local = threading.local()

    def connection() -> sqlite3.Connection:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = sqlite3.connect(path, timeout=30, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    with sqlite3.connect(path) as c:
        c.execute(TABLE_SQLITE)

    def insert(slug: str, text: str) -> int:
        conn = connection()
        cur = conn.execute(INSERT_SQLITE, (slug, "someone", text,
                                           dt.datetime.now(dt.timezone.utc).isoformat()))
        conn.commit()
        return cur.lastrowid

    async def post(request: Request) -> JSONResponse:
        body = await request.json()
        new_id = await run_in_threadpool(insert, request.path_params["slug"], body["text"])
        return JSONResponse({"id": new_id}, status_code=201)

    return Starlette(routes=[Route("/api/v1/moods/{slug}/posts", post, methods=["POST"])])


def pg_app(conninfo: str) -> Starlette:
    import psycopg

    pool: asyncio.Queue = asyncio.Queue()

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        conns = [await psycopg.AsyncConnection.connect(conninfo, autocommit=True)
                 for _ in range(POOL)]
        await conns[0].execute(TABLE_PG)
        for conn in conns:
            pool.put_nowait(conn)
        yield
        for conn in conns:
            await conn.close()

    async def post(request: Request) -> JSONResponse:
        body = await request.json()
        conn = await pool.get()
        try:
            cur = await conn.execute(INSERT_PG, (request.path_params["slug"], "someone",
                                                 body["text"], dt.datetime.now(dt.timezone.utc)))
            (new_id,) = await cur.fetchone()
        finally:
            pool.put_nowait(conn)
        return JSONResponse({"id": new_id}, status_code=201)

    return Starlette(routes=[Route("/api/v1/moods/{slug}/posts", post, methods=["POST"])],
                     lifespan=lifespan)


def app_for(url: str) -> Starlette:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return sqlite_app(parsed.database.replace(".db", "-floor.db"))
    conninfo = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
    return pg_app(conninfo)


class Server(uvicorn.Server):
    """Says where it listens once it does, as ``serve --json`` does."""

    async def startup(self, sockets=None) -> None:
        await super().startup(sockets)
        host, port = self.servers[0].sockets[0].getsockname()[:2]
        print(json.dumps({"url": f"http://{host}:{port}/"}), flush=True)


def main() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app_for(sys.argv[1]), log_level="warning", access_log=False,
                            lifespan="on", timeout_graceful_shutdown=5, server_header=False)
    Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
