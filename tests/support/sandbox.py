"""A probing agent for the sandbox's tests: what a turn's process can see, touch and leave.

The probe is a bash script (any user can run /bin/bash; the interpreter of the tests may sit
where another user cannot reach it) in a directory every user may read.  It reads its wake,
then prints what it found as ``key=value`` lines, which become its reply:

- ``canary``: how many ``/proc/*/environ`` it could read holding the canary;
- ``procs``/``comms``: how many processes it sees, and their names;
- ``db``: ``open`` if it could read the database file, else ``refused``;
- ``work``, ``home``, ``tmp``: ``yes`` if it could create a file there (``tmp``: its TMPDIR);
- ``net``: ``yes`` if it could connect to the test's loopback port.

Then it starts a daemon (``setsid``, double-forked, named ``daemon-MARKER``) and either
replies (mode ``reply``) or waits forever (mode ``hang``), so that a test can end the turn
by timeout, stop, scram or SIGTERM and see that the daemon is gone.
"""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
import tempfile
import threading

PGREP = shutil.which("pgrep") or "pgrep"
from pathlib import Path

PROBE = r"""#!/bin/bash
cat >/dev/null
db=$1 work=$2 home=$3 port=$4 marker=$5 mode=$6 canary=$7
n=0
for f in /proc/[0-9]*/environ; do
  if tr '\0' '\n' <"$f" 2>/dev/null | grep -qF "$canary"; then n=$((n+1)); fi
done
echo "canary=$n"
pids=$(ls /proc | grep -E '^[0-9]+$')
echo "procs=$(echo "$pids" | wc -l)"
echo "comms=$(for p in $pids; do cat /proc/$p/comm 2>/dev/null; done | sort -u | tr '\n' ',')"
if cat "$db" >/dev/null 2>&1; then echo "db=open"; else echo "db=refused"; fi
touch "$work/probe-$marker" 2>/dev/null && echo "work=yes" || echo "work=no"
touch "$home/probe-$marker" 2>/dev/null && echo "home=yes" || echo "home=no"
touch "$TMPDIR/probe-$marker" 2>/dev/null && echo "tmp=yes" || echo "tmp=no"
echo "tmpdir=$TMPDIR"
if timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; then echo "net=yes"; else echo "net=no"; fi
setsid bash -c "bash -c 'exec -a daemon-$marker sleep 600' &" </dev/null >/dev/null 2>&1 &
for _ in $(seq 100); do pgrep -f "daemon-$marker" >/dev/null && break; sleep 0.05; done
if [ "$mode" = hang ]; then exec sleep 600; fi
"""


class Probe:
    """The probe script in a directory every user may read, and what a test needs to aim it."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="mood-probe-"))
        self.dir.chmod(0o755)
        self.script = self.dir / "probe.sh"
        self.script.write_text(PROBE)
        self.script.chmod(0o755)
        self.canary = "canary-" + os.urandom(8).hex()

    def workdir(self, owner: str | None = None) -> Path:
        """A work directory for the agent (owned by *owner*, a user name, if given)."""
        path = self.dir / f"work-{owner or 'self'}"
        path.mkdir(exist_ok=True)
        if owner:
            shutil.chown(path, owner, owner if _group_exists(owner) else None)
        return path

    def command(self, db: str, work: Path, home: str, port: int, marker: str, mode: str) -> str:
        return shlex.join(["/bin/bash", str(self.script), db, str(work), home, str(port), marker,
                           mode, self.canary])

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def _group_exists(name: str) -> bool:
    import grp

    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def findings(reply: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in reply.splitlines() if "=" in line)


def running(pattern: str) -> bool:
    """Whether a process whose command line holds *pattern* runs on this machine."""
    return subprocess.run([PGREP, "-f", pattern], capture_output=True).returncode == 0


class Listener:
    """A TCP port on 127.0.0.1 that accepts and closes, outside any namespace."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()
