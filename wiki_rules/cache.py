"""The last good copy of the dials page, kept so a restart with the wiki down has it.

:class:`Cache` is the interface; :class:`DbCache` keeps the copy in the
service's database (one row per site and title) through the store's
:mod:`poller.store.dialcache` verbs.  The raw wikitext is kept, not the parsed
wording, so a better parser applies to old copies too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Protocol

from poller.store import dialcache

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


# One fetched revision of the dials page: the store's record, used as it is.
PageCopy = dialcache.DialCopy


class Cache(Protocol):
    def load(self, site: str, title: str) -> Optional[PageCopy]: ...

    def save(self, copy: PageCopy) -> None: ...


class DbCache:
    """The cache in the service's database; errors come out as ``StoreError``."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def load(self, site: str, title: str) -> Optional[PageCopy]:
        return dialcache.load_copy(self.engine, site, title)

    def save(self, copy: PageCopy) -> None:
        dialcache.save_copy(self.engine, copy)
