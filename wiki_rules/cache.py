"""The last good copy of the dials page, kept so a restart with the wiki down has it.

:class:`Cache` is the interface; :class:`DbCache` keeps the copy in the
service's database (one row per site and title) through the store's
:mod:`poller.store.dialcache` verbs.  The raw wikitext is kept, not the parsed
wording, so a better parser applies to old copies too.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Protocol

from poller.store import dialcache

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


@dataclass(frozen=True)
class PageCopy:
    """One fetched revision of the dials page."""

    site: str
    title: str
    revid: int
    wikitext: str
    protected: Optional[bool]  # from anonymous edits; None: unknown
    fetched_at: dt.datetime  # aware UTC

    def age(self, now: dt.datetime) -> dt.timedelta:
        return now - self.fetched_at

    @classmethod
    def from_record(cls, record: dialcache.DialCopy) -> "PageCopy":
        return cls(site=record.site, title=record.title, revid=record.revid,
                   wikitext=record.wikitext, protected=record.protected,
                   fetched_at=record.fetched_at)

    def to_record(self) -> dialcache.DialCopy:
        return dialcache.DialCopy(site=self.site, title=self.title, revid=self.revid,
                                  wikitext=self.wikitext, protected=self.protected,
                                  fetched_at=self.fetched_at)


class Cache(Protocol):
    def load(self, site: str, title: str) -> Optional[PageCopy]: ...

    def save(self, copy: PageCopy) -> None: ...


class DbCache:
    """The cache in the service's database; errors come out as ``StoreError``."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def load(self, site: str, title: str) -> Optional[PageCopy]:
        found = dialcache.load_copy(self.engine, site, title)
        return PageCopy.from_record(found) if found else None

    def save(self, copy: PageCopy) -> None:
        dialcache.save_copy(self.engine, copy.to_record())
