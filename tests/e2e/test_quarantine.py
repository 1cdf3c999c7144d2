"""One bad row never stops the service: it is set aside, shown, and the rest goes on.

Here, the part run as processes; the rest sits under the same name in the other
layers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys


from support.waiting import wait_for
from support.quarantine import poison_post, wakes, world

def test_run_survives_the_poison_post_and_keeps_serving(cli, tmp_path):
    c = world(cli, tmp_path)
    poison_post(c.db_url)
    # None of the poller's own settings, but where the stand-in agent may write its log.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MOOD_") or k == "MOOD_POLLER_SANDBOX_WRITABLE"}
    log = open(tmp_path / "run.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "poller", "--db", c.db_url, "run",
                             "--interval", "0.2"], stdout=log, stderr=log, env=env,
                            start_new_session=True)
    try:
        p = int(c("post", "lobby", "--as", "ada", "@bot still there?").out)
        wait_for(lambda: any(w["answers"] == [p] and w["status"] == "replied" for w in wakes(c)),
                 what="the mention after the poison post to be answered")
        assert proc.poll() is None  # still running
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(120)
    assert proc.returncode == 0


