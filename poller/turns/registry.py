"""The wakers this poller knows, by name: the ``mood_poller.wakers`` entry points.

An agent stores its waker's name (``agents.waker``); this module turns the
name into the waker's class (:class:`poller.turns.wakers.Waker`), whose
attributes say what it can do.  A waker shipped by another package is an
entry point in the group ``mood_poller.wakers``, named as the waker::

    [project.entry-points."mood_poller.wakers"]
    echo = "echo_waker:EchoWaker"

The poller's own wakers are registered the same way (``setup.cfg``), and
are known without that metadata too (a source tree on ``PYTHONPATH``).  The
entry points are read once per process; each waker is imported when first
asked for, so one package that fails to import spoils only its own name.
"""

from __future__ import annotations

import functools
import logging
import re
from importlib import metadata
from typing import Callable, Optional

from poller import errors
from poller.turns import wakers

log = logging.getLogger("poller.wakers")

GROUP = "mood_poller.wakers"
OWN = "mood-poller"  # this distribution: its names win over another package's
NAME_RE = re.compile(r"[a-z][a-z0-9_-]{0,15}")  # what ``agents.waker`` (16 characters) can hold


class UnknownWaker(errors.UserError):
    """No waker of that name is installed here, or its package fails to load."""


@functools.cache
def _loaders() -> dict[str, Callable[[], object]]:
    """Each known name and how to load its class: the entry points, then the built-ins."""
    found: dict[str, metadata.EntryPoint] = {}
    for ep in sorted(metadata.entry_points(group=GROUP), key=lambda ep: not _own(ep)):
        if not NAME_RE.fullmatch(ep.name):
            log.warning("waker entry point %r ignored: a waker's name is lower case, at most "
                        "16 characters", ep.name, extra={"action": "waker_ignored"})
        elif ep.name in found and found[ep.name].value != ep.value:
            log.warning("waker entry point %r (%s) ignored: the name is taken by %s", ep.name,
                        ep.value, found[ep.name].value, extra={"action": "waker_ignored"})
        else:
            found.setdefault(ep.name, ep)
    loaders: dict[str, Callable[[], object]] = {name: ep.load for name, ep in found.items()}
    for cls in built_in():
        loaders.setdefault(cls.name, lambda cls=cls: cls)
    return loaders


def built_in() -> tuple[type[wakers.Waker], ...]:
    """The poller's own wakers: command, Claude Code, HTTP and language models."""
    from poller.turns.model import ModelWaker

    return (*wakers.BUILT_IN, ModelWaker)


def _own(ep: metadata.EntryPoint) -> bool:
    dist = getattr(ep, "dist", None)
    return dist is not None and dist.name == OWN


def names() -> list[str]:
    """Every waker name known here: the poller's own first, then the others by name."""
    own = [cls.name for cls in built_in()]
    return own + sorted(set(_loaders()) - set(own))


@functools.cache
def kind(name: str) -> type[wakers.Waker]:
    """The waker class called *name*; UnknownWaker, in one line, if there is none."""
    load = _loaders().get(name)
    if load is None:
        raise UnknownWaker(f"unknown waker {name!r} (known here: {', '.join(names())}; a waker "
                           f"from another package must be installed where the poller runs)")
    try:
        cls = load()
    except Exception as exc:  # an outside package's bug: its name is unusable, the rest are not
        detail = (str(exc).strip().splitlines() or [""])[0][:200]
        raise UnknownWaker(f"waker {name!r} could not be loaded: {type(exc).__name__}"
                           + (f": {detail}" if detail else "")) from None
    if not (isinstance(cls, type) and issubclass(cls, wakers.Waker)) or cls.name != name:
        raise UnknownWaker(f"waker {name!r}: its entry point names no poller.turns.wakers.Waker "
                           f"subclass called {name!r}")
    return cls


def find(name: str) -> Optional[type[wakers.Waker]]:
    """The waker class called *name*, or None."""
    try:
        return kind(name)
    except UnknownWaker:
        return None


def capabilities(name: str) -> type[wakers.Waker]:
    """What the waker *name* can do; a waker not installed here is taken to do nothing
    more than any (its turns then fail with the reason, at the runner)."""
    return find(name) or wakers.Waker


def every() -> list[type[wakers.Waker]]:
    """Every waker that loads here, in :func:`names` order."""
    return [cls for cls in map(find, names()) if cls is not None]


def for_agent(agent) -> wakers.Waker:
    """The waker for an agent row (``poller.values.AgentInfo``); UnknownWaker if its
    waker is not installed here."""
    return kind(agent.waker).from_agent(agent)
