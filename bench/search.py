"""Search over posts: query latency, the index's size and build time, and what it costs
each post that comes in.

N posts (default 1,000,000; ``--quick``: 50,000) over 100 Moods from 20 people, each
5 to 30 words drawn from a vocabulary of 20,000 made-up words by a Zipf law (a few
words in many posts, most in few), plus a line of ``_common.CHATTER`` now and then.
They are inserted in bulk at migration 0015 (no index yet); then:

* the migration to 0016 builds the index for them (timed), and its size is read
  (SQLite: the FTS5 table's pages in ``dbstat``; PostgreSQL: the GIN index);
* queries through ``poller.store.search.search`` (the store's whole path: the
  words quoted, matched and ranked, the 20 best read and their excerpts marked),
  p50 and p99 of wall time per kind of query, each kind cycling through 20
  different words of the same frequency;
* the floors, measured in the same run: a plain indexed lookup of one post by id
  (a read transaction with one query: what any answer costs at least) and the
  plain ``SELECT id FROM posts WHERE text LIKE '%word%' ORDER BY id DESC LIMIT 20``
  search would otherwise be, for a word in no post (a scan of every post), a rare
  word and a common one (those stop at the 20 newest posts holding them);
* posts through ``Store.add_posts`` in batches of 1,000, with the index and
  without it: on SQLite alternately with ``core.index_for_search`` and with it made
  a no-op (5 batches each), on PostgreSQL before the GIN index is built and after:
  what the index costs a post that comes in.

``--db URL`` runs on that database (emptied first); ``--pg`` starts a throwaway
PostgreSQL (``tests/support/pg.py``).  Run: ``python bench/search.py [--quick]
[--db URL | --pg] [--repeats R]``.
"""

from __future__ import annotations

import datetime as dt
import itertools
import random
import subprocess
import sys
import tempfile
import time

import sqlalchemy as sa

import _common
from _common import REPO, T0

from poller.models import Mood, Participant, Post  # noqa: E402
from poller.store import db, search  # noqa: E402

MOODS, PEOPLE, VOCABULARY = 100, 20, 20_000
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi", "pa", "den", "gor", "lin", "ber",
             "tes", "qua", "zo", "fin", "mar", "ol", "ek", "sun", "dra", "pel", "wi"]
# Kinds of query: (name, the ranks of the words asked for, filters).
KINDS = [("rare word", (5_000,), {}), ("common word", (3,), {}), ("two words", (60, 150), {}),
         ("common and rare", (2, 3_000), {}), ("word in one Mood", (40,), {"mood": True}),
         ("word by one sender", (40,), {"sender": True}), ("no such word", (None,), {})]
INGESTED = 10_000  # posts' offset in time for the ingest runs


def commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        return "?"


def vocabulary(rng: random.Random) -> list[str]:
    words: dict[str, None] = {}
    while len(words) < VOCABULARY:
        words["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))] = None
    return list(words)


def texts(n: int, words: list[str], rng: random.Random) -> list[str]:
    weights = list(itertools.accumulate(1 / (r + 1) ** 1.07 for r in range(len(words))))
    out = []
    for i in range(n):
        said = " ".join(rng.choices(words, cum_weights=weights, k=rng.randint(5, 30)))
        out.append(f"{said}. {_common.CHATTER[i % len(_common.CHATTER)]}" if i % 7 == 0 else said)
    return out


def build(url: str | None, n: int) -> tuple[str, object, list[str], float]:
    """A database at 0015 holding *n* posts: (url, store, the vocabulary, seconds)."""
    from alembic import command

    from poller import tokens
    from poller.store import Store

    if url is None:
        url = f"sqlite:///{tempfile.mkdtemp(prefix='mood-poller-bench-')}/moods.db"
    else:  # emptied, as _common.fresh_database empties one, the search index too
        from poller import models

        engine = sa.create_engine(url)
        models.Base.metadata.drop_all(engine)
        with engine.begin() as c:
            c.exec_driver_sql("DROP TABLE IF EXISTS alembic_version")
            c.exec_driver_sql("DROP TABLE IF EXISTS posts_fts")
        engine.dispose()
    engine = db.make_engine(url)
    command.upgrade(db.alembic_config(engine), "0015")
    store = Store(engine, tokens.counter())
    started = time.monotonic()
    rng = random.Random(16)
    words = vocabulary(rng)
    with store.writing() as s:
        s.add_all(Mood(slug=f"m{i:03d}", title=f"m{i:03d}", archived=False, created_at=T0)
                  for i in range(MOODS))
        s.add_all(Participant(handle=f"p{i:02d}", handle_key=f"p{i:02d}", kind="person",
                              trust="full", created_at=T0) for i in range(PEOPLE))
    with store.reading() as s:
        mood_ids = list(s.scalars(sa.select(Mood.id)))
        people = list(s.scalars(sa.select(Participant.id)))
    chunk = 50_000
    for k in range(0, n, chunk):
        batch = texts(min(chunk, n - k), words, rng)
        rows = [dict(mood_id=mood_ids[(k + i) % MOODS], sender_id=people[(k + i) % PEOPLE],
                     created_at=T0 + dt.timedelta(seconds=k + i), text=t, kind="post",
                     reply_to=None, tokens=len(t) // 4) for i, t in enumerate(batch)]
        with store.writing() as s:
            s.connection().execute(sa.insert(Post.__table__), rows)
    return url, store, words, time.monotonic() - started


def index_size(store) -> tuple[int, int, int]:
    """Bytes of (the search index, the words column PostgreSQL keeps for it, the posts
    table with its own indexes but those two)."""
    with store.reading() as s:
        if store.dialect == "sqlite":
            size = lambda like: s.scalar(sa.text(  # noqa: E731
                "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name LIKE :n"), {"n": like})
            return size("posts_fts%"), 0, size("posts") + size("ix_posts%")
        index = s.scalar(sa.text("SELECT pg_relation_size('ix_posts_fts')"))
        words = s.scalar(sa.text("SELECT COALESCE(SUM(pg_column_size(search_words)), 0) "
                                 "FROM posts"))
        total = s.scalar(sa.text("SELECT pg_total_relation_size('posts')"))
        return index, words, total - index - words


def timed(fn, repeats: int) -> list[float]:
    out = []
    for i in range(repeats):
        started = time.perf_counter()
        fn(i)
        out.append(time.perf_counter() - started)
    return out


def queries(store, words: list[str], repeats: int) -> list[tuple[str, list[float], float]]:
    """Each kind of query *repeats* times: (kind, seconds each, mean hits)."""
    out = []
    for name, ranks, filters in KINDS:
        asked = []
        for j in range(20):
            asked.append(" ".join("zzyzxq" if r is None else words[r + j] for r in ranks))
        hits = []

        def run(i):
            kw = {}
            if filters.get("mood"):
                kw["mood"] = f"m{i % MOODS:03d}"
            if filters.get("sender"):
                kw["sender"] = f"p{i % PEOPLE:02d}"
            hits.append(len(search.search(store, asked[i % len(asked)], **kw)))

        out.append((name, timed(run, repeats), sum(hits) / len(hits)))
    return out


def floors(store, words: list[str], n: int, repeats: int) -> list[tuple[str, list[float]]]:
    def lookup(i):
        with store.reading() as s:
            s.execute(sa.select(Post.id, Post.text).where(Post.id == 1 + (i * 7919) % n)).all()

    def like(rank):
        def run(i):
            with store.reading() as s:
                s.execute(sa.select(Post.id).where(Post.text.like(f"%{words[rank + i % 20]}%"))
                          .order_by(Post.id.desc()).limit(20)).all()
        return run

    def scan(i):
        with store.reading() as s:
            s.execute(sa.select(Post.id).where(Post.text.like(f"%zzyzxq{i}%"))
                      .order_by(Post.id.desc()).limit(20)).all()

    scans = max(5, repeats // 20)  # a scan of every post: fewer of them
    return [("indexed lookup of one post", timed(lookup, repeats)),
            ("LIKE, no such word", timed(scan, scans)),
            ("LIKE, rare word", timed(like(5_000), scans)),
            ("LIKE, common word", timed(like(3), scans))]


def ingest_rates(store, words: list[str], offset: int, indexed: list[bool]) -> dict:
    """Posts/s through Store.add_posts (the text judged, its tokens counted, the posts and
    mentions written), one batch of 1,000 a transaction, a batch for each of *indexed*
    (False: SQLite's ``core.index_for_search`` made a no-op): the median for each."""
    from poller.store import core

    rng = random.Random(17 + offset)
    store.counter.count("warm up")
    rates: dict[bool, list[float]] = {True: [], False: []}
    keep = core.index_for_search
    for k, index in enumerate(indexed):
        items = [(f"m{i % MOODS:03d}", f"p{i % PEOPLE:02d}", t,
                  T0 + dt.timedelta(days=1, seconds=offset + k * 1_000 + i))
                 for i, t in enumerate(texts(1_000, words, rng))]
        core.index_for_search = keep if index else (lambda s, ids: None)
        try:
            started = time.perf_counter()
            store.add_posts(items)
            rates[index].append(1_000 / (time.perf_counter() - started))
        finally:
            core.index_for_search = keep
    return {k: _common.median(v) for k, v in rates.items() if v}


def ms(values: list[float], p: float) -> str:
    return f"{_common.percentile(values, p) * 1000:,.2f}"


def main() -> None:
    p = _common.parser(__doc__)
    p.add_argument("--pg", action="store_true", help="Start a throwaway PostgreSQL for the run.")
    p.add_argument("--repeats", type=int, default=None, help="Queries of each kind (default "
                                                             "200; --quick: 100).")
    p.add_argument("--posts", type=int, default=None, help="How many posts (default 1,000,000; "
                                                           "--quick: 50,000).")
    args = p.parse_args()
    _common.quiet_logs()
    n = args.posts or (50_000 if args.quick else 1_000_000)
    repeats = args.repeats or (100 if args.quick else 200)
    print(_common.facts(), f"commit {commit()}")
    server = None
    if args.pg:
        sys.path.insert(0, str(REPO / "tests"))
        from support import pg

        server = pg.start()
        args.db = server.new_database()
    try:
        url, store, words, built = build(args.db, n)
        print(f"{store.dialect}: {n:,} posts over {MOODS} Moods inserted in bulk in {built:.1f} s")
        rates = {}
        if store.dialect != "sqlite":  # before the index is built (SQLite's ingest needs it)
            rates = ingest_rates(store, words, 0, [False] * 5)
        started = time.monotonic()
        db.upgrade(store.engine)
        print(f"index built for them by the migration in {time.monotonic() - started:.1f} s")
        fts, column, table = index_size(store)
        kept = f", its words column {column / 2**20:,.1f} MiB" if column else ""
        print(f"index size {fts / 2**20:,.1f} MiB ({fts / n:,.0f} bytes a post){kept}; the "
              f"posts table with its own indexes {table / 2**20:,.1f} MiB")
        search.search(store, words[0])  # warm: the first query loads pages
        print(f"\nqueries ({repeats} of each, the 20 best; ms of wall time):")
        print(f"  {'kind':<22} {'p50':>9} {'p99':>9} {'hits':>6}")
        results = queries(store, words, repeats)
        for name, seconds, hits in results:
            print(f"  {name:<22} {ms(seconds, 50):>9} {ms(seconds, 99):>9} {hits:>6.1f}")
        print("floors, in the same run:")
        measured = floors(store, words, n, repeats)
        for name, seconds in measured:
            print(f"  {name:<28} p50 {ms(seconds, 50):>9} ms, p99 {ms(seconds, 99):>9} ms "
                  f"({len(seconds)} runs)")
        lookup = _common.median(measured[0][1])
        worst = max(_common.median(s) for _, s, _ in results)
        print(f"slowest kind's p50 / indexed lookup p50: {worst / lookup:,.1f}x; rare word's "
              f"p50 / LIKE's for a word in no post (a scan of every post): "
              f"{_common.median(results[0][1]) / _common.median(measured[1][1]):.3f}x")
        alternate = [True, False] * 5 if store.dialect == "sqlite" else [True] * 5
        rates = {**rates, **ingest_rates(store, words, INGESTED, alternate)}
        print(f"\ningest through Store.add_posts, batches of 1,000, median of 5: "
              f"{rates[True]:,.0f} posts/s with the index, {rates[False]:,.0f} without "
              f"(with / without: {rates[True] / rates[False]:.2f})")
        print(f"({_common.load()} at the end)")
        store.engine.dispose()
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
