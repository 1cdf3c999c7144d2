"""In-memory stand-ins for the dial wording's wiki and cache, for unit tests.

:class:`MemoryWiki` behaves like :class:`wiki_rules.wiki.MwWiki` (pages by
title, and a switch to take it down); :class:`MemoryCache` behaves like
:class:`wiki_rules.cache.DbCache`.  Both raise what the real ones raise.
"""

from __future__ import annotations

from typing import Optional

from poller import errors
from wiki_rules.cache import PageCopy
from wiki_rules.wiki import Fetched, PageMissing


class MemoryWiki:
    """In-memory twin of :class:`MwWiki`: pages by title, and a switch to take it down."""

    def __init__(self, site: str = "memory://wiki") -> None:
        self.site = site
        self.pages: dict[str, Fetched] = {}
        self.down = False
        self.reads = 0
        self._revid = 0

    def edit(self, title: str, text: str, *, protected: Optional[bool] = False) -> int:
        self._revid += 1
        self.pages[title] = Fetched(revid=self._revid, wikitext=text, protected=protected)
        return self._revid

    def delete(self, title: str) -> None:
        del self.pages[title]

    def fetch(self, title: str) -> Fetched:
        self.reads += 1
        if self.down:
            raise errors.WikiError("memory wiki is down")
        if title not in self.pages:
            raise PageMissing(f"{title!r} does not exist")
        return self.pages[title]

    def write(self, title: str, text: str, summary: str, *, user: str, password: str,
              overwrite: bool = False) -> int:
        if self.down:
            raise errors.WikiError("memory wiki is down")
        if title in self.pages and not overwrite:
            raise errors.WikiError(f"{title!r} already exists; pass --force to replace it")
        return self.edit(title, text)


class MemoryCache:
    """In-memory twin of :class:`DbCache`."""

    def __init__(self) -> None:
        self.copies: dict[tuple[str, str], PageCopy] = {}

    def load(self, site: str, title: str) -> Optional[PageCopy]:
        return self.copies.get((site, title))

    def save(self, copy: PageCopy) -> None:
        self.copies[(copy.site, copy.title)] = copy
