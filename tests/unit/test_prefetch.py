"""The batch's set reads (poller.store.prefetch): what a set answers, and when a read
is left to run on its own."""

from __future__ import annotations

from poller.store import prefetch
from poller.store.prefetch import MISS


class Session:
    def __init__(self) -> None:
        self.info: dict = {}


def test_a_kind_is_read_once_for_the_pairs_not_weighed_yet_and_not_for_the_others():
    p = prefetch.Prefetch([(1, 10), (2, 10), (1, 11)], {})
    asked = []

    def fetch(_s, pairs):
        asked.append(list(pairs))
        return {pair: f"answer {pair}" for pair in pairs}

    p.at((2, 10))
    assert p.pair(None, "k", (2, 10), fetch) == "answer (2, 10)"
    assert p.pair(None, "k", (1, 11), fetch) == "answer (1, 11)"
    assert p.pair(None, "k", (1, 10), fetch) is MISS  # weighed before: its own read
    assert p.pair(None, "k", (9, 9), fetch) is MISS  # not of the batch
    assert asked == [[(2, 10), (1, 11)]]


def test_posts_are_read_in_chunks_and_a_post_not_owed_is_left_to_its_own_read():
    owed = {(1, 10): list(range(prefetch.CHUNK + 5)), (2, 10): [99_999]}
    p = prefetch.Prefetch(list(owed), owed)
    asked = []

    def fetch(_s, ids):
        asked.append(len(ids))
        return {i: i for i in ids if i % 2 == 0}

    assert p.posts(None, "x", [0, 1, 2], fetch) == {0: 0, 2: 2}  # a post with no row: left out
    assert asked == [prefetch.CHUNK, 6]
    assert p.posts(None, "x", [0, 123_456], fetch) is MISS


def test_a_mood_the_batch_posted_in_is_read_again_on_its_own():
    p = prefetch.Prefetch([(1, 10), (1, 11)], {})
    answers = p.mood(None, "m", 10, lambda _s, moods: {m: f"people of {m}" for m in moods})
    assert answers == "people of 10"
    p.wrote_in(10)
    assert p.mood(None, "m", 10, None) is MISS
    assert p.mood(None, "m", 11, None) == "people of 11"


def test_outside_a_batch_nothing_is_answered_and_a_batch_leaves_nothing_behind():
    s = Session()
    assert prefetch.pair(s, "k", 1, 10, None) is MISS
    with prefetch.batch(s, [(1, 10)], {}):
        assert prefetch.pair(s, "k", 1, 10, lambda _s, pairs: {p: "yes" for p in pairs}) == "yes"
    assert s.info == {}
    assert prefetch.pair(s, "k", 1, 10, None) is MISS
