"""Loading the parts of the service that declare kinds of wake (and what else they plug in).

The core declares its own kinds in :mod:`poller.cycle.wakes`; each organ (a
package of :mod:`poller`: away and back, control, schedules...) plugs in what
it adds (kinds of wake, readers of posts) in an ``organ`` module of its
package, found here by looking, not by name, so the core names no organ.  A package outside the service adds its own
through the entry-point group ``mood_poller.organs`` (each entry a module to
import).  :func:`load` runs once; the poller, ``preview`` and the runner call it
before they weigh, compose or settle anything.
"""

from __future__ import annotations

import functools
import importlib
import logging
import pkgutil
from importlib import metadata
from pathlib import Path

import poller

log = logging.getLogger("poller.organs")
GROUP = "mood_poller.organs"


@functools.cache
def load() -> tuple[str, ...]:
    """Import every module that declares kinds; the names of those imported."""
    names = ["poller.cycle.wakes"]
    for info in pkgutil.iter_modules(poller.__path__):
        if info.ispkg and (Path(info.module_finder.path) / info.name / "organ.py").exists():
            names.append(f"poller.{info.name}.organ")
    for entry in metadata.entry_points(group=GROUP):
        names.append(entry.value)
    for name in dict.fromkeys(names):
        importlib.import_module(name)
    return tuple(dict.fromkeys(names))
