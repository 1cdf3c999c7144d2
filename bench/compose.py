"""How fast is a wake composed?  Run with plain ``python bench/compose.py``.

Builds a Mood of 5,000 posts of mixed content (prose, code, URLs, emoji, CJK,
long numbers), with token counts computed once as at ingest, and composes a
mention wake with a 10,000-token catch-up and the extractive digest of the
rest.  Prints the machine, the median compose time and the tokens used.
"""

from __future__ import annotations

import os
import platform
import random
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

from poller import compose, summarize, tokens  # noqa: E402
from poller.config import WakeConfig  # noqa: E402

POSTS = 5_000
BUDGET = 10_000
RUNS = 50

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


def build_mood(counter: tokens.Counter, now: datetime) -> list[compose.WakePost]:
    rng = random.Random(42)
    texts = [rng.choice(SAMPLES) for _ in range(POSTS)]
    counts = counter.count_many(texts)  # as at ingest
    people = ["alice", "bob", "carol", "dmitri", "eun-ji", "ada"]
    return [
        compose.WakePost(id=i + 1, sender=people[i % 6], sender_is_agent=people[i % 6] == "ada",
                         created_at=now - timedelta(minutes=POSTS - i), text=text, tokens=count)
        for i, (text, count) in enumerate(zip(texts, counts))
    ]


def main() -> None:
    counter = tokens.counter()
    now = datetime(2025, 5, 1, 12, 0, tzinfo=timezone.utc)
    history = build_mood(counter, now)
    woke = compose.WakePost(id=POSTS + 1, sender="alice", created_at=now,
                            text="@ada can you summarise where we are?", tokens=9)
    request = compose.WakeRequest(kind="mention", mood="release", mood_title="Release train",
                                  agent="ada", now=now, tools="full", woke=[woke],
                                  history=history, catch_up_tokens=BUDGET)
    config = WakeConfig()
    summarizer = summarize.ExtractiveSummarizer(counter)
    compose.compose(request, config=config, counter=counter, summarizer=summarizer)  # warm up
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        wake = compose.compose(request, config=config, counter=counter, summarizer=summarizer)
        times.append(time.perf_counter() - start)
    print(f"machine: {platform.platform()}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"mood: {POSTS:,} posts; catch-up budget {BUDGET:,} tokens; {RUNS} runs")
    print(f"median compose: {statistics.median(times) * 1000:.2f} ms "
          f"(min {min(times) * 1000:.2f}, max {max(times) * 1000:.2f})")
    print(f"catch-up: {wake.catch_up_tokens_used:,}/{wake.catch_up_budget:,} tokens "
          f"({wake.catch_up_tokens_used / wake.catch_up_budget:.1%}), {wake.shown_count} posts shown, "
          f"{wake.summarized_count:,} summarized; wake {wake.prompt_tokens:,} tokens, {len(wake.text):,} chars")
    check = counter.count(wake.text)
    print(f"exact check: prompt_tokens {'matches' if check == wake.prompt_tokens else 'DIFFERS: %d' % check}")


if __name__ == "__main__":
    main()
