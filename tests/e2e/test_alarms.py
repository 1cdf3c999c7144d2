"""Alarms: a wake at a time in a real zone, one late wake after downtime (never a burst),
the reply block, the law (scram, the hourly cap), and exactly once across pollers.

Here, the part run as processes; the rest sits under the same name in the other
layers.
"""

from __future__ import annotations

import subprocess
import sys

from support.agents import agent_command, wakes_seen
from support.alarms import alarm_list, berlin, room, wakes

def test_two_pollers_on_postgresql_wake_for_a_firing_once(pg_server, migrated_pg, tmp_path):
    from support.cli import Cli

    c = Cli(pg_server.new_database(template=migrated_pg))
    room(c, tmp_path, "reply")
    for i in range(3):
        c("agent", "add", f"bot{i}", "--command", agent_command(tmp_path, "reply"))
        c("alarm", "add", "--agent", f"bot{i}", "--mood", "lobby", "--daily", "09:00",
          "--tz", "Europe/Berlin", "--now", berlin(2026, 10, 19, 8))
    cmd = [sys.executable, "-m", "poller", "--db", c.db_url, "tick", "--wait",
           "--now", berlin(2026, 10, 21, 9, 30)]
    procs = [subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for _ in range(2)]
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read()
    got = wakes(c)
    assert sorted(w["agent"] for w in got) == ["bot0", "bot1", "bot2"]  # one each, not two
    assert len([w for w in wakes_seen(tmp_path) if w["MOOD_WAKE_KIND"] == "alarm"]) == 3
    assert {a["fired"] for a in alarm_list(c)} == {3}  # Mon, Tue, Wed 09:00 in one wake


