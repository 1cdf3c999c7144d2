"""How long does a wake take from decided to recorded, on the path the poller runs?

A Mood of 5,000 posts of mixed content (prose, code, URLs, emoji, CJK, long
numbers), ingested through ``Store.add_posts`` (token counts stored once, as
in production).  Each run posts one mention of a different agent (so every
wake reads the Mood's full recent history: none of them has spoken there) and
runs one real, committing cycle (``Poller.tick``) with ``listening =
mentions``.  Inside that cycle the bench times only the three steps that
turn a decided wake into a recorded one, through ``poller.cycle.drafts``:

- **gather**: the database reads of what the wake says (the newest
  ``reads.HISTORY_POSTS`` posts and the count of older ones, the optional
  lines), inside the deciding transaction;
- **compose**: the catch-up fitted to the budget, the digest of the rest and
  the frame (no transaction open);
- **record**: the second claim, the fingerprint check, the wake row, the posts
  it answers, the decision, and the commit of that transaction.

CPU time (``time.process_time``: the machine is shared, and wall time lies
under load) and wall time, medians over the runs.  The fractions say how much
of the three steps is tokenising (``tokens.Counter``), rendering (Jinja), the
database (gather + record) and the rest (fitting, escaping, the digest).

Then the fill: the same Mood composed at larger ``catch_up_tokens`` budgets
(what share of the budget the catch-up uses).

The floor, in the same run, after each of our wakes: what writing a wake
from the same Mood costs with nothing in between, on a bare driver connection:
one SELECT of the newest ``reads.HISTORY_POSTS`` posts with their senders'
handles, their lines joined into one text, one INSERT of the wake and one of
the post it answers (into ``floor_wakes``, ``floor_wake_posts``) and a commit.
It reads no optional lines, fits no budget and checks nothing, so it is a
floor, not a rival.  Ours, the floor and the ratio (CPU), and the statements
of each cycle per wake (and of gather alone), counted with SQLAlchemy engine
events (``_common.Statements``).

Target: median <= 5 ms CPU for gather + compose + record on the 5,000-post
Mood at a 10,000-token budget, with the catch-up 95-100 % full.
Run: ``python bench/compose.py [--quick] [--db URL]``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import random
import statistics
import time

import _common

import jinja2  # noqa: E402
import sqlalchemy as sa  # noqa: E402

from poller.cycle import drafts, loop  # noqa: E402
from poller import tokens
from poller.store import reads  # noqa: E402
from poller.models import Wake  # noqa: E402

POSTS = 5_000
BUDGET = 10_000
RUNS = 50
FILL_BUDGETS = (10_000, 17_000, 20_000, 24_000)
TARGET_MS = 5.0
PEOPLE = ("alice", "bob", "carol", "dmitri", "eun-ji")
T0 = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.timezone.utc)

SAMPLES = [
    "Sounds good to me. I'll pick up the release notes after lunch, unless someone beats me to it.",
    "def settle(turn):\n    if turn.ok:\n        return post(turn.reply)\n    return silent(turn)\n",
    "Logs are here: https://ci.example.org/builds/4471/artifacts/log.txt?lines=200-260#L231",
    "🎉🎉 shipped! 👏 thanks all 🙌",
    "明日の会議は十時からです。資料は共有フォルダにあります。",
    "Invoice 0048213377 totals 1234567.89; block 26264741 confirmed at 1714567890123.",
    "Could @ada look at why the quiet timer doubled twice? It went 3000 → 6000 → 12000 overnight.",
    "```sql\nSELECT id, text FROM posts WHERE mood_id = ? AND id > ? ORDER BY id LIMIT 200;\n```",
    "ok",
    "I think the bigger question is whether the to-do page should live on the wiki at all. " * 3,
]


class Clock:
    """CPU and wall seconds spent inside the wrapped calls (not re-entrant)."""

    def __init__(self) -> None:
        self.cpu = self.wall = 0.0
        self.calls = 0
        self._depth = 0

    @contextlib.contextmanager
    def timing(self):
        self._depth += 1
        if self._depth > 1:  # a wrapped call inside another: counted once, outside
            try:
                yield
            finally:
                self._depth -= 1
            return
        c, w = time.process_time(), time.perf_counter()
        try:
            yield
        finally:
            self.cpu += time.process_time() - c
            self.wall += time.perf_counter() - w
            self.calls += 1
            self._depth -= 1

    def take(self) -> tuple[float, float]:
        out = (self.cpu, self.wall)
        self.cpu = self.wall = 0.0
        self.calls = 0
        return out


def wrap(owner, name: str, clock: Clock) -> None:
    inner = getattr(owner, name)

    def timed(*args, **kwargs):
        with clock.timing():
            return inner(*args, **kwargs)

    setattr(owner, name, timed)


class Probe:
    """Clocks on the steps of the real path and on what compose is made of."""

    def __init__(self) -> None:
        self.steps = {name: Clock() for name in ("gather", "compose", "record")}
        self.tokenise, self.render = Clock(), Clock()
        self.statements = _common.Statements().start()
        self.gather_statements = 0
        wrap(drafts, "gather", self.steps["gather"])
        gather = drafts.gather

        def counted(*args, **kwargs):
            before = self.statements.total
            try:
                return gather(*args, **kwargs)
            finally:
                self.gather_statements += self.statements.total - before

        drafts.gather = counted
        wrap(drafts, "compose_text", self.steps["compose"])
        for name in ("count", "count_many", "clip"):
            wrap(tokens.Counter, name, self.tokenise)
        wrap(jinja2.environment.Template, "render", self.render)
        # The record step runs until its transaction has committed, which
        # happens when the loop leaves the transaction it was called in.
        self._record_started: tuple[float, float] | None = None
        original = drafts.record

        def record(*args, **kwargs):
            self._record_started = (time.process_time(), time.perf_counter())
            return original(*args, **kwargs)

        drafts.record = record
        sa.event.listen(sa.orm.Session, "after_commit", self._committed)

    def _committed(self, session) -> None:
        if self._record_started is not None:
            c, w = self._record_started
            clock = self.steps["record"]
            clock.cpu += time.process_time() - c
            clock.wall += time.perf_counter() - w
            self._record_started = None

    def take(self) -> tuple[dict, tuple, tuple]:
        steps = {name: clock.take() for name, clock in self.steps.items()}
        return steps, self.tokenise.take(), self.render.take()

    def close(self) -> None:
        sa.event.remove(sa.orm.Session, "after_commit", self._committed)
        self.statements.stop()


def build(args):
    _, store, cfg = _common.fresh_database(args.db)
    posts = 1_000 if args.quick else POSTS
    runs = 10 if args.quick else RUNS
    agents = [f"ada{i:02d}" for i in range(runs + 1 + len(FILL_BUDGETS))]
    slug = _common.build_world(store, 1, agents, PEOPLE, now=T0 - dt.timedelta(days=5))[0]
    rng = random.Random(42)
    start = T0 - dt.timedelta(minutes=posts)
    items = [(slug, PEOPLE[i % len(PEOPLE)], rng.choice(SAMPLES), start + dt.timedelta(minutes=i))
             for i in range(posts)]
    _common.ingest(store, items)
    store.set_settings({"listening": "mentions", "max_wakes_per_hour": "600",
                        "catch_up_tokens": str(BUDGET)}, T0)
    return store, cfg, slug, agents, runs


def mention(store, slug: str, agent: str, at: dt.datetime) -> None:
    store.add_post(slug, "alice", f"@{agent} can you summarise where we are?", at)


def floor_tables(store) -> None:
    key = "INTEGER PRIMARY KEY" if store.dialect == "sqlite" else "BIGSERIAL PRIMARY KEY"
    with store.engine.begin() as c:
        for table in ("floor_wakes", "floor_wake_posts"):
            c.exec_driver_sql(f"DROP TABLE IF EXISTS {table}")
        c.exec_driver_sql(f"CREATE TABLE floor_wakes (id {key}, agent_id INTEGER, mood_id INTEGER, "
                          "text TEXT, created_at TEXT)")
        c.exec_driver_sql("CREATE TABLE floor_wake_posts (wake_id BIGINT, post_id BIGINT)")


def floor_wake(store, slug: str, agent: str, at: dt.datetime) -> float:
    """The floor: the newest posts of the Mood read, joined into a text and written as a
    wake with the post it answers, then committed, on a bare driver connection.
    CPU seconds of that (the ids it needs are looked up first, outside the timing)."""
    with store.engine.connect() as c:
        mood_id = c.exec_driver_sql(f"SELECT id FROM moods WHERE slug = '{slug}'").scalar()
        agent_id = c.exec_driver_sql(
            f"SELECT id FROM participants WHERE handle_key = '{agent}'").scalar()
    m = "?" if store.dialect == "sqlite" else "%s"
    returning = "" if store.dialect == "sqlite" else " RETURNING id"
    raw = store.engine.raw_connection()
    try:
        cur = raw.cursor()
        with _common.Timed() as t:
            cur.execute("SELECT p.id, s.handle, p.text FROM posts p JOIN participants s "
                        f"ON s.id = p.sender_id WHERE p.mood_id = {m} ORDER BY p.id DESC "
                        f"LIMIT {reads.HISTORY_POSTS}", (mood_id,))
            rows = cur.fetchall()
            text = "\n".join(f"[{handle}] {body}" for _, handle, body in reversed(rows))
            cur.execute(f"INSERT INTO floor_wakes (agent_id, mood_id, text, created_at) "
                        f"VALUES ({m}, {m}, {m}, {m}){returning}",
                        (agent_id, mood_id, text, at.isoformat()))
            wake_id = cur.lastrowid if store.dialect == "sqlite" else cur.fetchone()[0]
            cur.execute(f"INSERT INTO floor_wake_posts (wake_id, post_id) VALUES ({m}, {m})",
                        (wake_id, rows[0][0]))
            raw.commit()
        cur.close()
    finally:
        raw.close()
    return t.cpu


def timed_runs(store, cfg, slug, agents, runs):
    poller = loop.Poller(store, cfg, launcher=_common.ListLauncher())
    poller.tick(T0)  # the first cycle: listening from now, the 5,000 posts are history
    floor_tables(store)
    probe = Probe()
    samples, floors, cycle_statements, gather_statements = [], [], [], []
    now = T0
    for i in range(runs + 1):  # the first run is the cold one: nothing remembered yet
        now += dt.timedelta(seconds=30)
        mention(store, slug, agents[i], now)
        probe.take()
        before, probe.gather_statements = probe.statements.total, 0
        wakes = poller.tick(now).wakes
        if len(wakes) != 1:
            raise SystemExit(f"run {i}: expected one wake, the cycle recorded {len(wakes)}")
        samples.append(probe.take())
        cycle_statements.append(probe.statements.total - before)
        gather_statements.append(probe.gather_statements)
        floors.append(floor_wake(store, slug, agents[i], now))
    probe.close()
    poller.release()
    return samples[0], samples[1:], dict(floor=floors[1:], cycle=cycle_statements[1:],
                                         gather=gather_statements[1:])


def report(cold, samples, extra, store) -> None:
    def med(values):
        return statistics.median(values) * 1000

    steps = cold[0]
    print("the first wake of the process (cold: no catch-up line or token count remembered yet): "
          + ", ".join(f"{name} {steps[name][0] * 1000:.2f}" for name in ("gather", "compose", "record"))
          + f" ms CPU, {sum(v[0] for v in steps.values()) * 1000:.2f} in all")

    total_cpu = [sum(s[name][0] for name in s) for s, _, _ in samples]
    total_wall = [sum(s[name][1] for name in s) for s, _, _ in samples]
    print(f"then {len(samples)} runs, each one committing cycle with one mention wake (medians):")
    print(f"{'step':<10}{'CPU ms':>9}{'wall ms':>9}")
    for name in ("gather", "compose", "record"):
        print(f"{name:<10}{med(s[name][0] for s, _, _ in samples):>9.2f}"
              f"{med(s[name][1] for s, _, _ in samples):>9.2f}")
    cpu, wall = med(total_cpu), med(total_wall)
    print(f"{'total':<10}{cpu:>9.2f}{wall:>9.2f}   (min {min(total_cpu) * 1000:.2f}, "
          f"max {max(total_cpu) * 1000:.2f} ms CPU)")
    share = {
        "tokenising": statistics.median(t[0] / c for (_, t, _), c in zip(samples, total_cpu)),
        "rendering": statistics.median(r[0] / c for (_, _, r), c in zip(samples, total_cpu)),
        "database": statistics.median((s["gather"][0] + s["record"][0]) / c
                                      for (s, _, _), c in zip(samples, total_cpu)),
    }
    share["the rest (fitting, escaping, digest)"] = max(0.0, 1 - sum(share.values()))
    print("of the total CPU (medians): " + ", ".join(f"{k} {v:.0%}" for k, v in share.items()))
    met = cpu <= TARGET_MS
    print(f"target: median <= {TARGET_MS:g} ms CPU for gather + compose + record: "
          f"{'met' if met else 'MISSED'} ({cpu:.2f} ms)")
    with store.reading() as s:
        w = s.execute(sa.select(Wake.text, Wake.prompt_tokens).order_by(Wake.id.desc()).limit(1)).one()
    exact = store.counter.count(w.text)
    print(f"last wake: {w.prompt_tokens:,} tokens ({'exact' if exact == w.prompt_tokens else f'RECOUNT {exact:,}'}),"
          f" {len(w.text):,} characters")
    floor = med(extra["floor"])
    print(f"ours (gather + compose + record) {cpu:.2f} ms CPU; floor (one SELECT of the newest "
          f"{reads.HISTORY_POSTS} posts, their lines joined, two INSERTs, a commit) {floor:.3f} ms "
          f"CPU; ratio {_common.ratio(cpu, floor):.1f}x; {_common.load()}")
    print(f"statements per wake: the whole cycle {statistics.median(extra['cycle']):.0f} "
          f"(gather {statistics.median(extra['gather']):.0f}); the floor 4")


def fill(store, cfg, slug, agents) -> None:
    """Catch-up use at larger budgets, through the same path (compose's own figures)."""
    from poller.wake import compose as compose_mod

    seen = {}
    original = compose_mod.compose

    def keep(request, **kwargs):
        out = original(request, **kwargs)
        seen["wake"], seen["request"] = out, request
        return out

    compose_mod.compose = keep
    poller = loop.Poller(store, cfg, launcher=_common.ListLauncher())
    now = T0 + dt.timedelta(hours=2)
    print(f"fill (posts read: {reads.HISTORY_POSTS}, more while their stored tokens do not cover the budget, at most {reads.HISTORY_POSTS_MAX:,}; wake cap {cfg.wake.prompt_cap_chars:,} characters):")
    for budget, agent in zip(FILL_BUDGETS, agents[-len(FILL_BUDGETS):]):
        store.set_setting("catch_up_tokens", str(budget), now, agent=agent)
        now += dt.timedelta(seconds=30)
        mention(store, slug, agent, now)
        poller.tick(now)
        w, r = seen["wake"], seen["request"]
        print(f"  budget {budget:>6,}: catch-up {w.catch_up_tokens_used:>6,} tokens "
              f"({w.catch_up_tokens_used / budget:.1%}), {w.shown_count} posts word for word of "
              f"{len(r.history)} read, {w.summarized_count:,} summarized; wake {len(w.text):,} characters")
    compose_mod.compose = original
    poller.release()


def main() -> None:
    args = _common.parser(__doc__).parse_args()
    _common.quiet_logs()
    print(_common.header())
    store, cfg, slug, agents, runs = build(args)
    with store.reading() as s:
        n = s.scalar(sa.text("select count(*) from posts"))
    print(f"Mood: {n:,} posts; catch-up budget {BUDGET:,} tokens; database {store.dialect}")
    report(*timed_runs(store, cfg, slug, agents, runs), store)
    fill(store, cfg, slug, agents)
    store.engine.dispose()


if __name__ == "__main__":
    main()
