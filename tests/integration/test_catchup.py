"""The catch-up: exact token costs, never over the budget, at least 95% full.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from poller.wake import catchup
from support.catchup import COUNTER, NOW

# --- reading the candidates from the store ----------------------------------------


@pytest.fixture
def chatty_mood(cli):
    """A Mood of 1,500 short posts (about 10 tokens each) in a real store."""
    import sqlalchemy as sa

    from poller.store import Store, db

    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    store = Store(db.make_engine(cli.db_url), COUNTER)
    start = NOW - timedelta(days=2)
    store.add_posts([("lobby", "ada", f"short post number {i} of the day", start + timedelta(seconds=i))
                     for i in range(1_500)])
    with store.reading() as s:
        mood_id = s.scalar(sa.text("select id from moods where slug = 'lobby'"))
    yield store, mood_id
    store.engine.dispose()


def test_the_store_reads_further_back_when_a_large_budget_needs_it(chatty_mood):
    from poller.store import reads

    store, mood_id = chatty_mood
    with store.reading() as s:
        plain, plain_earlier = reads.history(s, mood_id, 0, set())
        small, small_earlier = reads.history(s, mood_id, 0, set(), budget=1_000)
        large, large_earlier = reads.history(s, mood_id, 0, set(), budget=12_000)
    assert len(plain) == len(small) == reads.HISTORY_POSTS
    assert plain_earlier == small_earlier == 1_500 - reads.HISTORY_POSTS
    assert sum(p.tokens for p in large) >= 12_000  # 600 posts alone hold about 6,000 tokens
    assert len(large) + large_earlier == 1_500
    assert [p.id for p in large] == sorted(p.id for p in large)
    cu = catchup.build(large, budget=12_000, now=NOW, counter=COUNTER, post_cap=2_000)
    assert 0.95 * 12_000 <= cu.tokens == COUNTER.count(cu.text) <= 12_000


def test_posts_left_out_of_the_history_never_shorten_it(chatty_mood):
    # The posts that woke the agent are left out; some may be older than the history read.
    from poller.store import reads

    store, mood_id = chatty_mood
    with store.reading() as s:
        newest = reads.history(s, mood_id, 0, set())[0][-1]
        posts, earlier = reads.history(s, mood_id, newest.id - 1, {1, 2, newest.id - 5})
    assert [p.id for p in posts] == [newest.id] and earlier == 0
