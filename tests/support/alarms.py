"""An alarm room on the tests' timeline: one mood, ada, an agent ``bot``, times given in
Berlin's zone; and the alarm wakes and alarms read back through the CLI."""

from __future__ import annotations

import datetime as dt
import json

from support.agents import agent_command


UTC = dt.timezone.utc


def berlin(y, mo, d, h, mi=0) -> str:
    from zoneinfo import ZoneInfo

    t = dt.datetime(y, mo, d, h, mi, tzinfo=ZoneInfo("Europe/Berlin")).astimezone(UTC)
    return t.isoformat().replace("+00:00", "Z")


def room(cli, tmp_path, mode="reply", *extra):
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "bot", "--command", agent_command(tmp_path, mode, *extra))
    cli("set", "idle_after", "0")
    cli("tick", "--now", berlin(2026, 10, 19, 8))  # the poller's first cycle, Monday 08:00
    return cli


def wakes(cli, kind="alarm") -> list[dict]:
    return sorted(json.loads(cli("wakes", "--kind", kind, "--json").out), key=lambda w: w["id"])


def alarm_list(cli) -> list[dict]:
    return json.loads(cli("alarm", "list", "--json").out)
