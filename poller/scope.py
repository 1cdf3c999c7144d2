"""Which Moods a poller serves: every one, only some (``--moods``), or all but some
(``--exclude-moods``), so two deployments can split one store.

Every poller reads every new post (the scan keeps each listener's timers
whoever serves its Mood); a scope decides only which Moods' due wakes this
poller weighs, composes and starts.  Pure: slugs in, yes or no out.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from poller import errors


@dataclass(frozen=True)
class Scope:
    only: frozenset[str] = frozenset()  # served Moods' slugs; empty: every Mood
    without: frozenset[str] = frozenset()  # Moods never served

    @classmethod
    def parse(cls, only: str | None, without: str | None) -> "Scope":
        """From ``--moods a,b`` and ``--exclude-moods c`` (not both)."""
        if only is not None and without is not None:
            raise errors.UserError("give --moods or --exclude-moods, not both")
        return cls(_slugs(only, "--moods"), _slugs(without, "--exclude-moods"))

    @property
    def everything(self) -> bool:
        return not self.only and not self.without

    def serves(self, slug: str) -> bool:
        if self.only:
            return slug in self.only
        return slug not in self.without

    def describe(self) -> str:
        """As ``status`` shows it: ``all``, ``lobby,studio`` or ``all but attic``."""
        if self.only:
            return ",".join(sorted(self.only))
        if self.without:
            return "all but " + ",".join(sorted(self.without))
        return "all"

    @classmethod
    def from_description(cls, text: str) -> "Scope":
        """Back from :meth:`describe` (as a poller's beat records it)."""
        if text.startswith("all but "):
            return cls(without=frozenset(text.removeprefix("all but ").split(",")))
        if text in ("all", ""):
            return cls()
        return cls(only=frozenset(text.split(",")))

    def lease_name(self, base: str) -> str:
        """SQLite's one-poller lease, one per scope: split deployments both cycle."""
        if self.everything:
            return base
        return f"{base}:{hashlib.sha256(self.describe().encode()).hexdigest()[:16]}"

    def check(self, known: set[str]) -> None:
        """Refuse a scope naming a Mood the store does not hold."""
        unknown = sorted((self.only | self.without) - known)
        if unknown:
            raise errors.UserError(f"no such Mood: {', '.join(unknown)}")


def _slugs(raw: str | None, option: str) -> frozenset[str]:
    if raw is None:
        return frozenset()
    slugs = frozenset(s.strip() for s in raw.split(",") if s.strip())
    if not slugs:
        raise errors.UserError(f"{option} needs at least one Mood's slug")
    return slugs
