"""Sandboxed turns: every agent process in a bubblewrap namespace of its own.

A turn's process (a command agent, Claude Code) is started through
``bwrap`` (Debian's ``bubblewrap``) with:

- its own PID namespace and a fresh ``/proc``: it sees only its own processes,
  none of the poller's, so no ``/proc/<pid>/environ`` of the poller is there to
  read; ``--die-with-parent``, and when the agent's first process ends the
  namespace ends with it, so nothing it started (however it forked) outlives
  the turn;
- the whole filesystem read-only but a scratch directory of its own (its
  ``TMPDIR``, removed when the turn ends), what its waker needs to keep working
  (Claude Code's configuration and sessions), the paths the operator lets every
  turn write (``poller.sandbox_writable``) and, on full-tool turns, the agent's
  work directory;
- the poller's database, data directory and configuration hidden: an empty
  tmpfs over a directory, a node no one may open over a file;
- the environment the waker built from its allowlist, and no descriptor but
  its three pipes; ``--network off`` (an agent option) leaves it loopback only.

``poller.sandbox`` chooses: ``auto`` (bubblewrap when installed and usable
here), ``bwrap`` (always; a turn fails when it cannot be sandboxed) or
``off``.  :func:`state` tells which holds and why, for ``run``, ``serve``,
``status``, ``health`` and ``config check``.

HTTP and model agents run no process here and are not affected.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from typing import Optional

MODES = ("auto", "bwrap", "off")
PROBE_TIMEOUT_S = 10.0
SCRATCH_PREFIX = "mood-turn-"


@dataclass(frozen=True)
class State:
    """Whether turns are sandboxed here, and in words why (or why not)."""

    mode: str  # the configured poller.sandbox
    active: bool
    bwrap: str = ""  # the executable, when active
    why: str = ""  # what an operator reads: why turns are not sandboxed

    def warning(self) -> str:
        """One line for an operator when turns are not sandboxed, else ""."""
        if self.active:
            return ""
        line = f"agent turns are not sandboxed ({self.why})"
        if os.geteuid() == 0:
            line += (": the poller runs as root, so every command agent runs as root too; "
                     "install bubblewrap (apt-get install bubblewrap) and set poller.sandbox "
                     "= 'auto', or give each agent --run-as USER")
        return line


_probed: dict[str, str] = {}
_probe_lock = threading.Lock()


def probe(bwrap: str) -> str:
    """"" if *bwrap* can make a namespace here (checked once per process), else why not."""
    with _probe_lock:
        if bwrap not in _probed:
            _probed[bwrap] = _try(bwrap)
        return _probed[bwrap]


def _try(bwrap: str) -> str:
    try:
        done = subprocess.run([bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                               "--unshare-pid", "--die-with-parent", "--", "true"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=PROBE_TIMEOUT_S, env={})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{bwrap} could not be run: {exc}"
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"{bwrap} cannot make a namespace here: {err[-1] if err else done.returncode}"
    return ""


def state(mode: str) -> State:
    """What ``poller.sandbox = mode`` means on this machine."""
    if mode == "off":
        return State(mode, False, why="poller.sandbox is 'off'")
    found = shutil.which("bwrap")
    if not found:
        return State(mode, False, why="bubblewrap (bwrap) is not installed")
    problem = probe(found)
    if problem:
        return State(mode, False, why=problem)
    return State(mode, True, bwrap=found)


@dataclass(frozen=True)
class Jail:
    """What one turn's process may see and touch; :meth:`argv` puts a command in it."""

    bwrap: str
    look_only: bool
    workdir: Optional[str] = None  # writable on full-tool turns only
    writable: tuple[str, ...] = ()  # writable in both tiers (operator's and waker's)
    hidden: tuple[str, ...] = ()
    network: bool = True

    def needing(self, paths) -> "Jail":
        """This jail, with the paths a waker needs to keep working writable too."""
        return dataclasses.replace(self, writable=self.writable + tuple(paths))

    def argv(self, command: list[str], scratch: str, cwd: Optional[str],
             uid: Optional[int] = None) -> list[str]:
        """``bwrap … -- command``: later mounts cover earlier ones, so what is hidden
        goes last and stays hidden even inside a writable directory."""
        out = [self.bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc",
               "--unshare-uts", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        if not self.network:
            out.append("--unshare-net")
        open_ = [p for p in self.writable if os.path.exists(p)]
        if not self.look_only and self.workdir and os.path.isdir(self.workdir):
            open_.append(self.workdir)
        for path in open_:
            out += ["--bind", path, path]
        out += ["--bind", scratch, scratch]
        for path in self.hidden:
            if uid not in (None, 0) and not reachable(path, uid):
                continue  # that user cannot reach it anyway, and bwrap could not cover it
            try:
                mode = os.stat(path).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode):
                out += ["--tmpfs", path]
            else:  # a device node on a nodev mount: opening it is refused
                out += ["--ro-bind", "/dev/null", path]
        if cwd:
            out += ["--chdir", cwd]
        return out + ["--"] + command


def reachable(path: str, uid: int) -> bool:
    """Whether *uid* may walk down to *path* (search permission on every directory above)."""
    import pwd

    try:
        groups = set(os.getgrouplist(pwd.getpwuid(uid).pw_name, pwd.getpwuid(uid).pw_gid))
    except KeyError:
        groups = set()
    here = os.path.dirname(os.path.abspath(path))
    while True:
        try:
            st = os.stat(here)
        except OSError:
            return False
        bit = (stat.S_IXUSR if st.st_uid == uid else
               stat.S_IXGRP if st.st_gid in groups else stat.S_IXOTH)
        if not st.st_mode & bit:
            return False
        if here == "/":
            return True
        here = os.path.dirname(here)


def hidden_paths(db_url: str, config_source: str, data_dir: str) -> tuple[str, ...]:
    """What a turn must not see: the SQLite database and its companion files, the data
    directory, the configuration file (and its directory when it is the poller's own)."""
    out: list[str] = [data_dir]
    if db_url.startswith("sqlite:///"):
        path = db_url.removeprefix("sqlite:///").split("?", 1)[0].removeprefix("file:")
        if path and path != ":memory:":
            path = os.path.abspath(path)
            out += [path + suffix for suffix in ("", "-wal", "-shm", "-journal")]
    if config_source:
        source = os.path.abspath(config_source)
        out.append(source)
        folder = os.path.dirname(source)
        if os.path.basename(folder) in ("mood-poller", "memory-lane"):
            out.append(folder)
    out.append("/etc/mood-poller")  # the kit's environment file, which holds secrets
    return tuple(dict.fromkeys(out))


def for_turn(mode: str, *, tools: str, workdir: Optional[str], network: bool,
             writable: tuple[str, ...], hidden: tuple[str, ...]) -> tuple[Optional[Jail], str]:
    """The jail of one turn and "", or None and "" (sandbox off or not usable under
    ``auto``: the turn runs as before), or None and why it must not run (``bwrap``)."""
    st = state(mode)
    if not st.active:
        return None, (st.why if mode == "bwrap" else "")
    return Jail(st.bwrap, look_only=tools != "full", workdir=workdir, writable=writable,
                hidden=hidden, network=network), ""


def scratch(owner: Optional[tuple[int, int]] = None) -> str:
    """A new scratch directory for one turn (its TMPDIR), owned by the agent's user."""
    path = tempfile.mkdtemp(prefix=SCRATCH_PREFIX)
    if owner is not None:
        try:
            os.chown(path, *owner)
        except PermissionError as exc:  # no privilege to switch users: as Popen would say
            remove(path)
            raise PermissionError(exc.errno, exc.strerror) from None
    return path


def remove(path: Optional[str]) -> None:
    if path:
        shutil.rmtree(path, ignore_errors=True)


def describe(mode: str) -> dict:
    """What ``status``, ``health`` and ``config check`` show of it (JSON-ready)."""
    st = state(mode)
    return {"mode": mode, "sandboxed": st.active, "bwrap": st.bwrap or None,
            "why_not": None if st.active else st.why, "warning": st.warning() or None}


def line(mode: str) -> str:
    """One line for an operator: how turns run here."""
    st = state(mode)
    return (f"sandbox:  agent turns run in bubblewrap ({st.bwrap})" if st.active
            else f"WARNING: {st.warning()}")


def log_warning(mode: str) -> None:
    """Said once as a loop starts (``run``, ``serve --with-poller``): turns are not sandboxed
    here, and why."""
    import logging

    warning = state(mode).warning()
    if warning:
        logging.getLogger("poller").warning(warning, extra={"action": "sandbox_off"})
