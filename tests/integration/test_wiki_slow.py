"""A wiki that answers one byte at a time costs the loop one bounded read at a time.

A real web server on a loopback port trickles its answer (in the headers or in
the body) slower than anything ends but faster than any per-read timeout: each
read is ended at the wiki's timeout, its socket closed, its thread gone, and
the wording falls back to the built-in one.
"""

from __future__ import annotations

import os
import threading

import pytest

from poller import config, errors
from wiki_rules import fallback
from wiki_rules.cache import DbCache
from wiki_rules.source import DialSource
from wiki_rules.wiki import READ_THREAD, MwWiki
from support.trickle import trickle  # noqa: F401  (a pytest fixture)
from support.waiting import wait_for
from support.wiki_source import TITLE, later
from support.wiki_source import engine  # noqa: F401  (a pytest fixture)

pytestmark = pytest.mark.parametrize("trickle", ["headers", "body"], indirect=True)


def reads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == READ_THREAD]


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_trickling_wiki_is_read_one_bounded_fetch_at_a_time(trickle, engine):
    cfg = config.WikiConfig(site=trickle.host, scheme="http", path="/", title=TITLE,
                            ttl=1, timeout=0.5)
    source = DialSource(cfg, DbCache(engine))
    source.status(later(0))  # the cache is read (its connection opened) before counting
    threads, fds = threading.active_count(), open_fds()
    for i in range(5):
        words = source.current(later(60 * i))
        assert words.source == "fallback"
        assert words.consider_ask("reserved") == fallback.BUILT_IN.consider_ask("reserved")
        assert len(reads()) <= 1, [t.name for t in reads()]
    wait_for(lambda: not reads(), what="the wiki reads to end")
    wait_for(lambda: trickle.open_connections() == 0, what="the wiki's sockets to be closed")
    assert threading.active_count() <= threads
    assert open_fds() <= fds
    assert "no answer within 0.5s" in source.status(later(300)).error


def test_a_read_past_its_deadline_is_ended(trickle):
    wiki = MwWiki(trickle.host, path="/", scheme="http", timeout=0.5)
    for _ in range(3):
        with pytest.raises(errors.WikiUnavailable, match="no answer within 0.5s"):
            wiki.fetch(TITLE)
        assert len(reads()) <= 1
    wait_for(lambda: not reads(), what="the wiki reads to end")
    wait_for(lambda: trickle.open_connections() == 0, what="the wiki's sockets to be closed")
