"""Finished turns kept on disk while the store cannot take them.

A turn that finished while its database was unreachable has an outcome only
this process holds: the agent's reply, already written.  Before a second try
at settling it, the outcome is written here (one file per wake, readable by
the poller's user only, written whole or not at all), and removed once it is
settled.  Should the process die before the store is back, the next cycle's
recovery on this machine settles it from here instead of calling the turn cut
off (:func:`poller.cycle.recover.recover`): a finished reply is never thrown
away because the store was down.

The files live under the data directory, in a folder per database (its URL
without the password, hashed), so two stores on one machine never settle
each other's turns.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Iterator

from poller.config import data_dir

log = logging.getLogger("poller.runner")


def folder(db_url) -> Path:
    """Where the kept turns of the store at *db_url* (a URL or SQLAlchemy URL) go."""
    shown = db_url.render_as_string(hide_password=True) if hasattr(db_url, "render_as_string") \
        else str(db_url)
    return data_dir() / "settling" / hashlib.sha256(shown.encode()).hexdigest()[:16]


def _path(db_url, wake_id: int) -> Path:
    return folder(db_url) / f"wake-{wake_id}.json"


def keep(db_url, wake_id: int, outcome) -> bool:
    """Write *outcome* (a :class:`poller.turns.wakers.TurnResult`) for *wake_id*; False when
    the disk would not take it either (then only this process holds it)."""
    path = _path(db_url, wake_id)
    tmp = path.with_suffix(".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(dataclasses.asdict(outcome), fh, ensure_ascii=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        return True
    except OSError as exc:
        log.error("turn %s: its outcome could not be kept on disk: %s", wake_id, exc.strerror,
                  extra={"action": "turn_keep_failed", "wake_id": wake_id})
        return False


def kept(db_url, wake_id: int):
    """The outcome kept for *wake_id*, or None."""
    from poller.turns.wakers import TurnResult

    try:
        raw = json.loads(_path(db_url, wake_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict):
        return None
    names = {f.name for f in dataclasses.fields(TurnResult)}
    try:
        return TurnResult(**{k: v for k, v in raw.items() if k in names})
    except TypeError:
        return None


def waiting(db_url) -> Iterator[int]:
    """The wake ids with an outcome kept for them, oldest wake first."""
    try:
        names = os.listdir(folder(db_url))
    except OSError:
        return iter(())
    ids = []
    for name in names:
        stem = name.removeprefix("wake-").removesuffix(".json")
        if name.endswith(".json") and stem.isascii() and stem.isdigit():
            ids.append(int(stem))
    return iter(sorted(ids))


def drop(db_url, wake_id: int) -> None:
    """The outcome is settled: forget it."""
    try:
        _path(db_url, wake_id).unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("turn %s: its kept outcome could not be removed: %s", wake_id, exc.strerror,
                    extra={"action": "turn_keep_failed", "wake_id": wake_id})


def any_waiting(db_url) -> bool:
    return next(waiting(db_url), None) is not None
