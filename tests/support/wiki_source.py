"""A dials source over an in-memory wiki: its config, page, title and clock, and a
database for its cache."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from poller import config, models

from support.doubles import MemoryWiki


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
    """A SQLite database with the schema, for the dial cache."""
    eng = sa.create_engine(f"sqlite:///{tmp_path / 'moods.db'}")
    models.Base.metadata.create_all(eng)
    yield eng
    eng.dispose()
