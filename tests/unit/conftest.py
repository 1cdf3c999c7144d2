"""The unit layer's guard: a unit test that starts a subprocess or builds a SQLAlchemy
engine fails, so the layer stays what it says (pure logic and in-memory twins, the
whole layer in seconds).  Such a test belongs in tests/integration or tests/e2e.

The guard is autouse for every test here, and it also wraps each test's setup, so a
session fixture started on a unit test's behalf (PostgreSQL, a wiki, a homeserver) is
caught too: an autouse fixture alone comes after the wider-scoped fixtures.
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess

# croniter asks `file` about the interpreter once, as it is first imported
# (platform.architecture): the library's start-up, done here before any guard.
import croniter  # noqa: F401
import pytest
from sqlalchemy.engine import base

from poller.turns import sandbox

# Whether bubblewrap works here is probed once per process (one `bwrap … true`), as
# `config check` and `status` ask it: done before the guard, as the library's start-up.
sandbox.state("auto")

_active = 0  # how many guards are on: the setup's and the test's may overlap


def _refuse_while_guarded(owner, name: str, what: str) -> None:
    """Wrap owner.name so that it fails the test while a guard is on (and only then:
    the other layers share this process under ``-n`` or a whole run)."""
    original = getattr(owner, name)

    @functools.wraps(original)
    def refused(*args, **kwargs):
        if _active:
            pytest.fail(f"a unit test must not {what}; move it to tests/integration or tests/e2e")
        return original(*args, **kwargs)

    setattr(owner, name, refused)


_refuse_while_guarded(subprocess.Popen, "__init__", "start a subprocess")
for _name in ("system", "fork", "forkpty", "posix_spawn", "posix_spawnp", "execv", "execve"):
    if hasattr(os, _name):
        _refuse_while_guarded(os, _name, "start a subprocess")
_refuse_while_guarded(base.Engine, "__init__", "create a SQLAlchemy engine")


@contextlib.contextmanager
def no_process_no_database():
    global _active
    _active += 1
    try:
        yield
    finally:
        _active -= 1


@pytest.fixture(autouse=True)
def unit_guard():
    """A unit test's body and its function fixtures, set up and torn down, run guarded."""
    with no_process_no_database():
        yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    with no_process_no_database():
        return (yield)
