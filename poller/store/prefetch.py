"""A batch's wakes read in sets: one query per kind of read for all its pairs.

Gathering a wake reads a dozen small things about its (agent, Mood) pair: the
kept session, the last finished turn, the settings it last saw, context handed
to it, its refusals, its check-in agreements...  One at a time, each is a
round trip per wake.  While a batch of pairs is weighed (:func:`batch`, around
``evaluate``), the first wake gathered of a kind of read runs that read as one
set query for every pair of the batch not weighed yet, and keeps the answers
in the session's ``info`` until the batch is done; the wakes gathered after it
take theirs from there.

Every read keeps its single-row form: it is what runs outside a batch
(previews, tests, the runner) and for a pair or a post the set did not cover
(:data:`MISS`).  A set read answers exactly what the single-row read would
have answered at the same point of the batch: the reads kept here are of rows
the weighing of a batch does not write, but for the notes it posts in a Mood,
after which a read that depends on a Mood's posts is read again
(:meth:`Prefetch.wrote_in`).
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterable, Iterator, Mapping, Sequence

Pair = tuple[int, int]
KEY = "poller.prefetch"
MISS = object()  # no set answer: read it on its own
CHUNK = 2_000  # posts a set read asks for in one statement (bound parameters have a limit)


class Prefetch:
    """The set answers of one batch being weighed, by kind of read.

    *order* is the pairs in the order they are weighed; *owed* the posts each is
    owed (the set reads keyed by post cover these).  :meth:`at` says which pair
    is weighed now: a kind first read then is read for it and the pairs after it.
    """

    def __init__(self, order: Sequence[Pair], owed: Mapping[Pair, Sequence[int]]) -> None:
        self.order = list(order)
        self.owed = owed
        self.index = 0
        self.of_pairs: dict[str, dict] = {}  # kind -> {pair: answer} for the pairs it read
        self.of_posts: dict[str, tuple[frozenset, dict]] = {}  # kind -> (ids read, {id: row})
        self.by_mood: dict[str, dict[int, object]] = {}  # kind -> {mood: answer}

    def at(self, pair: Pair) -> None:
        try:
            self.index = self.order.index(pair, self.index)
        except ValueError:
            pass  # not one of the batch's pairs: its reads are its own

    def ahead(self) -> list[Pair]:
        return self.order[self.index:]

    def pair(self, s, kind: str, pair: Pair, fetch: Callable) -> object:
        """*pair*'s answer to *kind*; *fetch* ``(s, pairs) -> {pair: answer}`` reads the
        pairs ahead at once the first time (a pair it leaves out is read on its own)."""
        got = self.of_pairs.get(kind)
        if got is None or pair not in got:
            if got is not None or pair not in self.order[self.index:]:
                return MISS
            got = self.of_pairs[kind] = fetch(s, self.ahead())
        return got.get(pair, MISS)

    def posts(self, s, kind: str, ids: Iterable[int], fetch: Callable) -> object:
        """The rows of *kind* for the posts *ids* ({id: row}, a post with none left out);
        *fetch* ``(s, ids) -> {id: row}`` reads those owed to the pairs ahead at once."""
        ids = set(ids)
        got = self.of_posts.get(kind)
        if got is None:
            wanted = sorted({i for pair in self.ahead() for i in self.owed.get(pair, ())})
            rows: dict = {}
            for k in range(0, len(wanted), CHUNK):
                rows.update(fetch(s, wanted[k:k + CHUNK]))
            got = self.of_posts[kind] = (frozenset(wanted), rows)
        read, rows = got
        if not ids <= read:
            return MISS
        return {i: rows[i] for i in ids if i in rows}

    def mood(self, s, kind: str, mood_id: int, fetch: Callable,
             among: Callable = lambda _sets, _pair: True) -> object:
        """The Mood's answer to *kind*; *fetch* ``(s, moods) -> {mood: answer}`` reads the
        Moods of the pairs ahead at once (of those *among* ``(self, pair)`` keeps)."""
        got = self.by_mood.get(kind)
        if got is None:
            moods = sorted({pair[1] for pair in self.ahead() if among(self, pair)})
            got = self.by_mood[kind] = fetch(s, moods) if moods else {}
        return got.get(mood_id, MISS)

    def wrote_in(self, mood_id: int) -> None:
        """The batch posted in the Mood (a note): what was read of its posts is stale."""
        for got in self.by_mood.values():
            got.pop(mood_id, None)


@contextlib.contextmanager
def batch(s, order: Sequence[Pair], owed: Mapping[Pair, Sequence[int]]) -> Iterator[Prefetch]:
    """Set reads for the pairs *order* while the block runs (in that order), then none."""
    held = s.info.get(KEY)
    s.info[KEY] = p = Prefetch(order, owed)
    try:
        yield p
    finally:
        if held is None:
            s.info.pop(KEY, None)
        else:
            s.info[KEY] = held


def pair(s, kind: str, agent_id: int, mood_id: int, fetch: Callable) -> object:
    """The batch's answer for (agent, Mood) to *kind*, or MISS outside a batch."""
    p = s.info.get(KEY)
    return MISS if p is None else p.pair(s, kind, (agent_id, mood_id), fetch)


def posts(s, kind: str, ids: Iterable[int], fetch: Callable) -> object:
    p = s.info.get(KEY)
    return MISS if p is None else p.posts(s, kind, ids, fetch)


def mood(s, kind: str, mood_id: int, fetch: Callable, **among) -> object:
    p = s.info.get(KEY)
    return MISS if p is None else p.mood(s, kind, mood_id, fetch, **among)


def grouped(rows: Iterable, pairs: Iterable[Pair]) -> dict:
    """{pair: [row, ...]} for rows ``(agent_id, mood_id, ...)``, in row order, with
    every pair of *pairs* present; a row of one more column is that column's value."""
    out: dict[Pair, list] = {p: [] for p in pairs}
    for r in rows:
        out[(r[0], r[1])].append(r[2] if len(r) == 3 else r)
    return out
