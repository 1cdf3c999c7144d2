"""Group commit of API posts: concurrent posts share a transaction, a refused one is
answered alone, and every post is written exactly once (SQLite and PostgreSQL)."""

from __future__ import annotations

import threading

import pytest

from support import webserver
from poller import errors
from poller.store import core
from poller.web import batch
from support.waiting import wait_for
from support.webserver import T0


@pytest.fixture
def store(any_cli):
    any_cli("mood", "add", "lobby")
    any_cli("mood", "add", "den")
    any_cli("person", "add", "ada")
    return webserver.store_for(any_cli.db_url)


def test_posts_waiting_while_one_is_written_share_the_next_transaction(store, monkeypatch):
    first_in = threading.Event()
    release = threading.Event()
    real = store.ingest

    def slow_first(items):
        if not first_in.is_set():
            first_in.set()
            release.wait(120)  # the test decides when the first write ends
        return real(items)

    den = store.add_post("den", "ada", "in the den", T0)  # before the slow door: it uses it too
    monkeypatch.setattr(store, "ingest", slow_first)
    group = batch.GroupCommit(store)
    results: dict[int, object] = {}

    def post(i: int, reply_to=None) -> None:
        try:
            results[i] = group.post(core.NewPost("lobby", "ada", f"post {i}", T0, reply_to=reply_to))
        except errors.PollerError as exc:
            results[i] = exc

    threads = [threading.Thread(target=post, args=(0,))]
    threads[0].start()
    first_in.wait(120)
    threads += [threading.Thread(target=post, args=(i,)) for i in range(1, 6)]
    threads.append(threading.Thread(target=post, args=(6, den.id)))  # a reply across Moods
    for t in threads[1:]:
        t.start()
    wait_for(lambda: len(group._pending) == 6, what="six posts waiting")
    release.set()
    for t in threads:
        t.join(120)
    assert isinstance(results[6], errors.NotFound)
    written = [p.text for p in store.posts("lobby", limit=100)]
    assert sorted(written) == [f"post {i}" for i in range(6)]  # each once, the refused one not
    assert all(results[i].text == f"post {i}" and results[i].sender == "ada" for i in range(6))
    # The first post alone; then the six that waited, refused together and rolled back, each
    # written alone: five transactions, the refused one none.
    assert group.batches == 1 + 5


def test_a_batch_without_a_refusal_is_one_transaction(store, monkeypatch):
    first_in, release = threading.Event(), threading.Event()
    real = store.ingest
    calls = []

    def counted(items):
        calls.append(len(items))
        if not first_in.is_set():
            first_in.set()
            release.wait(120)
        return real(items)

    monkeypatch.setattr(store, "ingest", counted)
    group = batch.GroupCommit(store)
    threads = [threading.Thread(target=group.post,
                                args=(core.NewPost("lobby", "ada", f"p{i}", T0),))
               for i in range(8)]
    threads[0].start()
    first_in.wait(120)
    for t in threads[1:]:
        t.start()
    wait_for(lambda: len(group._pending) == 7, what="seven posts waiting")
    release.set()
    for t in threads:
        t.join(120)
    assert calls == [1, 7] and group.batches == 2
    assert len(store.posts("lobby", limit=100)) == 8
