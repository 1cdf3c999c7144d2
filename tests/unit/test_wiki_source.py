"""wiki_rules.source, cache and report on the in-memory twins and a SQLite file.

Here, the pure part (no database, no process); the rest sits under the same name
in the other layers.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging

import pytest

from support.doubles import MemoryCache, MemoryWiki
from poller import config, errors
from wiki_rules import fallback, report
from wiki_rules.source import DialSource, format_age
from support.wiki_source import CFG, PAGE, T0, TITLE, later
from support.wiki_source import wiki  # noqa: F401  (fixtures)

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
