"""What ``mood-poller dials`` does, as library functions the command only calls.

:func:`show` reads the current wording (optionally forcing a fetch),
:func:`render` and :func:`as_dict` present it, and :func:`seed_page` writes
the shipped starting page to the wiki with the configured bot password.
"""

from __future__ import annotations

import datetime as dt
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from poller import config as config_mod
from poller import errors
from wiki_rules import fallback
from wiki_rules.cache import DbCache
from wiki_rules.source import DialSource, DialStatus, build_wiki, format_age
from wiki_rules.wiki import Wiki

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

PAGE_FILE = "dials.wikitext"
OPEN_PAGE_WARNING = ("anyone can edit this page, and agents are told what it says: "
                     "protect it from anonymous edits")
NO_WIKI_WARNING = "no wiki configured (wiki.site is empty): built-in wording only"
SEED_SUMMARY = "Starting dial wording for the Mood poller"


def show(cfg: config_mod.Config, engine: Engine, now: dt.datetime, *,
         refresh: bool = False, wiki: Optional[Wiki] = None) -> tuple[DialStatus, bool]:
    """The wording in use at *now*, and whether a forced refresh (if asked) worked."""
    source = DialSource(cfg.wiki, DbCache(engine), wiki=wiki)
    if refresh:
        ok = source.refresh(now)
    else:
        source.current(now)
        ok = True
    return source.status(now), ok


def as_dict(status: DialStatus) -> dict:
    """The status as plain JSON-ready values."""
    return {
        "source": status.source,
        "site": status.site,
        "title": status.title,
        "revid": status.revid,
        "fetched_at": status.fetched_at.isoformat() if status.fetched_at else None,
        "age_seconds": int(status.age.total_seconds()) if status.age is not None else None,
        "protected": status.protected,
        "warnings": _warnings(status),
        "page_warnings": list(status.page_warnings),
        "error": status.error,
        "dials": {dial: {level: {"text": _text(status, dial, level),
                                 "from": "page" if level in status.from_page.get(dial, ())
                                 else "built-in"}
                         for level in levels}
                  for dial, levels in fallback.DIALS.items()},
    }


def render(status: DialStatus) -> str:
    """The status as text for a person."""
    lines = [f"source:    {status.source}"]
    if status.site:
        lines.append(f"page:      {status.title} on {status.site}")
    if status.revid is not None and status.age is not None:
        lines.append(f"revision:  {status.revid}, fetched {format_age(status.age)} ago")
    if status.revid is not None:
        lines.append(f"protected: {_yes_no(status.protected)}")
    lines += [f"warning:   {w}" for w in _warnings(status)]
    if status.page_warnings:
        lines.append("the page:")
        lines += [f"  - {w}" for w in status.page_warnings]
    for dial, levels in fallback.DIALS.items():
        lines.append("")
        lines.append(dial)
        for level in levels:
            origin = "" if level in status.from_page.get(dial, ()) else " (built-in)"
            text = _text(status, dial, level) or "(no line)"
            lines.append(f"  {level}{origin}:")
            lines += [f"    {line}" if line else "" for line in text.splitlines()]
    return "\n".join(lines)


def seed_page(cfg: config_mod.Config, *, overwrite: bool = False,
              page: Optional[Path] = None, wiki: Optional[Wiki] = None) -> int:
    """Write the starting page to the wiki as the configured bot; the new revision id.

    The password comes only from the configuration (file or environment).
    """
    w = cfg.wiki
    if not w.site:
        raise errors.ConfigError("config: wiki.site is empty; there is no wiki to seed")
    if not (w.bot_user and w.bot_password):
        raise errors.ConfigError(
            "config: seeding the page needs wiki.bot_user and a bot password "
            f"(wiki.bot_password or {config_mod.ENV_WIKI_PASSWORD})")
    text = starting_page(page)
    target = wiki if wiki is not None else build_wiki(w)
    assert target is not None
    return target.write(w.title, text, SEED_SUMMARY, user=w.bot_user,
                        password=w.bot_password, overwrite=overwrite)


def starting_page(path: Optional[Path] = None) -> str:
    """The shipped starting wikitext (``memory-lane/dials.wikitext``), or *path*'s."""
    if path is not None:
        return Path(path).read_text(encoding="utf-8")
    try:
        return resources.files("poller.kit").joinpath(PAGE_FILE).read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        # Running from a checkout: memory-lane/ is not importable as poller.kit.
        here = Path(__file__).resolve().parent.parent / "memory-lane" / PAGE_FILE
        return here.read_text(encoding="utf-8")


def _text(status: DialStatus, dial: str, level: str) -> str:
    if dial == "discretion":
        return status.words.consider_ask(level)
    return status.words.verbosity_line(level)


def _warnings(status: DialStatus) -> list[str]:
    out = []
    if not status.site:
        out.append(NO_WIKI_WARNING)
    if status.error:
        out.append(f"last refresh failed: {status.error}")
    if status.protected is False:
        out.append(OPEN_PAGE_WARNING)
    return out


def _yes_no(value: Optional[bool]) -> str:
    if value is None:
        return "unknown"
    return "yes, from anonymous edits" if value else "NO"
