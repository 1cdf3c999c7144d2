"""wiki_rules.source, cache and report on the in-memory twins and a SQLite file.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import dataclasses

import pytest
import sqlalchemy as sa

from poller import config, errors
from wiki_rules import fallback, report
from wiki_rules.cache import DbCache, PageCopy
from wiki_rules.source import DialSource
from support.wiki_source import CFG, PAGE, T0, TITLE, later
from support.wiki_source import engine, wiki  # noqa: F401  (fixtures)

def test_a_restart_picks_up_the_copy_in_the_database(wiki, engine):
    DialSource(CFG, DbCache(engine), wiki).current(T0)
    wiki.down = True
    fresh = DialSource(CFG, DbCache(engine), wiki)
    assert fresh.current(later(60)).source == "wiki@1"  # still within the ttl: no read
    assert wiki.reads == 1
    stale = DialSource(CFG, DbCache(engine), wiki)
    words = stale.current(later(3 * 3600))
    assert words.source == "cache@1 (age 3h)"
    assert words.consider_ask("chatty") == "Talk!"


def test_the_database_keeps_one_row_per_page(engine):
    cache = DbCache(engine)
    first = PageCopy("s", TITLE, 1, "one", None, T0)
    cache.save(first)
    cache.save(dataclasses.replace(first, revid=2, wikitext="two", protected=True,
                                   fetched_at=later(60)))
    cache.save(dataclasses.replace(first, title="Other"))
    assert cache.load("s", TITLE) == PageCopy("s", TITLE, 2, "two", True, later(60))
    assert cache.load("elsewhere", TITLE) is None
    with engine.connect() as conn:
        assert conn.scalar(sa.text("select count(*) from dial_cache")) == 2


def test_a_broken_database_does_not_stop_the_wording(wiki, tmp_path):
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'empty.db'}")  # no schema
    source = DialSource(CFG, DbCache(engine), wiki)
    assert source.current(T0).source == "wiki@1"
    with pytest.raises(errors.StoreError):
        DbCache(engine).load("s", TITLE)


def test_the_report_warns_when_anyone_can_edit(wiki, engine):
    cfg = config.Config(db_url="sqlite://", wiki=CFG)
    wiki.edit(TITLE, PAGE.replace("=== chatty ===\nTalk!\n", ""), protected=False)
    status, ok = report.show(cfg, engine, T0, wiki=wiki)
    assert ok and status.source == "wiki@2"
    text = report.render(status)
    assert report.OPEN_PAGE_WARNING in text
    assert "chatty (built-in):" in text and "reserved:" in text
    data = report.as_dict(status)
    assert data["protected"] is False
    assert data["dials"]["discretion"]["chatty"] == {"text": fallback.DISCRETION["chatty"],
                                                     "from": "built-in"}
    assert data["dials"]["verbosity"]["normal"] == {"text": "", "from": "page"}

    wiki.edit(TITLE, PAGE, protected=True)
    status, ok = report.show(cfg, engine, later(1), refresh=True, wiki=wiki)
    assert ok and report.OPEN_PAGE_WARNING not in report.render(status)
    assert report.as_dict(status)["protected"] is True


def test_a_failed_forced_refresh_is_reported(wiki, engine):
    cfg = config.Config(db_url="sqlite://", wiki=CFG)
    report.show(cfg, engine, T0, wiki=wiki)
    wiki.down = True
    status, ok = report.show(cfg, engine, later(10), refresh=True, wiki=wiki)
    assert not ok
    assert status.source == "wiki@1"  # the copy is still fresh
    assert "last refresh failed: memory wiki is down" in report.render(status)


