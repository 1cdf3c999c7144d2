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
