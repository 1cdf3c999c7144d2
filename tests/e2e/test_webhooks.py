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




def test_health_and_status_watch_the_webhook_bridge(tmp_path):
    """With webhooks to deliver and no bridge running, health says so (exit 1); a running
    `bridge webhooks` beats and is shown; stopped, it is missed again."""
    import json as json_
    import os as os_
    import signal as signal_
    import subprocess as subprocess_
    import sys as sys_

    from support.cli import Cli as Cli_
    from support.waiting import wait_for as wait_for_

    url = f"sqlite:///{tmp_path / 'moods.db'}"
    cli = Cli_(url)
    cli("init")
    cli("mood", "add", "lobby")
    cli("mood", "webhook", "add", "lobby", "http://127.0.0.1:9/hook")
    from support.runs import start_run, stop

    poller = start_run(url, tmp_path, now=None)  # a poller cycling: only the bridge is missing
    try:
        r = wait_for_(lambda: (lambda r: r.code == 1 and "webhook bridge" in r.err and r)(
            cli("health", ok=False)), what="health to miss only the bridge")
        assert "the webhook bridge is not running" in r.err
        assert "start `mood-poller bridge webhooks`" in r.out
        _watch_the_bridge(cli, url)
    finally:
        stop(poller)
    import datetime as dt_

    from poller.web.health import metrics_text
    from support.webserver import store_for

    store = store_for(url)
    try:
        text = metrics_text(store, dt_.datetime.now(dt_.timezone.utc)).decode()
    finally:
        store.engine.dispose()
    assert 'mood_poller_bridge_up{bridge="webhook"} 0.0' in text  # stopped: missed


def _watch_the_bridge(cli, url):
    import json as json_
    import os as os_
    import signal as signal_
    import subprocess as subprocess_
    import sys as sys_

    from support.waiting import wait_for as wait_for_

    bridge = subprocess_.Popen([sys_.executable, "-m", "poller", "--db", url, "bridge",
                                "webhooks"], stdout=subprocess_.DEVNULL,
                               stderr=subprocess_.DEVNULL, env=dict(os_.environ))
    try:
        seen = wait_for_(lambda: [b for b in json_.loads(cli("status", "--json").out)["bridges"]
                                  if b["state"] == "ok"], what="the bridge's first beat")
        assert seen[0]["bridge"] == "webhook" and seen[0]["serves"] == "the Moods' webhooks"
        healthy = wait_for_(lambda: (lambda r: r.code == 0 and r)(
            cli("health", "--json", ok=False)), what="health to be ok (exit 0)")
        facts = json_.loads(healthy.out)
        assert [b["state"] for b in facts["bridges"]] == ["ok"] and facts["ok"]
        assert "bridge webhook ok" in cli("status").out
    finally:
        bridge.send_signal(signal_.SIGTERM)
        bridge.wait(timeout=60)
    facts = json_.loads(cli("health", "--json", ok=False).out)
    assert [b["state"] for b in facts["bridges"]] == ["not running"]
