"""The operator's kit: ``config check``, the example config, systemd units, the cron line, logs.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import json
import re
import shlex


from support.agents import agent_command
from support.cli import Cli
from support.machine import REPO

KIT = REPO / "memory-lane"


# -- systemd units and the cron line ------------------------------------------------------------

def test_the_crontab_line_runs_tick(cli, sqlite_url):
    lines = [line for line in (KIT / "mood-poller.cron").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    env = [line for line in lines if "=" in line.split()[0]]
    (job,) = [line for line in lines if line not in env]
    fields = job.split(None, 6)
    assert fields[:5] == ["*"] * 5  # every minute
    assert fields[5] == "mood-poller"  # /etc/cron.d format: the user
    # The job runs `tick` (with the env file read and log lines dated: tests/test_kit.py).
    (args,) = re.findall(r"/opt/mood-poller/bin/mood-poller ([^)|>&;]*)", fields[6])
    argv = ["mood-poller", *shlex.split(args)]
    assert argv[1:] == ["tick"]
    assert "MOOD_POLLER_CONFIG=/etc/mood-poller/config.toml" in env
    # The same arguments are a valid cycle.
    r = Cli(sqlite_url)(*argv[1:])
    assert r.code == 0


# -- logs -----------------------------------------------------------------------------------------

def test_logs_are_one_line_per_decision_and_turn_human_or_json(cli, tmp_path):
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "bot", "--command", agent_command(tmp_path, "reply"))
    cli("tick", "--now", "2026-01-05T09:00:00Z")
    cli("post", "lobby", "--as", "ada", "--at", "2026-01-05T09:00:01Z", "@bot hi")
    r = cli("tick", "--now", "2026-01-05T09:00:02Z", "--wait", "--log-json")
    records = [json.loads(line) for line in r.err.splitlines() if line.strip()]
    actions = [(x["action"], x.get("code")) for x in records]
    assert ("decision", "woke") in actions and ("turn_started", None) in actions
    decision = next(x for x in records if x["action"] == "decision")
    assert (decision["agent"], decision["mood"], decision["kind"]) == ("bot", "lobby", "mention")
    cli("post", "lobby", "--as", "ada", "--at", "2026-01-05T09:00:03Z", "@bot again")
    human = cli("tick", "--now", "2026-01-05T09:00:04Z", "--wait").err
    assert "bot in lobby: mention woke" in human
    assert not human.lstrip().startswith("{")
