"""Nothing an agent starts outlives its turn: background jobs and setsid daemons alike."""

from __future__ import annotations

import datetime as dt
import json
import subprocess

import pytest

from support.waiting import wait_for

T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


def at(seconds: float) -> str:
    return (T0 + dt.timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def running(marker: str) -> bool:
    return bool(subprocess.run(["pgrep", "-f", marker], capture_output=True).stdout.split())


def leaves_behind(tmp_path, marker: str) -> str:
    """An agent that replies at once, leaving a background job and a setsid daemon."""
    script = tmp_path / "leaver.sh"
    script.write_text(
        "#!/bin/sh\ncat >/dev/null\n"
        f"python3 -c 'import time; time.sleep(300)' {marker}-job </dev/null >/dev/null 2>&1 &\n"
        f"setsid python3 -c 'import time; time.sleep(300)' {marker}-daemon "
        "</dev/null >/dev/null 2>&1 &\n"
        f"while ! pgrep -f {marker}-daemon >/dev/null; do sleep 0.05; done\necho done here\n")
    script.chmod(0o755)
    return str(script)


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_a_normal_exit_takes_the_agents_background_job_with_it(cli, tmp_path, monkeypatch, mode):
    monkeypatch.setenv("MOOD_POLLER_LAUNCH", mode)
    marker = f"leave{mode}{tmp_path.name[-6:]}"
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "bot", "--command", leaves_behind(tmp_path, marker))
    cli("tick", "--now", at(0))
    try:
        cli("post", "lobby", "--as", "ada", "--at", at(1), "@bot go")
        cli("tick", "--now", at(2), "--wait")
        (w,) = json.loads(cli("wakes", "--json").out)
        assert w["status"] == "replied"
        wait_for(lambda: not running(f"{marker}-job"), what="the background job to be gone")
        if mode == "process":
            # The runner adopts what escaped the group (setsid) and ends it too.
            wait_for(lambda: not running(f"{marker}-daemon"), what="the setsid daemon to be gone")
    finally:
        subprocess.run(["pkill", "-9", "-f", marker])
