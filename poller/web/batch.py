"""Group commit: posts from concurrent requests are written together.

Each request's thread hands its post to :class:`GroupCommit` and waits.  The
first to find nobody writing becomes the writer: it writes everything waiting
in one transaction (:meth:`poller.store.Store.ingest`, the one door for posts),
then whatever arrived meanwhile, until nothing waits.  On SQLite,
where writers take turns, and on PostgreSQL, where each commit is a round trip,
a burst then costs a few transactions instead of one per post.

If a batch is refused (a ``reply_to`` in another Mood, a Mood that does not
exist, a person removed meanwhile) it is rolled back whole and each of its
posts is written alone, so every request gets its own answer and no post is
written half or twice.
"""

from __future__ import annotations

import threading
from typing import Optional

from poller.store import core

MAX_BATCH = 200


class _Slot:
    __slots__ = ("item", "done", "result", "error")

    def __init__(self, item: core.Admitted):
        self.item = item
        self.done = threading.Event()
        self.result = None
        self.error: Optional[BaseException] = None


class GroupCommit:
    def __init__(self, store):
        self.store = store
        self._lock = threading.Lock()
        self._pending: list[_Slot] = []
        self._writing = False
        self.batches = 0  # transactions written (for tests and curiosity)

    def post(self, item: core.Admitted):
        """Write *item*, a post whose text was judged already (:meth:`poller.store.Store.admit`),
        with whatever else is waiting; its PostInfo, or its refusal."""
        slot = _Slot(item)
        with self._lock:
            self._pending.append(slot)
            lead = not self._writing
            self._writing = True
        if lead:
            self._lead()
        slot.done.wait()
        if slot.error is not None:
            raise slot.error
        return slot.result

    def _lead(self) -> None:
        try:
            while True:
                with self._lock:
                    batch = self._pending[:MAX_BATCH]
                    del self._pending[:MAX_BATCH]
                    if not batch:
                        self._writing = False
                        return
                self._write(batch)
        except BaseException:
            with self._lock:
                self._writing = False
                for slot in self._pending:  # nobody will write these now: let them retry
                    slot.error = RuntimeError("the writer stopped; try again")
                    slot.done.set()
                self._pending.clear()
            raise

    def _write(self, batch: list[_Slot]) -> None:
        try:
            results = self.store.ingest([s.item for s in batch])
        except Exception as exc:
            if len(batch) > 1:
                for slot in batch:  # one of them was refused: each alone, for its own answer
                    self._write([slot])
                return
            batch[0].error = exc
        except BaseException as exc:
            for slot in batch:
                slot.error = exc
                slot.done.set()
            raise
        else:
            self.batches += 1
            for slot, result in zip(batch, results):
                slot.result = result
        for slot in batch:
            slot.done.set()
