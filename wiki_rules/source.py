"""Where the loop gets the dial wording: :class:`DialSource`.

``DialSource.current(now)`` returns the :class:`~wiki_rules.fallback.DialWords`
to put in a wake, best first:

- ``wiki@<revid>``: a copy of the page fetched less than ``ttl`` seconds ago
  (possibly by an earlier run: the copy in the database counts);
- ``cache@<revid> (age 7m)``: the last good copy, older than ``ttl`` because
  refreshing it failed (wiki down, slow, page deleted, page with no dials);
- ``fallback``: the built-in wording, when no good copy was ever had.

A refresh is tried when the copy is older than ``ttl``, never more than once
per ``ttl`` while the wiki keeps failing, and each try is bounded by the
wiki's ``timeout``, so a dead wiki costs the loop at most that, rarely.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from poller import config as config_mod
from poller import errors
from wiki_rules import fallback
from wiki_rules.cache import Cache, DbCache, PageCopy
from wiki_rules.parse import Parsed, parse_dials
from wiki_rules.wiki import MwWiki, Wiki

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)


def build_wiki(cfg: config_mod.WikiConfig) -> Optional[MwWiki]:
    """The configured wiki, or None when ``wiki.site`` is empty (built-in wording only)."""
    if not cfg.site:
        return None
    return MwWiki(cfg.site, path=cfg.path, scheme=cfg.scheme, timeout=cfg.timeout)


@dataclass(frozen=True)
class DialStatus:
    """Everything ``mood-poller dials`` shows: the wording and where it came from."""

    words: fallback.DialWords
    site: str
    title: str
    revid: Optional[int] = None
    fetched_at: Optional[dt.datetime] = None
    age: Optional[dt.timedelta] = None
    protected: Optional[bool] = None  # from anonymous edits; None: unknown
    from_page: dict[str, tuple[str, ...]] = field(default_factory=dict)
    page_warnings: tuple[str, ...] = ()
    error: Optional[str] = None  # why the last refresh failed, if it did

    @property
    def source(self) -> str:
        return self.words.source


class DialSource:
    """The dial wording for the loop: wiki, else last good copy, else built-in."""

    def __init__(self, cfg: config_mod.WikiConfig, cache: Cache,
                 wiki: Optional[Wiki] = None) -> None:
        self.cfg = cfg
        self.cache = cache
        self.wiki = wiki if wiki is not None else build_wiki(cfg)
        self._copy: Optional[PageCopy] = None
        self._parsed: Optional[Parsed] = None
        self._loaded = False
        self._retry_at: Optional[dt.datetime] = None
        self._error: Optional[str] = None
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, cfg: config_mod.Config, engine: Engine) -> "DialSource":
        """The source the service uses: the configured wiki, cached in its database."""
        return cls(cfg.wiki, DbCache(engine))

    @property
    def site(self) -> str:
        return self.wiki.site if self.wiki is not None else ""

    def current(self, now: dt.datetime) -> fallback.DialWords:
        """The wording to use at *now*; refreshes first if the copy is due (bounded)."""
        self._load()
        # If another thread is already refreshing, serve what we have, don't wait.
        if self._due(now) and self._lock.acquire(blocking=False):
            try:
                if self._due(now):
                    self._refresh(now)
            finally:
                self._lock.release()
        return self._words(now)

    def refresh(self, now: dt.datetime) -> bool:
        """Fetch the page now, whatever its age or the back-off; True if it worked."""
        self._load()
        if self.wiki is None:
            return False
        with self._lock:
            return self._refresh(now)

    def status(self, now: dt.datetime) -> DialStatus:
        """The current wording with its provenance, without fetching anything."""
        self._load()
        copy, parsed = self._copy, self._parsed
        error = self._error
        if copy is None or parsed is None:
            return DialStatus(words=fallback.DialWords(), site=self.site,
                              title=self.cfg.title, error=error)
        return DialStatus(
            words=self._words(now), site=copy.site, title=copy.title, revid=copy.revid,
            fetched_at=copy.fetched_at, age=copy.age(now), protected=copy.protected,
            from_page={dial: tuple(levels) for dial, levels in parsed.levels.items()},
            page_warnings=parsed.warnings, error=error)

    # -- internals -------------------------------------------------------------

    def _load(self) -> None:
        """Pick up the copy an earlier run left in the cache (once)."""
        if self._loaded:
            return
        self._loaded = True
        if self.wiki is None:
            return
        try:
            copy = self.cache.load(self.site, self.cfg.title)
        except errors.StoreError as exc:
            log.warning("dial cache unreadable: %s", exc, extra={"action": "dial_cache_unreadable"})
            return
        if copy is not None:
            self._keep(copy, parse_dials(copy.wikitext, self.cfg.max_chars))

    def _due(self, now: dt.datetime) -> bool:
        if self.wiki is None:
            return False
        if self._retry_at is not None and now < self._retry_at:
            return False
        return self._copy is None or self._copy.age(now).total_seconds() >= self.cfg.ttl

    def _refresh(self, now: dt.datetime) -> bool:
        assert self.wiki is not None
        title = self.cfg.title
        try:
            fetched = self.wiki.fetch(title)
            parsed = parse_dials(fetched.wikitext, self.cfg.max_chars)
            if parsed.count == 0:
                raise errors.WikiError(f"{title!r} has no dial sections")
        except errors.WikiError as exc:
            # Back off: one failed try per ttl at most, however often we are asked.
            self._retry_at = now + dt.timedelta(seconds=max(self.cfg.ttl, self.cfg.timeout))
            self._error = str(exc)
            log.warning("dial wording not refreshed: %s", exc,
                        extra={"action": "dial_refresh_failed", "title": title,
                               "revid": self._copy.revid if self._copy else None})
            return False
        copy = PageCopy(site=self.site, title=title, revid=fetched.revid,
                        wikitext=fetched.wikitext, protected=fetched.protected, fetched_at=now)
        if self._copy is None or self._copy.revid != copy.revid:
            log.info("dial wording now at revision %s", copy.revid,
                     extra={"action": "dial_refreshed", "title": title, "revid": copy.revid,
                            "page_warnings": list(parsed.warnings)})
        self._keep(copy, parsed)
        self._retry_at = None
        self._error = None
        try:
            self.cache.save(copy)
        except errors.StoreError as exc:
            log.warning("dial cache not saved: %s", exc, extra={"action": "dial_cache_unsaved"})
        return True

    def _keep(self, copy: PageCopy, parsed: Parsed) -> None:
        self._copy, self._parsed = copy, parsed

    def _words(self, now: dt.datetime) -> fallback.DialWords:
        copy, parsed = self._copy, self._parsed
        if copy is None or parsed is None:
            return fallback.BUILT_IN
        return parsed.words(source_name(copy, now, self.cfg.ttl))


def source_name(copy: PageCopy, now: dt.datetime, ttl: float) -> str:
    """``wiki@<revid>`` while fresh, ``cache@<revid> (age 7m)`` once stale."""
    age = copy.age(now)
    if age.total_seconds() < ttl:
        return f"wiki@{copy.revid}"
    return f"cache@{copy.revid} (age {format_age(age)})"


def format_age(age: dt.timedelta) -> str:
    """A short human age: ``42s``, ``7m``, ``5h``, ``3d``."""
    seconds = max(0, int(age.total_seconds()))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 48 * 3600:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"
