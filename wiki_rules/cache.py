"""The last good copy of the dials page, kept so a restart with the wiki down has it.

:class:`DbCache` keeps it in the ``dial_cache`` table (one row per site and
title); :class:`MemoryCache` is its in-memory twin for unit tests.  The raw
wikitext is kept, not the parsed wording, so a better parser applies to old
copies too.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Optional, Protocol

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from poller import errors, models


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
    def from_row(cls, row: models.DialCache) -> "PageCopy":
        return cls(site=row.site, title=row.title, revid=row.revid, wikitext=row.wikitext,
                   protected=row.protected, fetched_at=row.fetched_at)


class Cache(Protocol):
    def load(self, site: str, title: str) -> Optional[PageCopy]: ...

    def save(self, copy: PageCopy) -> None: ...


class MemoryCache:
    """In-memory twin of :class:`DbCache`."""

    def __init__(self) -> None:
        self.copies: dict[tuple[str, str], PageCopy] = {}

    def load(self, site: str, title: str) -> Optional[PageCopy]:
        return self.copies.get((site, title))

    def save(self, copy: PageCopy) -> None:
        self.copies[(copy.site, copy.title)] = copy


class DbCache:
    """The cache in the service's database; errors come out as ``StoreError``."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine

    def load(self, site: str, title: str) -> Optional[PageCopy]:
        query = sa.select(models.DialCache).where(models.DialCache.site == site,
                                                  models.DialCache.title == title)
        try:
            with Session(self.engine) as session:
                row = session.scalars(query).one_or_none()
                return PageCopy.from_row(row) if row else None
        except SQLAlchemyError as exc:
            raise errors.StoreError(f"cannot read the dial cache: {exc.__class__.__name__}") from exc

    def save(self, copy: PageCopy) -> None:
        query = sa.select(models.DialCache).where(models.DialCache.site == copy.site,
                                                  models.DialCache.title == copy.title)
        try:
            with Session(self.engine) as session, session.begin():
                row = session.scalars(query).one_or_none()
                if row is None:
                    row = models.DialCache(site=copy.site, title=copy.title)
                    session.add(row)
                row.revid = copy.revid
                row.wikitext = copy.wikitext
                row.protected = copy.protected
                row.fetched_at = copy.fetched_at
        except SQLAlchemyError as exc:
            raise errors.StoreError(f"cannot save the dial cache: {exc.__class__.__name__}") from exc
