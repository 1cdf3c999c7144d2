"""Shared helpers of the benchmarks: the machine line, a throwaway database, a world.

Not a benchmark itself (the leading underscore).  Every benchmark runs from a
checkout with plain ``python bench/NAME.py``; this module puts the checkout on
``sys.path`` first.
"""

from __future__ import annotations

import argparse
import atexit
import collections
import datetime as dt
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Iterable, Optional, Sequence

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from poller import config as config_mod, tokens  # noqa: E402
from poller.store import db  # noqa: E402
from poller.models import Mood  # noqa: E402
from poller.store import Store  # noqa: E402

T0 = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.timezone.utc)

CHATTER = [
    "Sounds good to me. I'll pick up the release notes after lunch, unless someone beats me to it.",
    "Logs are here: https://ci.example.org/builds/4471/artifacts/log.txt?lines=200-260#L231",
    "did anyone try the new build on the old laptop? it was slow for me",
    "ok",
    "I think the bigger question is whether the to-do page should live on the wiki at all.",
    "```sql\nSELECT id, text FROM posts WHERE mood_id = ? AND id > ? ORDER BY id LIMIT 200;\n```",
    "明日の会議は十時からです。資料は共有フォルダにあります。",
    "🎉 shipped! thanks all",
    "Let's move the review to Thursday, Wednesday is full of interviews.",
    "Invoice 0048213377 totals 1234567.89; block 26264741 confirmed.",
]


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"machine: {platform.platform()}, {model or cpu}, {os.cpu_count()} CPUs, "
            f"Python {platform.python_version()}, {dt.date.today().isoformat()}")


def parser(doc: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    p.add_argument("--quick", action="store_true", help="Smaller sizes, for a smoke test.")
    p.add_argument("--db", metavar="URL", help="Database URL (default: SQLite in a temp dir).")
    return p


def database(url: str | None = None) -> tuple[str, Store, config_mod.Config]:
    """A fresh, migrated database (SQLite in a new temp dir unless *url* is given)."""
    if url is None:
        where = Path(tempfile.mkdtemp(prefix="mood-poller-bench-"))
        url = f"sqlite:///{where / 'moods.db'}"
    engine = db.make_engine(url)
    db.upgrade(engine)
    cfg = config_mod.Config(db_url=url)
    return url, Store(engine, tokens.counter(cfg.encoding)), cfg


def fresh_database(url: str | None = None) -> tuple[str, Store, config_mod.Config]:
    """As :func:`database`, but a server database given by *url* is emptied first, so a
    benchmark may run several times against one database."""
    if url is not None:
        import sqlalchemy as sa

        from poller import models

        engine = sa.create_engine(url)
        models.Base.metadata.drop_all(engine)
        with engine.begin() as c:
            c.exec_driver_sql("DROP TABLE IF EXISTS alembic_version")
        engine.dispose()
    return database(url)


def build_world(store: Store, moods: int, agents: Sequence[str], people: Sequence[str],
                now: dt.datetime = T0, command: str = "true") -> list[str]:
    """*moods* Moods (m00000...), people with full trust and command agents, in bulk.

    Moods are inserted in one transaction through the models (the store's
    ``add_mood`` is one transaction per Mood, which would dominate set-up).
    """
    slugs = [f"m{i:05d}" for i in range(moods)]
    with store.writing() as s:
        s.add_all(Mood(slug=slug, title=slug, archived=False, created_at=now) for slug in slugs)
    for handle in people:
        store.add_person(handle, "full", now)
    for handle in agents:
        store.add_agent(handle, now, command=command)
    return slugs


def ingest(store: Store, items: list, batch: int = 2_000) -> list[int]:
    ids: list[int] = []
    for i in range(0, len(items), batch):
        ids += store.add_posts(items[i:i + batch])
    return ids


def median(values: Iterable[float]) -> float:
    return statistics.median(list(values))


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def quiet_logs() -> None:
    import logging

    logging.getLogger("poller").setLevel(logging.WARNING)


# -- CPU beside wall time, the machine's load, turns that answer at once --------------------


def load() -> str:
    """The load averages (1, 5, 15 min): the machines are shared, and wall time shows it."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def facts() -> str:
    """The machine line with the cores and the load now."""
    return f"{machine()}; {os.cpu_count()} cores, {load()}"


def commit() -> str:
    """The checkout's commit, and whether its tracked files differ from it."""
    import subprocess

    def git(*args: str) -> str:
        r = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + (" with uncommitted changes" if git("status", "--porcelain", "-uno") else "")


def header() -> str:
    """What a benchmark prints first: the machine, the commit, the load when it starts."""
    return f"{machine()}\ncommit: {commit()}; {load()}"


def ratio(ours: float, floor: float) -> float:
    """*ours* as a multiple of *floor* (both costs: CPU or wall seconds)."""
    return ours / floor if floor > 0 else float("inf")


class Timed:
    """Wall and CPU seconds (this process, every thread) of a ``with`` block."""

    def __enter__(self) -> "Timed":
        import time

        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        import time

        self.wall = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu


class ListLauncher:
    """A launcher that only notes the wakes a cycle started (see :func:`settle`)."""

    detaches = False

    def __init__(self) -> None:
        self.started: list[int] = []

    def start(self, wake_id: int, now: dt.datetime) -> None:
        self.started.append(wake_id)

    def running(self) -> set[int]:
        return set()

    def wait(self, timeout: float | None = None) -> bool:
        return True

    def stop(self) -> None:
        pass


def settle(store: Store, wake_ids: Iterable[int], now: dt.datetime, reply: str = "<silent/>") -> None:
    """Run each turn as an agent answering *reply* at once: claimed, then settled."""
    from poller.turns import settling, wakers
    from poller.store import turns

    for wake_id in wake_ids:
        if turns.claim(store, wake_id, now, os.getpid()) is not None:
            settling.settle_outcome(store, wake_id, wakers.TurnResult("replied", reply=reply), now)


# -- statements: what a piece of work says to the database ----------------------------------


class Statements:
    """Counts the round trips every engine of this process makes to its database, from
    SQLAlchemy's engine and pool events (attached to the classes: every engine counts).

    ``sql``: statements the cursor executes (an ``executemany`` is one; SQLite's
    explicit ``BEGIN`` is one of them); ``begin``: PostgreSQL's ``BEGIN``, which the
    driver sends before a transaction's first statement; ``end``: ``COMMIT`` and
    ``ROLLBACK``; ``ping``: the pre-ping of a pool that pings at every checkout.
    """

    KINDS = ("sql", "begin", "end", "ping")

    def __init__(self) -> None:
        self.counts = dict.fromkeys(self.KINDS, 0)
        self.on = False
        # BENCH_TOP_STATEMENTS=N: the N statements sent most often are printed at exit (by
        # their first words), to see what is left of a figure.
        self.texts: Optional[collections.Counter] = None
        top = int(os.environ.get("BENCH_TOP_STATEMENTS") or 0)
        if top:
            self.texts = collections.Counter()
            atexit.register(self._print_top, top)

    def _sql(self, _conn=None, _cursor=None, statement="", *_args) -> None:
        self.counts["sql"] += 1
        if self.texts is not None:
            self.texts[" ".join(statement.split())[:110]] += 1

    def _print_top(self, top: int) -> None:
        lines = [f"the {top} statements sent most often (process {os.getpid()}):"]
        lines += [f"{n:8,}  {text}" for text, n in self.texts.most_common(top)]
        print("\n".join(lines), file=sys.stderr)

    @staticmethod
    def _autocommit(conn) -> bool:
        """A connection in autocommit (or, on SQLite, running one read: ``db.SINGLE_READ``):
        SQLAlchemy still fires begin and rollback for it, but the driver sends neither."""
        options = conn.get_execution_options()
        return options.get("isolation_level") == "AUTOCOMMIT" or bool(options.get(db.SINGLE_READ))

    def _begin(self, conn) -> None:
        # SQLite's BEGIN is a statement counted as sql
        if conn.dialect.name != "sqlite" and not self._autocommit(conn):
            self.counts["begin"] += 1

    def _end(self, conn, *_args) -> None:
        if not self._autocommit(conn):
            self.counts["end"] += 1

    def _checkout(self, _dbapi_conn, _record, proxy) -> None:
        if getattr(proxy._pool, "_pre_ping", False):
            self.counts["ping"] += 1

    def _events(self):
        import sqlalchemy as sa
        from sqlalchemy.pool import Pool

        return [(sa.engine.Engine, "before_cursor_execute", self._sql),
                (sa.engine.Engine, "begin", self._begin),
                (sa.engine.Engine, "commit", self._end),
                (sa.engine.Engine, "rollback", self._end),
                (Pool, "checkout", self._checkout)]

    def start(self) -> "Statements":
        import sqlalchemy as sa

        if not self.on:
            for target, name, fn in self._events():
                sa.event.listen(target, name, fn)
            self.on = True
        return self

    def stop(self) -> None:
        import sqlalchemy as sa

        if self.on:
            for target, name, fn in self._events():
                sa.event.remove(target, name, fn)
            self.on = False

    def __enter__(self) -> "Statements":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def per(self, n: int, what: str) -> str:
        """``10.9 statements per post (SQL 6.2, BEGIN 1.0, COMMIT/ROLLBACK 2.2, pre-ping 1.5)``."""
        if not n:
            return f"no {what}s"
        names = {"sql": "SQL", "begin": "BEGIN", "end": "COMMIT/ROLLBACK", "ping": "pre-ping"}
        parts = ", ".join(f"{names[k]} {self.counts[k] / n:.2f}" for k in self.KINDS if self.counts[k])
        return f"{self.total / n:.2f} statements per {what} ({parts})"
