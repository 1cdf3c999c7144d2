"""Reading dials from a MediaWiki: a page title per test, a later instant, and how many
times the wiki was fetched."""

from __future__ import annotations

import datetime as dt

import pytest

from wiki_rules.source import DialSource


T0 = dt.datetime(2026, 5, 1, 12, 0, tzinfo=dt.timezone.utc)


def later(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


@pytest.fixture
def title(request) -> str:
    return f"Cryptograss:Moods/Dials/{request.node.name}"


def fetches(source: DialSource) -> list[str]:
    """Record every fetch the source asks of its (real) wiki client from now on."""
    seen: list[str] = []
    real = source.wiki.fetch

    def fetch(title: str):
        seen.append(title)
        return real(title)

    source.wiki.fetch = fetch
    return seen
