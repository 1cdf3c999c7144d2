"""wiki_rules.source, cache and report on the in-memory twins and a SQLite file."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging

import pytest
import sqlalchemy as sa

from support.doubles import MemoryCache, MemoryWiki
from poller import config, errors, models
from wiki_rules import fallback, report
from wiki_rules.cache import DbCache, PageCopy
from wiki_rules.source import DialSource, format_age

T0 = dt.datetime(2026, 5, 1, 12, 0, tzinfo=dt.timezone.utc)
TITLE = "Cryptograss:Moods/Dials"
CFG = config.WikiConfig(site="wiki.test", title=TITLE, ttl=300, timeout=1)
PAGE = ("== discretion ==\n=== reserved ===\nHush.\n=== normal ===\nMaybe.\n=== chatty ===\nTalk!\n"
        "== verbosity ==\n=== brief ===\nShort.\n=== normal ===\n\n=== thorough ===\nLong.")


def later(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


@pytest.fixture
def wiki() -> MemoryWiki:
    w = MemoryWiki()
    w.edit(TITLE, PAGE)
    return w


@pytest.fixture
def engine(tmp_path):
    eng = sa.create_engine(f"sqlite:///{tmp_path / 'moods.db'}")
    models.Base.metadata.create_all(eng)
    yield eng
    eng.dispose()


def test_first_read_comes_from_the_wiki(wiki):
    words = DialSource(CFG, MemoryCache(), wiki).current(T0)
    assert words.source == "wiki@1"
    assert words.consider_ask("reserved") == "Hush."
    assert words.verbosity_line("normal") == ""


def test_the_copy_is_reused_until_the_ttl_then_refreshed(wiki):
    source = DialSource(CFG, MemoryCache(), wiki)
    source.current(T0)
    wiki.edit(TITLE, PAGE.replace("Hush.", "Quiet, please."))
    assert source.current(later(299)).consider_ask("reserved") == "Hush."
    assert wiki.reads == 1
    words = source.current(later(300))
    assert (words.source, words.consider_ask("reserved")) == ("wiki@2", "Quiet, please.")
    assert wiki.reads == 2


def test_refresh_fetches_at_once(wiki):
    source = DialSource(CFG, MemoryCache(), wiki)
    source.current(T0)
    wiki.edit(TITLE, PAGE.replace("Talk!", "Chat away."))
    assert source.refresh(later(5)) is True
    assert source.current(later(6)).consider_ask("chatty") == "Chat away."


def test_a_failed_refresh_serves_the_last_good_copy_and_backs_off(wiki, caplog):
    source = DialSource(CFG, MemoryCache(), wiki)
    source.current(T0)
    wiki.down = True
    with caplog.at_level(logging.WARNING, logger="wiki_rules"):
        words = source.current(later(420))
    assert words.source == "cache@1 (age 7m)"
    assert words.consider_ask("reserved") == "Hush."
    assert [getattr(r, "action", None) for r in caplog.records] == ["dial_refresh_failed"]
    assert wiki.reads == 2
    for seconds in (421, 500, 719):  # no hammering until the next ttl
        assert source.current(later(seconds)).source.startswith("cache@1")
    assert wiki.reads == 2
    wiki.down = False
    assert source.current(later(720)).source == "wiki@1"
    assert wiki.reads == 3
    assert source.status(later(720)).error is None


def test_no_good_copy_ever_means_the_built_in_wording(wiki):
    wiki.down = True
    source = DialSource(CFG, MemoryCache(), wiki)
    assert source.current(T0) is fallback.BUILT_IN
    assert source.status(T0).error == "memory wiki is down"


def test_a_deleted_page_keeps_the_last_good_copy(wiki):
    source = DialSource(CFG, MemoryCache(), wiki)
    source.current(T0)
    wiki.delete(TITLE)
    assert source.current(later(400)).source == "cache@1 (age 6m)"
    assert "does not exist" in source.status(later(400)).error


def test_a_page_with_no_dials_left_keeps_the_last_good_copy(wiki):
    source = DialSource(CFG, MemoryCache(), wiki)
    source.current(T0)
    wiki.edit(TITLE, "Blanked by mistake.")
    words = source.current(later(300))
    assert (words.source, words.consider_ask("reserved")) == ("cache@1 (age 5m)", "Hush.")
    assert "has no dial sections" in source.status(later(300)).error


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


def test_without_a_wiki_only_the_built_in_wording():
    source = DialSource(config.WikiConfig(site=""), MemoryCache())
    assert source.wiki is None
    assert source.current(T0) is fallback.BUILT_IN
    assert source.refresh(T0) is False


@pytest.mark.parametrize("seconds,shown", [(0, "0s"), (59, "59s"), (60, "1m"), (420, "7m"),
                                           (3 * 3600, "3h"), (47 * 3600, "47h"),
                                           (72 * 3600, "3d")])
def test_ages_are_short(seconds, shown):
    assert format_age(dt.timedelta(seconds=seconds)) == shown


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


def test_seeding_needs_a_bot_password_from_the_config(wiki):
    cfg = config.Config(db_url="sqlite://", wiki=CFG)
    with pytest.raises(errors.ConfigError, match="MOOD_POLLER_WIKI_BOT_PASSWORD"):
        report.seed_page(cfg, wiki=wiki)
    with pytest.raises(errors.ConfigError, match="wiki.site is empty"):
        report.seed_page(config.Config(db_url="sqlite://"), wiki=wiki)


def test_seeding_creates_the_page_but_replaces_it_only_when_forced():
    bot = dataclasses.replace(CFG, bot_user="Admin@bot", bot_password="s3cret-s3cret")
    cfg = config.Config(db_url="sqlite://", wiki=bot)
    wiki = MemoryWiki()
    assert report.seed_page(cfg, wiki=wiki) == 1
    assert wiki.pages[TITLE].wikitext == report.starting_page()
    with pytest.raises(errors.WikiError, match="--force"):
        report.seed_page(cfg, wiki=wiki)
    assert report.seed_page(cfg, wiki=wiki, overwrite=True) == 2
