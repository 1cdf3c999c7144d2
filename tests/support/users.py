"""Running this test session's Python as a throwaway Unix user.

Where the interpreter lives somewhere the user cannot enter (a pyenv under
/root, say), it is bind-mounted into a shared directory in a private mount
namespace that every process started under the returned prefix shares.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

from support.machine import unavailable

CHECK = ["-c", "import poller.cli, sqlalchemy, tiktoken_ext"]


def python_as(user: pwd.struct_passwd, shared: Path, *,
              groups: str = "--clear-groups") -> tuple[list[str], list[str]]:
    """(prefix, python): run ``prefix + argv`` as *user*; ``python`` is the interpreter
    (with the project) as *user* sees it.  *groups* is setpriv's group option."""
    become = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", groups, "--"]
    if subprocess.run(become + [sys.executable] + CHECK, cwd=shared,
                      capture_output=True).returncode == 0:
        return become, [sys.executable]
    if sys.prefix != sys.base_prefix or not shutil.which("unshare"):
        unavailable(f"user {user.pw_name} cannot run {sys.executable}")
    mount = shared / "python"
    mount.mkdir(mode=0o755)
    exe = os.path.relpath(os.path.realpath(sys.executable), os.path.realpath(sys.base_prefix))
    library = ":".join(filter(None, [str(mount / "lib"), os.environ.get("LD_LIBRARY_PATH")]))
    prefix = (["unshare", "--mount", "--propagation", "private", "sh", "-c",
               'mount --bind "$1" "$2" && shift 2 && exec "$@"', "sh",
               os.path.realpath(sys.base_prefix), str(mount)] + become)
    python = ["env", f"LD_LIBRARY_PATH={library}", str(mount / exe)]
    r = subprocess.run(prefix + python + CHECK, cwd=shared, capture_output=True, text=True)
    if r.returncode != 0:
        unavailable(f"user {user.pw_name} cannot run the project's Python: {r.stderr[-300:]}")
    return prefix, python
