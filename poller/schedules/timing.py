"""Times in real time zones: when an alarm fires, when a check-in is due.

Pure: a :class:`Spec` (one local time, a daily ``HH:MM`` or a cron expression,
always with an IANA zone) in, UTC instants out.  Wall times come from
``zoneinfo`` and cron expressions from ``croniter``, iterated over local wall
time and then placed on the clock by one rule, the same for every spec:

* a wall time in a daylight-saving **gap** (it never happens that day) moves
  forward by the gap: 02:30 on the day Berlin springs from 02:00 to 03:00 is
  03:30 local;
* an **ambiguous** wall time (the hour that happens twice in autumn) takes its
  first occurrence.

``warnings`` says when a spec meets either within the coming year, so whoever
sets one up is told.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import zoneinfo
from dataclasses import dataclass
from typing import Iterator, Optional

from poller import errors

UTC = dt.timezone.utc
MAX_COUNTED = 100_000  # firings counted in one late wake, at most
_EPOCH = dt.datetime(2000, 1, 1, tzinfo=UTC)  # a cron that never fires from here never does
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_AT_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})")
_HHMM_RE = re.compile(r"(\d{1,2}):(\d{2})")


@functools.lru_cache(maxsize=1)
def _known() -> frozenset[str]:
    # "localtime" is whatever the machine is set to: a naive time by another name.
    return frozenset(zoneinfo.available_timezones()) - {"localtime", "posixrules", "Factory"}


@functools.lru_cache(maxsize=256)
def zone(name: str) -> zoneinfo.ZoneInfo:
    """The IANA zone *name*, or UserError; there is no default zone and no abbreviation."""
    if not name or not name.strip():
        raise errors.UserError("a time zone is required (an IANA name such as Europe/Berlin)")
    if name not in _known():
        raise errors.UserError(f"unknown time zone {name!r}: give an IANA name such as "
                               "Europe/Berlin or America/New_York (or UTC)")
    return zoneinfo.ZoneInfo(name)


def on_clock(wall: dt.datetime, tz: zoneinfo.ZoneInfo) -> dt.datetime:
    """A naive local wall time as a UTC instant: gaps move forward, ambiguity takes the first.

    ``fold=0`` does both: in a gap it applies the offset from before the change
    (so the instant lands as far past the gap's start as the wall time was), and
    of two occurrences it is the first.
    """
    return wall.replace(tzinfo=tz, fold=0).astimezone(UTC)


def parse_at(raw: str, what: str = "--at") -> dt.datetime:
    m = _AT_RE.fullmatch(raw.strip())
    try:
        if m is None:
            raise ValueError
        return dt.datetime(*map(int, m.groups()))
    except ValueError:
        raise errors.UserError(f"{what} {raw!r} is not a local date and time "
                               "'YYYY-MM-DD HH:MM'") from None


def parse_hhmm(raw: str, what: str = "--daily") -> tuple[int, int]:
    m = _HHMM_RE.fullmatch(raw.strip())
    if m is None or int(m.group(1)) > 23 or int(m.group(2)) > 59:
        raise errors.UserError(f"{what} {raw!r} is not a local time of day 'HH:MM'")
    return int(m.group(1)), int(m.group(2))


def _cron(expr: str, start: dt.datetime):
    from croniter import croniter

    return croniter(expr, start)


def check_cron(expr: str) -> str:
    from croniter import croniter

    expr = " ".join(expr.split())
    if len(expr.split(" ")) != 5 or not croniter.is_valid(expr):
        raise errors.UserError(f"--cron {expr!r} is not a five-field cron expression "
                               "(minute hour day-of-month month day-of-week)")
    return expr


@dataclass(frozen=True)
class Spec:
    """When: ``at`` one local date and time, ``daily`` a local HH:MM, or ``cron``; in ``tz``."""

    kind: str
    text: str
    tz: str

    @classmethod
    def make(cls, kind: str, text: str, tz: str) -> "Spec":
        """A checked spec, or UserError naming what is wrong."""
        zone(tz)
        if kind == "at":
            w = parse_at(text)
            return cls(kind, f"{w.year:04d}-{w:%m-%d %H:%M}", tz)
        if kind == "daily":
            h, m = parse_hhmm(text)
            return cls(kind, f"{h:02d}:{m:02d}", tz)
        if kind == "cron":
            return cls(kind, check_cron(text), tz)
        raise errors.UserError(f"unknown schedule {kind!r} (at, daily or cron)")

    @property
    def zone(self) -> zoneinfo.ZoneInfo:
        return zone(self.tz)

    @property
    def cron(self) -> str:
        if self.kind == "daily":
            h, m = parse_hhmm(self.text)
            return f"{m} {h} * * *"
        return self.text

    def walls_after(self, wall: dt.datetime) -> Iterator[dt.datetime]:
        """Local wall times strictly after the naive *wall*, in order."""
        if self.kind == "at":
            at = parse_at(self.text)
            if at > wall:
                yield at
            return
        it = _cron(self.cron, wall)
        while True:
            try:
                nxt = it.get_next(dt.datetime)
            except (ValueError, OverflowError):
                # No date matches (the 31st of February), or the next one lies past the
                # year 9999: either way there are no more.
                return
            yield nxt

    def after(self, t: dt.datetime, inclusive: bool = False) -> Iterator[dt.datetime]:
        """UTC instants after *t* (or at it, *inclusive*), in order."""
        tz = self.zone
        try:
            # Three hours back in wall time covers any offset change and the moved gap times.
            start = t.astimezone(tz).replace(tzinfo=None) - dt.timedelta(hours=3)
            last = None
            for wall in self.walls_after(start):
                inst = on_clock(wall, tz)
                if (inst > t or (inclusive and inst == t)) and inst != last:
                    last = inst
                    yield inst
        except OverflowError:
            return  # past the last instant the clock can hold: nothing more fires

    def next(self, t: dt.datetime, inclusive: bool = False) -> Optional[dt.datetime]:
        return next(self.after(t, inclusive), None)

    def between(self, lo: dt.datetime, hi: dt.datetime, limit: int = MAX_COUNTED) -> list[dt.datetime]:
        """Instants in (lo, hi], oldest first, at most *limit*."""
        out = []
        for inst in self.after(lo):
            if inst > hi or len(out) >= limit:
                break
            out.append(inst)
        return out

    def latest(self, t: dt.datetime) -> Optional[dt.datetime]:
        """The newest instant at or before *t* (``at`` and ``daily`` specs)."""
        if self.kind == "at":
            inst = on_clock(parse_at(self.text), self.zone)
            return inst if inst <= t else None
        day = t.astimezone(self.zone).date()
        for back in range(0, 3):
            inst = self.on_date(day - dt.timedelta(days=back))
            if inst is not None and inst <= t:
                return inst
        return None

    def on_date(self, day: dt.date) -> Optional[dt.datetime]:
        """The instant this spec names on the local calendar *day* (daily and at)."""
        tz = self.zone
        if self.kind == "at":
            at = parse_at(self.text)
            return on_clock(at, tz) if at.date() == day else None
        h, m = parse_hhmm(self.text)
        return on_clock(dt.datetime(day.year, day.month, day.day, h, m), tz)

    def label(self) -> str:
        return f"{self.kind} {self.text} {self.tz}"


def first_firing(spec: Spec, now: dt.datetime, passed: str,
                 inclusive: bool = True) -> dt.datetime:
    """When *spec* first fires at (*inclusive*) or after *now*; or UserError, in one line,
    when it never will: a cron expression no date matches, a time outside the range the
    clock can hold, or (saying *passed*) a time that has passed.  The one check every
    alarm (a command, the API, a reply's block) and every once agreement goes through."""
    first = spec.next(now, inclusive)
    if first is not None:
        return first
    if spec.kind == "cron" and Spec("cron", spec.text, "UTC").next(_EPOCH) is None:
        raise errors.UserError(f"cron {spec.text} never fires (no date matches it)")
    try:
        at = on_clock(parse_at(spec.text), spec.zone) if spec.kind == "at" else None
    except OverflowError:
        at = None
    if at is not None and at <= now:
        raise errors.UserError(f"{shown(at, spec.tz)} has passed: {passed}")
    raise errors.UserError(f"{spec.label()} never fires (it lies outside the times the clock "
                           f"can hold, up to {dt.datetime.max:%Y-%m-%d %H:%M} UTC)")


def shown(t: Optional[dt.datetime], tz: str) -> str:
    """``2026-10-06 21:00 Europe/Berlin (Tue, UTC+02:00)``; '' for None."""
    if t is None:
        return ""
    local = t.astimezone(zone(tz))
    off = local.utcoffset() or dt.timedelta(0)
    sign = "-" if off < dt.timedelta(0) else "+"
    mins = abs(int(off.total_seconds())) // 60
    return (f"{local:%Y-%m-%d %H:%M} {tz} ({WEEKDAYS[local.weekday()]}, "
            f"UTC{sign}{mins // 60:02d}:{mins % 60:02d})")


def parse_shown(raw: str, tz: str, what: str = "--for") -> dt.datetime:
    """A deadline as :func:`shown` prints it, or just its local 'YYYY-MM-DD HH:MM' part;
    the instant, placed by the same gap and ambiguity rule."""
    head = raw.strip()[:16]
    instant = on_clock(parse_at(head, what), zone(tz))
    if raw.strip() not in (head, shown(instant, tz)):
        raise errors.UserError(f"{what} {raw!r} does not match the deadline it names "
                               f"({shown(instant, tz)})")
    return instant


def transitions(tz: zoneinfo.ZoneInfo, start: dt.datetime,
                days: int = 366) -> list[tuple[str, dt.datetime, dt.datetime]]:
    """('gap' | 'ambiguous', first wall time, end wall time) for each offset change
    in the *days* after the UTC instant *start*."""
    out = []
    t = start.replace(minute=0, second=0, microsecond=0)
    before = t.astimezone(tz).utcoffset()
    for _ in range(days * 24):
        nxt = t + dt.timedelta(hours=1)
        after = nxt.astimezone(tz).utcoffset()
        if after != before:
            lo, hi = t, nxt
            while hi - lo > dt.timedelta(minutes=1):  # the change to the minute
                mid = lo + (hi - lo) / 2
                if mid.astimezone(tz).utcoffset() == before:
                    lo = mid
                else:
                    hi = mid
            change = hi.replace(second=0, microsecond=0)
            delta = after - before
            wall = (change + (before if delta > dt.timedelta(0) else after)).replace(tzinfo=None)
            out.append(("gap" if delta > dt.timedelta(0) else "ambiguous", wall, wall + abs(delta)))
            before = after
        t = nxt
    return out


def warnings(spec: Spec, now: dt.datetime) -> list[str]:
    """What the gap and ambiguity rules will do to *spec* in the coming year, in words."""
    out = []
    for what, lo, hi in transitions(spec.zone, now):
        wall = next(iter(spec.walls_after(lo - dt.timedelta(minutes=1))), None)
        if wall is None or wall >= hi:
            continue
        when = on_clock(wall, spec.zone)
        if what == "gap":
            out.append(f"{wall:%Y-%m-%d %H:%M} does not exist in {spec.tz} (the clocks skip "
                       f"from {lo:%H:%M} to {hi:%H:%M}); it is moved forward by the gap, to "
                       f"{shown(when, spec.tz)}")
        else:
            out.append(f"{wall:%Y-%m-%d %H:%M} happens twice in {spec.tz} (the clocks go back "
                       f"from {hi:%H:%M} to {lo:%H:%M}); the first is taken, "
                       f"{shown(when, spec.tz)}")
    return out
