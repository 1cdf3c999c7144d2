"""A separate `mood-poller run` records its cycles, so `health` (and /healthz) can vouch for it."""

from __future__ import annotations

import json

from support.cli import Cli
from support.runs import start_run, stop
from support.waiting import wait_for


def test_health_follows_a_separate_run_from_its_first_cycle_to_its_stop(any_cli, tmp_path):
    c = Cli(any_cli.db_url)  # the wall clock, as the running poller's
    assert c.fails("health").code == 1
    poller = start_run(any_cli.db_url, tmp_path, now=None)
    try:
        def healthy():
            r = c("health", "--json", ok=False)
            return r.code == 0 and json.loads(r.out)
        report = wait_for(healthy, what="health to see the running poller's cycles")
        assert report["ok"] is True and report["poller"]["age_seconds"] < 120
    finally:
        assert stop(poller) == 0
    r = c.fails("health")
    assert r.code == 1 and "no cycle recorded" in r.out  # a stopped poller takes its beat along
