"""wiki_rules against a real MediaWiki 1.39 on a loopback port (see tests/support/mediawiki.py).

Each test works on its own page title, so the order of tests does not matter;
tests that stop the server leave it to the ``running_wiki`` fixture to start
it again.

Here, the pure part (no database, no process); the rest sits under the same name
in the other layers.
"""

from __future__ import annotations


import pytest

from support.doubles import MemoryCache
from support.mediawiki import SilentServer, silent_server  # noqa: F401  (a fixture)
from poller import config
from wiki_rules import deadline, fallback
from wiki_rules.source import DialSource
from wiki_rules.wiki import MwWiki
from support.wiki_mediawiki import T0, fetches, later
from support.wiki_mediawiki import title  # noqa: F401  (fixtures)

def test_a_server_that_never_answers_is_bounded_by_the_timeout(silent_server: SilentServer):
    cfg = config.WikiConfig(site=silent_server.host, scheme="http", path="/", timeout=1.0)
    source = DialSource(cfg, MemoryCache())
    tried = fetches(source)
    words = source.current(T0)  # returns: the timeout ended the wait
    assert words is fallback.BUILT_IN
    # Whichever bound fires first, the outer deadline or the client's read timeout.
    error = source.status(T0).error
    assert "no answer within 1s" in error or "timed out" in error
    source.current(later(10))  # backing off until the next ttl: no second try
    assert tried == [cfg.title]


def test_the_reader_alone_bounds_a_silent_server_too(silent_server: SilentServer):
    # Without the outer deadline, requests' own read timeout still ends the wait.
    wiki = MwWiki(silent_server.host, path="/", scheme="http", timeout=1.0)
    with pytest.raises(Exception) as failure:  # it returns at all: the read timed out
        wiki._fetch("Anything", deadline.Deadline())  # a deadline never called
    assert "timed out" in str(failure.value).lower() or "timeout" in type(failure.value).__name__.lower()
