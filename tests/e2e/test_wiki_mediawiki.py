"""wiki_rules against a real MediaWiki 1.39 on a loopback port (see tests/support/mediawiki.py).

Each test works on its own page title, so the order of tests does not matter;
tests that stop the server leave it to the ``running_wiki`` fixture to start
it again.

Here, the part run as processes; the rest sits under the same name in the other
layers.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import subprocess
import sys

import pytest

from support.doubles import MemoryCache
from support.mediawiki import MediaWiki, mediawiki, running_wiki  # noqa: F401  (fixtures)
from poller import config
from wiki_rules import fallback, report
from wiki_rules.cache import DbCache
from wiki_rules.source import DialSource
from support.wiki_mediawiki import T0, fetches, later
from support.wiki_mediawiki import title  # noqa: F401  (fixtures)
from support.wiki_source import engine  # noqa: F401  (a pytest fixture)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT = 2.0
EDITED = """Edited by a person.
== discretion ==
=== reserved ===
Only if it '''really''' matters.
=== normal ===
Join in when useful.
=== chatty ===
Chat away.
== verbosity ==
=== brief ===
Short, please.
=== normal ===
=== thorough ===
At length.
"""


@pytest.fixture
def wiki_cfg(running_wiki: MediaWiki, title: str) -> config.WikiConfig:
    return config.WikiConfig(site=running_wiki.host, scheme="http", path=running_wiki.path,
                             title=title, ttl=300, timeout=TIMEOUT,
                             bot_user=running_wiki.bot_user,
                             bot_password=running_wiki.bot_password)


def seed(cfg: config.WikiConfig) -> int:
    return report.seed_page(config.Config(db_url="sqlite://", wiki=cfg))


def test_first_read_of_the_seeded_page(wiki_cfg, engine):
    revid = seed(wiki_cfg)
    source = DialSource(wiki_cfg, DbCache(engine))
    words = source.current(T0)
    assert words.source == f"wiki@{revid}"
    assert (words.discretion, words.verbosity) == (fallback.DISCRETION, fallback.VERBOSITY)
    status = source.status(T0)
    assert status.page_warnings == ()
    assert status.protected is False  # a fresh wiki lets anyone edit
    assert report.OPEN_PAGE_WARNING in report.render(status)


def test_protection_from_anonymous_edits_is_seen(running_wiki, wiki_cfg):
    seed(wiki_cfg)
    running_wiki.protect(wiki_cfg.title, "autoconfirmed")
    source = DialSource(wiki_cfg, MemoryCache())
    source.current(T0)
    assert source.status(T0).protected is True


def test_an_edit_shows_after_the_ttl_and_at_once_with_refresh(running_wiki, wiki_cfg):
    first = seed(wiki_cfg)
    source = DialSource(wiki_cfg, MemoryCache())
    source.current(T0)
    second = running_wiki.edit(wiki_cfg.title, EDITED)
    assert source.current(later(299)).source == f"wiki@{first}"
    words = source.current(later(300))
    assert words.source == f"wiki@{second}"
    assert words.consider_ask("reserved") == "Only if it really matters."
    assert words.verbosity_line("normal") == ""

    third = running_wiki.edit(wiki_cfg.title, EDITED.replace("Chat away.", "Say hello."))
    assert source.refresh(later(301)) is True
    words = source.current(later(302))
    assert (words.source, words.consider_ask("chatty")) == (f"wiki@{third}", "Say hello.")


def test_bad_markup_unknown_levels_and_a_missing_level(running_wiki, wiki_cfg):
    revid = running_wiki.edit(wiki_cfg.title, (
        "== discretion ==\n=== reserved ===\n'''Hush [[unclosed {{Ask|x\n<div>stray</span>\n"
        "=== loud ===\nShout!\n=== chatty ===\n* Talk\n* Laugh\n"
        "== tone ==\n=== warm ===\nHello.\n"))
    source = DialSource(wiki_cfg, MemoryCache())
    words = source.current(T0)
    assert words.source == f"wiki@{revid}"
    assert words.consider_ask("chatty") == "- Talk\n- Laugh"
    assert words.consider_ask("normal") == fallback.DISCRETION["normal"]
    assert words.verbosity == fallback.VERBOSITY
    warnings = source.status(T0).page_warnings
    assert "unknown level 'discretion/loud' ignored" in warnings
    assert "unknown dial section 'tone' ignored" in warnings
    assert "level 'discretion/normal' missing; built-in wording used" in warnings


def test_the_page_deleted_keeps_the_last_good_copy(running_wiki, wiki_cfg):
    revid = running_wiki.edit(wiki_cfg.title, EDITED)
    source = DialSource(wiki_cfg, MemoryCache())
    source.current(T0)
    running_wiki.delete(wiki_cfg.title)
    words = source.current(later(600))
    assert words.source == f"cache@{revid} (age 10m)"
    assert words.consider_ask("chatty") == "Chat away."
    assert "does not exist" in source.status(later(600)).error


def test_the_server_stopped_falls_back_to_the_cache_at_once(running_wiki, wiki_cfg, caplog):
    revid = running_wiki.edit(wiki_cfg.title, EDITED)
    source = DialSource(wiki_cfg, MemoryCache())
    source.current(T0)
    with running_wiki.down():
        tried = fetches(source)
        with caplog.at_level(logging.WARNING, logger="wiki_rules"):
            words = source.current(later(300))
        assert words.source == f"cache@{revid} (age 5m)"
        actions = [r.action for r in caplog.records if hasattr(r, "action")]
        assert actions == ["dial_refresh_failed"]
        # A refused connection, not a wait for the timeout: the error says so.
        assert "unreachable" in source.status(later(300)).error
        source.current(later(301))  # backing off: no new try
        assert tried == [wiki_cfg.title]
    assert source.current(later(600)).source == f"wiki@{revid}"


def test_a_restart_with_the_wiki_down_uses_the_cache_in_the_database(running_wiki, wiki_cfg,
                                                                      engine):
    revid = running_wiki.edit(wiki_cfg.title, EDITED)
    DialSource(wiki_cfg, DbCache(engine)).current(T0)
    with running_wiki.down():
        restarted = DialSource(wiki_cfg, DbCache(engine))
        assert restarted.current(later(60)).source == f"wiki@{revid}"  # fresh: no request
        restarted = DialSource(wiki_cfg, DbCache(engine))
        words = restarted.current(later(3600))
        assert words.source == f"cache@{revid} (age 1h)"
        assert words.consider_ask("reserved") == "Only if it really matters."
        assert "unreachable" in restarted.status(later(3600)).error


def test_no_copy_ever_means_the_built_in_wording(running_wiki, wiki_cfg):
    assert DialSource(wiki_cfg, MemoryCache()).current(T0) is fallback.BUILT_IN  # no such page
    with running_wiki.down():
        assert DialSource(wiki_cfg, MemoryCache()).current(T0) is fallback.BUILT_IN


def test_seeding_never_logs_the_password(running_wiki, wiki_cfg, caplog):
    with caplog.at_level(logging.DEBUG):
        seed(wiki_cfg)
        wrong = dataclasses.replace(wiki_cfg, bot_password="not-the-password-" + "x" * 16)
        with pytest.raises(Exception) as failure:
            report.seed_page(config.Config(db_url="sqlite://", wiki=wrong), overwrite=True)
    assert "refused the login" in str(failure.value)
    for secret in (wiki_cfg.bot_password, wrong.bot_password):
        assert secret not in caplog.text
        assert secret not in str(failure.value)


# -- the command line ------------------------------------------------------------------


@pytest.fixture
def config_file(tmp_path, wiki_cfg):
    path = tmp_path / "mood-poller.toml"
    path.write_text(
        "[wiki]\n"
        f'site = "{wiki_cfg.site}"\nscheme = "http"\npath = "{wiki_cfg.path}"\n'
        f'title = "{wiki_cfg.title}"\nttl = 300\ntimeout = {TIMEOUT}\n'
        f'bot_user = "{wiki_cfg.bot_user}"\n')
    return str(path)


def test_the_dials_command(running_wiki, wiki_cfg, config_file, sqlite_url, monkeypatch):
    from support.cli import Cli

    cli = Cli(sqlite_url, config_file)
    cli("init")
    no_password = cli.fails("dials", "--seed-page")
    assert "MOOD_POLLER_WIKI_BOT_PASSWORD" in no_password.err
    monkeypatch.setenv("MOOD_POLLER_WIKI_BOT_PASSWORD", wiki_cfg.bot_password)
    seeded = cli("dials", "--seed-page")
    assert "source:    wiki@" in seeded.out
    assert "anyone can edit" in seeded.out
    assert wiki_cfg.bot_password not in seeded.out + seeded.err
    assert "already exists" in cli.fails("dials", "--seed-page").err

    shown = json.loads(cli("dials", "--json").out)
    assert shown["dials"]["discretion"]["reserved"]["text"] == fallback.DISCRETION["reserved"]
    revid = running_wiki.edit(wiki_cfg.title, EDITED)
    assert json.loads(cli("dials", "--json").out)["revid"] == shown["revid"]  # within the ttl
    refreshed = json.loads(cli("dials", "--refresh", "--json").out)
    assert refreshed["source"] == f"wiki@{revid}"
    assert refreshed["dials"]["discretion"]["chatty"] == {"text": "Chat away.", "from": "page"}

    with running_wiki.down():
        failed = cli("dials", "--refresh", ok=False)
        assert failed.code == 1
        assert f"source:    wiki@{revid}" in failed.out
        assert "last refresh failed" in failed.out


def test_the_dials_command_as_a_subprocess(running_wiki, wiki_cfg, config_file, tmp_path):
    running_wiki.edit(wiki_cfg.title, EDITED)
    db = f"sqlite:///{tmp_path / 'sub.db'}"
    env = {**os.environ, "PYTHONPATH": REPO, "XDG_DATA_HOME": str(tmp_path)}
    run = [sys.executable, "-m", "poller", "--db", db, "--config", config_file]
    subprocess.run(run + ["init"], env=env, check=True, capture_output=True, cwd=REPO)
    done = subprocess.run(run + ["dials"], env=env, capture_output=True, text=True, cwd=REPO,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    assert "Chat away." in done.stdout
