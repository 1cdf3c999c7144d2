"""Processes on this machine: is a pid (or a process group) still alive?"""

from __future__ import annotations

import os
import socket
from typing import Optional

HOST = socket.gethostname()


def pid_alive(pid: Optional[int], marker: str = "") -> bool:
    """True if *pid* runs (and, given *marker*, its command line contains it)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if marker:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                return marker.encode() in fh.read()
        except OSError:
            return False
    return True


def group_alive(pgid: Optional[int]) -> bool:
    if not pgid:
        return False
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Adopt this process's orphaned descendants (Linux), so none escapes a turn.

    A daemon an agent starts with ``setsid`` leaves the agent's process group;
    when its parent exits it is re-parented to the nearest subreaper instead
    of init, where :func:`kill_descendants` finds it.  False where unsupported.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out += [int(c) for c in fh.read().split()]
        except OSError:
            continue
    return out


def kill_descendants(pid: Optional[int] = None) -> int:
    """SIGKILL every descendant of *pid* (default: this process) and reap ours; how many."""
    import signal

    root = os.getpid() if pid is None else pid
    seen: list[int] = []
    todo = children(root)
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.append(p)
        todo += children(p)
        try:
            os.kill(p, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    if pid is None:
        while True:  # reap what was ours, so no zombie is left
            try:
                done, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if done == 0:
                break
    return len(seen)
