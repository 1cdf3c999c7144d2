"""Signed webhooks, delivered to a real HTTP receiver on loopback.

Here, the part run as processes; the rest sits under the same name in the other
layers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys


from support.agents import agent_command
from support.machine import REPO
from support.waiting import HANG_GUARD_S, wait_for
from support.webhooks import Receiver, T0, add_hook
from support.webhooks import cli  # noqa: F401  (fixtures)


def test_events_arrive_signed_once_each_through_a_500_and_a_hang(cli, db_url, tmp_path):
    secret = {}
    rx = Receiver(lambda: secret["value"], script=["500", "hang"])
    try:
        hook_id, secret["value"] = add_hook(cli, rx.url)
        cli("agent", "add", "helper", "--command", agent_command(tmp_path, "reply"))
        cli("post", "lobby", "--as", "ada", "@helper hi", "--now", T0)
        cli("tick", "--wait", "--now", T0)
        env = dict(os.environ, PYTHONPATH=str(REPO))
        proc = subprocess.Popen([sys.executable, "-m", "poller", "--db", db_url, "bridge",
                                 "webhooks", "--timeout", "1"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)
        try:
            wait_for(lambda: len(rx.taken) == 4, what="four events taken")
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            _, err = proc.communicate(timeout=HANG_GUARD_S)
        events = [rx.taken[k]["event"] for k in sorted(rx.taken, key=int)]
        assert events == ["post", "turn_started", "reply", "turn_ended"]
        assert [r["action"] for r in rx.requests[:2]] == ["500", "hang"]
        assert all(r["signed"] for r in rx.requests)
        assert len(rx.requests) == 6  # two refused, then each of the four once
        assert rx.taken[min(rx.taken, key=int)]["text"] == "@helper hi"
        assert secret["value"] not in err.decode()
        items = json.loads(cli("outbox", "--json").out)
        assert {i["status"] for i in items} == {"sent"} and len(items) == 4
    finally:
        rx.close()


