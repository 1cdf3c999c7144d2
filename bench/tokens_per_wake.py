"""What the product saves: prompt tokens of a simulated day, against two simple strategies.

A day of 40 Moods, 10 people and 2 agents: conversations in bursts between
08:00 and 22:00 (about 1 post in 20 names an agent), sign-ins through the
day.  The poller runs a cycle every 30 s of scripted time with every setting
at its default; turns settle in-process at once (``store.turns.claim`` and
``store.turns.settle_outcome``, no agent processes): a mention gets a short
answer, one consider in four gets a remark, quiet looks and arrivals stay
silent.  Prints wakes per kind, mean and p95 prompt tokens per wake and the
day's total, then the same totals for two strategies on the same people's
posts, each wake carrying the Mood's last 50 messages (and, in their favour,
no instructions at all):

- every message wakes every agent;
- every mention wakes the agents it names.

Run: ``python bench/tokens_per_wake.py [--quick]``.
"""

from __future__ import annotations

import collections
import os
import datetime as dt
import random

import _common

import sqlalchemy as sa  # noqa: E402

from poller import loop, wakers  # noqa: E402
from poller.store import turns  # noqa: E402
from poller.models import Wake  # noqa: E402

DAY0 = dt.datetime(2026, 3, 2, 0, 0, tzinfo=dt.timezone.utc)
MOODS = 40
AGENTS = ("helper", "scout")
PEOPLE = ("alice", "bob", "carol", "dmitri", "eun-ji", "farid", "gus", "hana", "ines", "jo")
STEP = dt.timedelta(seconds=30)
WINDOW = 50


class InstantLauncher:
    """Settles each turn in-process at once instead of starting a runner."""

    detaches = False

    def __init__(self, store) -> None:
        self.store = store

    def start(self, wake_id: int, now: dt.datetime) -> None:
        claimed = turns.claim(self.store, wake_id, now, os.getpid())
        if claimed is None:
            return
        if claimed.kind == "mention" or (claimed.kind == "consider" and wake_id % 4 == 0):
            reply = f"{claimed.agent.handle} here: a short answer about what was asked in {claimed.mood}."
        else:
            reply = "<silent>nothing to add</silent>"
        turns.settle_outcome(self.store, wake_id, wakers.Outcome("replied", reply),
                             now + dt.timedelta(seconds=5))

    def running(self) -> set[int]:
        return set()

    def wait(self, timeout=None) -> bool:
        return True

    def stop(self) -> None:
        pass


def simulate_day(slugs: list[str], seed: int = 11) -> tuple[list[tuple], list[tuple]]:
    """(posts, sign-ins) of the day, each stamped, oldest first."""
    rng = random.Random(seed)
    posts, signins = [], []
    for slug in slugs:
        for _ in range(rng.randint(3, 9)):  # conversations in this Mood today
            at = DAY0 + dt.timedelta(hours=rng.uniform(8, 21.5))
            talkers = rng.sample(PEOPLE, rng.randint(2, 4))
            for _ in range(rng.randint(3, 14)):
                body = rng.choice(_common.CHATTER)
                if rng.random() < 0.05:
                    body = f"@{rng.choice(AGENTS)} {body}"
                posts.append((slug, rng.choice(talkers), body, at))
                at += dt.timedelta(seconds=rng.uniform(15, 120))
        for person in rng.sample(PEOPLE, 3):
            signins.append((person, slug, DAY0 + dt.timedelta(hours=rng.uniform(7, 22))))
    posts.sort(key=lambda p: p[3])
    signins.sort(key=lambda s: s[2])
    return posts, signins


def baselines(store, posts: list[tuple]) -> dict[str, tuple[int, int]]:
    """(wakes, prompt tokens) of the two simple strategies over the same posts."""
    lines = [f"[{who}, {at:%H:%M}] {body}" for _, who, body, at in posts]
    counts = store.counter.count_many(lines)
    history: dict[str, list[int]] = collections.defaultdict(list)
    every, mention = [0, 0], [0, 0]
    for (slug, _, body, _), n in zip(posts, counts):
        history[slug].append(n)
        prompt = sum(history[slug][-WINDOW:])
        every[0] += len(AGENTS)
        every[1] += prompt * len(AGENTS)
        named = [a for a in AGENTS if f"@{a}" in body]
        mention[0] += len(named)
        mention[1] += prompt * len(named)
    return {"every message, last 50 messages": tuple(every),
            "every mention, last 50 messages": tuple(mention)}


def main() -> None:
    args = _common.parser(__doc__).parse_args()
    _common.quiet_logs()
    print(_common.machine())
    moods = 8 if args.quick else MOODS
    _, store, cfg = _common.database(args.db)
    slugs = _common.build_world(store, moods, AGENTS, PEOPLE, now=DAY0)
    posts, signins = simulate_day(slugs)
    poller = loop.Poller(store, cfg, launcher=InstantLauncher(store))
    now, pi, si = DAY0, 0, 0
    poller.tick(now)
    end = DAY0 + dt.timedelta(days=1)
    while now < end:
        now += STEP
        batch = []
        while pi < len(posts) and posts[pi][3] <= now:
            batch.append(posts[pi])
            pi += 1
        if batch:
            store.add_posts(batch)
        while si < len(signins) and signins[si][2] <= now:
            who, slug, at = signins[si]
            store.add_signin(who, slug, at)
            si += 1
        poller.tick(now)
    poller.release()

    with store.reading() as s:
        rows = s.execute(sa.select(Wake.kind, Wake.prompt_tokens, Wake.status)).all()
    tokens = [t for _, t, _ in rows]
    total = sum(tokens)
    print(f"simulated day: {moods} Moods, {len(PEOPLE)} people, {len(AGENTS)} agents, "
          f"{len(posts):,} people's posts, {len(signins)} sign-ins, a cycle every {STEP.seconds} s")
    for kind in ("mention", "consider", "quiet", "arrival"):
        ts = [t for k, t, _ in rows if k == kind]
        if ts:
            print(f"  {kind:8} {len(ts):>5} wakes, mean {sum(ts) / len(ts):>6,.0f} tokens, "
                  f"p95 {_common.percentile(ts, 95):>6,.0f}")
    print(f"mood-poller: {len(rows)} wakes, mean {total / max(1, len(rows)):,.0f} prompt tokens, "
          f"p95 {_common.percentile(tokens, 95):,.0f}, total {total:,}")
    for name, (n, t) in baselines(store, posts).items():
        print(f"{name}: {n:,} wakes, mean {t / max(1, n):,.0f} tokens, total {t:,}; "
              f"ratio strategy / mood-poller {t / max(1, total):.2f}")
    store.engine.dispose()


if __name__ == "__main__":
    main()
