"""Exit codes a supervisor understands: 78 (EX_CONFIG) for what only an operator can fix,
75 (EX_TEMPFAIL) for what may pass by itself; and ``init`` serialised between machines.

Here, the part run as processes; the rest sits under the same name in the other
layers.
"""

from __future__ import annotations

import os
import subprocess
import sys
from support.exit_codes import EX_TEMPFAIL
from support.exit_codes import closed_port  # noqa: F401  (fixtures)


# -- a database that cannot be reached is temporary -------------------------------------------

def test_the_entry_point_exits_75_too(closed_port, tmp_path):
    """The installed command, not only ``main``: what systemd and cron see."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOOD_")}
    env["MOOD_POLLER_DB"] = f"postgresql+psycopg://mood@127.0.0.1:{closed_port}/moods"
    r = subprocess.run([sys.executable, "-m", "poller", "init"], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == EX_TEMPFAIL, r.stderr
    assert r.stderr.startswith("mood-poller: cannot open database")
