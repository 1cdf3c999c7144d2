"""The dial cache's SQL: the last good copy of the dials page, one row per site and title.

:mod:`wiki_rules.cache` keeps its copies through these verbs and never builds
SQL itself.  Driver errors come out as :class:`poller.errors.StoreError`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Optional

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from poller import errors
from poller.models import DialCache


@dataclass(frozen=True)
class DialCopy:
    """One stored copy of the dials page."""

    site: str
    title: str
    revid: int
    wikitext: str
    protected: Optional[bool]  # from anonymous edits; None: unknown
    fetched_at: dt.datetime  # aware UTC

    def age(self, now: dt.datetime) -> dt.timedelta:
        return now - self.fetched_at

    @classmethod
    def from_row(cls, row: DialCache) -> "DialCopy":
        return cls(site=row.site, title=row.title, revid=row.revid, wikitext=row.wikitext,
                   protected=row.protected, fetched_at=row.fetched_at)


def _row_for(site: str, title: str) -> sa.Select:
    return sa.select(DialCache).where(DialCache.site == site, DialCache.title == title)


def load_copy(engine: sa.Engine, site: str, title: str) -> Optional[DialCopy]:
    """The copy kept for (*site*, *title*), or None if there is none."""
    try:
        with Session(engine) as session:
            row = session.scalars(_row_for(site, title)).one_or_none()
            return DialCopy.from_row(row) if row else None
    except SQLAlchemyError as exc:
        raise errors.StoreError(f"cannot read the dial cache: {exc.__class__.__name__}") from exc


def save_copy(engine: sa.Engine, copy: DialCopy) -> None:
    """Keep *copy* as the one copy for its site and title, replacing any older one."""
    try:
        with Session(engine) as session, session.begin():
            row = session.scalars(_row_for(copy.site, copy.title)).one_or_none()
            if row is None:
                row = DialCache(site=copy.site, title=copy.title)
                session.add(row)
            row.revid = copy.revid
            row.wikitext = copy.wikitext
            row.protected = copy.protected
            row.fetched_at = copy.fetched_at
    except SQLAlchemyError as exc:
        raise errors.StoreError(f"cannot save the dial cache: {exc.__class__.__name__}") from exc
