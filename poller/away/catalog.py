"""An agent's activities catalog: what it may step out to do, and the knobs of its absences.

The catalog is a TOML file beside the agent's other material, named on the
agent (``mood-poller agent set helper --activities FILE.toml``).  A missing
file, or one with no ``[[catalog]]`` entry, turns the feature off for that
agent: no away block is offered, no gate is consulted, and every wake is
what it would have been without it.  A file that is present but invalid is
refused loudly (:class:`CatalogError`, naming the key and its line), at
``agent set`` and when a poller starts: a typo never silently drops a knob.

``parse`` is pure (text in, :class:`Catalog` out); ``load`` reads a file and
remembers what it read by the file's size and modification time, so asking
every cycle costs one ``stat``.  The shipped skeleton is the kit's
``activities.example.toml``.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
import tomllib
from dataclasses import dataclass
from typing import Any, Optional

from poller import errors

log = logging.getLogger("poller.catalog")

MAX_MINUTES = 7 * 24 * 60  # no knob and no absence reaches past a week
MAX_ENTRIES = 50
LABEL_CHARS = 100
SEED_CHARS = 2_000
CONTENT_SOURCES = ("authored",)  # "adapter" is a reserved seam, refused until it exists
ID_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
HOURS_RE = re.compile(r"(\d{2}):(\d{2})-(\d{2}):(\d{2})")
RESERVED_IDS = {"sleep": "the sleep cycle, which mood-poller does not run"}

KNOBS = {  # top-level knob -> (default, least, most)
    "archive_after_minutes": (45, 0, MAX_MINUTES),
    "idle_nudge_minutes": (20, 1, MAX_MINUTES),
    "min_gap_minutes": (90, 0, MAX_MINUTES),
    "catch_up_limit": (20, 1, 500),
}
TOP_KEYS = (*KNOBS, "active_hours", "catalog")
ENTRY_KEYS = ("id", "label", "duration_minutes", "reachable", "content_source", "seed")


class CatalogError(errors.ConfigError):
    """An activities catalog that is present but invalid (exit 78 at start-up)."""


@dataclass(frozen=True)
class Entry:
    """One kind of activity the agent may go out for."""

    id: str
    label: str  # what it is shown doing while out: "out for a creek walk"
    duration: tuple[int, int]  # minutes, the roll's range
    seed: str  # what its account of the activity is written from
    reachable: bool = True  # a trusted ping from the Mood it left may call it back
    content_source: str = "authored"


@dataclass(frozen=True)
class Catalog:
    entries: tuple[Entry, ...]
    archive_after_minutes: int = 45
    idle_nudge_minutes: int = 20
    min_gap_minutes: int = 90
    active_hours: Optional[tuple[dt.time, dt.time]] = None  # in the agent's time zone
    catch_up_limit: int = 20
    source: str = ""

    def entry(self, activity: str) -> Optional[Entry]:
        return next((e for e in self.entries if e.id == activity), None)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(e.id for e in self.entries)


def in_hours(hours: Optional[tuple[dt.time, dt.time]], local: dt.time) -> bool:
    """Whether the wall-clock time *local* is inside *hours* (None: always); the window
    may wrap midnight ("22:00-02:00")."""
    if hours is None:
        return True
    start, end = hours
    if start < end:
        return start <= local < end
    return local >= start or local < end


# -- parsing -----------------------------------------------------------------------------------


class _Lines:
    """Where each key of the file is written, to name its line in an error."""

    HEADER = re.compile(r"^\s*\[\[\s*catalog\s*\]\]")
    TABLE = re.compile(r"^\s*\[")

    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.headers = [i for i, line in enumerate(self.lines) if self.HEADER.match(line)]
        first_table = next((i for i, line in enumerate(self.lines) if self.TABLE.match(line)),
                           len(self.lines))
        self.top_end = first_table

    def find(self, key: str, entry: Optional[int] = None) -> Optional[int]:
        """The 1-based line of *key* at the top level (entry None) or in entry *entry*."""
        assign = re.compile(rf"^\s*{re.escape(key)}\s*=")
        if entry is None:
            table = re.compile(rf"^\s*\[+\s*{re.escape(key)}\s*\]")
            for i, line in enumerate(self.lines):
                if (i < self.top_end and assign.match(line)) or table.match(line):
                    return i + 1
            return None
        if entry >= len(self.headers):
            return None
        lo = self.headers[entry]
        hi = self.headers[entry + 1] if entry + 1 < len(self.headers) else len(self.lines)
        for i in range(lo, hi):
            if assign.match(self.lines[i]):
                return i + 1
        return lo + 1


class _Checker:
    def __init__(self, text: str, source: str):
        self.where = _Lines(text)
        self.source = source or "the activities catalog"

    def fail(self, name: str, problem: str, entry: Optional[int] = None, key: str = "") -> None:
        line = self.where.find(key or name, entry)
        at = f" line {line}" if line else ""
        raise CatalogError(f"{self.source}{at}: {name} {problem}")

    def whole(self, raw: dict, key: str, default: int, lo: int, hi: int) -> int:
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f"must be a whole number of minutes, got {value!r}")
        if not lo <= value <= hi:
            self.fail(key, f"must be from {lo} to {hi}, got {value}")
        return value

    def hours(self, raw: dict) -> Optional[tuple[dt.time, dt.time]]:
        value = raw.get("active_hours")
        if value is None:
            return None
        m = HOURS_RE.fullmatch(value.strip()) if isinstance(value, str) else None
        times = None
        if m is not None:
            h1, m1, h2, m2 = map(int, m.groups())
            if h1 < 24 and h2 < 24 and m1 < 60 and m2 < 60:
                times = (dt.time(h1, m1), dt.time(h2, m2))
        if times is None:
            self.fail("active_hours", f'must be "HH:MM-HH:MM" (e.g. "10:00-23:00"), got {value!r}')
        if times[0] == times[1]:
            self.fail("active_hours", f"must not start and end at the same time, got {value!r}")
        return times

    def entry(self, raw: Any, i: int, seen: set[str]) -> Entry:
        name = f"catalog[{i + 1}]"
        if not isinstance(raw, dict):
            self.fail(name, "must be a table ([[catalog]])", i, "id")
        for key in raw:
            if key not in ENTRY_KEYS:
                self.fail(f"{name}.{key}", f"is not a catalog key (known: {', '.join(ENTRY_KEYS)})",
                          i, key)
        ident = self.text(raw, "id", name, i, 40)
        if not ID_RE.fullmatch(ident):
            self.fail(f"{name}.id", "must be lower-case letters, digits, _ and - (up to 40, "
                                    f"starting with a letter or digit), got {ident!r}", i, "id")
        if ident in RESERVED_IDS:
            self.fail(f"{name}.id", f"{ident!r} is reserved for {RESERVED_IDS[ident]}", i, "id")
        if ident in seen:
            self.fail(f"{name}.id", f"{ident!r} is given twice; ids must be unique", i, "id")
        seen.add(ident)
        label = self.text(raw, "label", name, i, LABEL_CHARS)
        seed = self.text(raw, "seed", name, i, SEED_CHARS, one_line=False)
        reachable = raw.get("reachable", True)
        if not isinstance(reachable, bool):
            self.fail(f"{name}.reachable", f"must be true or false, got {reachable!r}", i,
                      "reachable")
        source = raw.get("content_source", "authored")
        if source == "adapter":
            self.fail(f"{name}.content_source", '"adapter" is reserved for activities backed '
                      'by real content and is not implemented yet; use "authored"', i,
                      "content_source")
        if source not in CONTENT_SOURCES:
            self.fail(f"{name}.content_source", f'must be "authored", got {source!r}', i,
                      "content_source")
        return Entry(ident, label, self.duration(raw, name, i), seed, reachable, source)

    def text(self, raw: dict, key: str, name: str, i: int, limit: int,
             one_line: bool = True) -> str:
        value = raw.get(key)
        if value is None:
            self.fail(f"{name}.{key}", "is missing", i, key)
        if not isinstance(value, str) or not value.strip():
            self.fail(f"{name}.{key}", f"must be a text that is not empty, got {value!r}", i, key)
        value = value.strip()
        if one_line and any(c in value for c in "\r\n"):
            self.fail(f"{name}.{key}", "must be one line", i, key)
        if any((c < " " and c not in "\n\t") or c == "\x7f" for c in value):
            self.fail(f"{name}.{key}", "may hold no control characters", i, key)
        if len(value) > limit:
            self.fail(f"{name}.{key}", f"is {len(value)} characters; the limit is {limit}", i, key)
        return value

    def duration(self, raw: dict, name: str, i: int) -> tuple[int, int]:
        value = raw.get("duration_minutes")
        key = f"{name}.duration_minutes"
        if value is None:
            self.fail(key, "is missing (give [lo, hi] in minutes)", i, "duration_minutes")
        if (not isinstance(value, list) or len(value) != 2
                or any(isinstance(v, bool) or not isinstance(v, int) for v in value)):
            self.fail(key, f"must be [lo, hi], two whole numbers of minutes, got {value!r}", i,
                      "duration_minutes")
        lo, hi = value
        if not 0 < lo <= hi <= MAX_MINUTES:
            self.fail(key, f"must be [lo, hi] with 0 < lo <= hi <= {MAX_MINUTES}, got {value!r}",
                      i, "duration_minutes")
        return lo, hi


def parse(text: str, source: str = "") -> Optional[Catalog]:
    """The catalog in *text*, or None when it has no entry (the feature is off).

    Raises :class:`CatalogError` naming the key and its line for anything
    invalid, knobs included, even when the catalog is empty.
    """
    check = _Checker(text, source)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{check.source}: not valid TOML: {exc}") from None
    for key in raw:
        if key not in TOP_KEYS:
            check.fail(key, f"is not a catalog knob (known: {', '.join(TOP_KEYS)})")
    knobs = {key: check.whole(raw, key, *spec) for key, spec in KNOBS.items()}
    hours = check.hours(raw)
    entries = raw.get("catalog", [])
    if not isinstance(entries, list):
        check.fail("catalog", "must be a list of [[catalog]] tables")
    if len(entries) > MAX_ENTRIES:
        check.fail("catalog", f"has {len(entries)} entries; the limit is {MAX_ENTRIES}")
    seen: set[str] = set()
    parsed = tuple(check.entry(e, i, seen) for i, e in enumerate(entries))
    if not parsed:
        return None
    return Catalog(parsed, active_hours=hours, source=source, **knobs)


# -- files ---------------------------------------------------------------------------------


_read: dict[str, tuple[tuple, Optional[Catalog]]] = {}  # path -> (stat key, what it held)
_good: dict[str, Optional[Catalog]] = {}  # path -> the last copy that parsed
_warned: set[tuple] = set()


def load(path: str) -> Optional[Catalog]:
    """The catalog in the file *path*: None when the file is missing or the catalog empty.

    Raises CatalogError when the file cannot be read or is invalid.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CatalogError(f"{path}: cannot be read: {exc.strerror}") from None
    key = (st.st_mtime_ns, st.st_size, st.st_ino)
    hit = _read.get(path)
    if hit is not None and hit[0] == key:
        return hit[1]
    try:
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CatalogError(f"{path}: cannot be read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise CatalogError(f"{path}: is not UTF-8 text (byte {exc.start})") from None
    catalog = parse(text, path)
    _read[path] = (key, catalog)
    _good[path] = catalog
    return catalog


def path_of(agent) -> Optional[str]:
    """The catalog file named on *agent* (an AgentInfo), if any."""
    return (agent.options or {}).get("activities") or None


def of(agent, strict: bool = False) -> Optional[Catalog]:
    """*agent*'s catalog as its file holds it now.

    Strict (a poller starting, ``agent set``): an invalid file raises.  Not
    strict (a running poller, a turn settling): an invalid file is logged once
    and the last good copy read in this process serves (none: the feature is off).
    """
    path = path_of(agent)
    if path is None:
        return None
    try:
        return load(path)
    except CatalogError as exc:
        if strict:
            raise
        if (path, str(exc)) not in _warned:
            _warned.add((path, str(exc)))
            log.error("%s; the last good copy of the catalog serves", exc,
                      extra={"action": "catalog_invalid", "agent": agent.handle})
        return _good.get(path)
