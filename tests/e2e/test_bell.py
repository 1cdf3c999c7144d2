"""A commit wakes the loop at once: in process, across processes on SQLite and PostgreSQL.

Here, the part run as processes; the rest sits under the same name in the other
layers.
"""

from __future__ import annotations

import json


from support.agents import agent_command
from support.runs import start_run, stop
from support.timeline import TimelineCli, at
from support.waiting import wait_for

def test_run_answers_a_mention_at_once_though_its_interval_is_an_hour(any_cli, tmp_path):
    cli = TimelineCli(any_cli.db_url)
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "bot", "--command", agent_command(tmp_path, "reply"))
    cli("set", "cooldown", "0")
    cli("tick", "--now", at(0))  # the starting point: what was said before is history
    poller = start_run(any_cli.db_url, tmp_path, "--interval", "3600")
    try:
        for n, question in enumerate(["@bot first?", "@bot second?"], start=1):
            # The first may meet the loop's first cycle; the second finds it asleep
            # for an hour, so only the commit's ring can bring its answer.
            cli("post", "lobby", "--as", "ada", "--at", at(n), question)

            def replies():
                posts = json.loads(cli("posts", "lobby", "--json").out)
                return [p for p in posts if p["sender"] == "bot" and p["kind"] == "post"]

            wait_for(lambda: len(replies()) >= n, what=f"the agent's answer to mention {n}")
    finally:
        assert stop(poller) == 0


def test_a_burst_of_sigterms_stops_run_cleanly(any_cli, tmp_path):
    # A signal that arrives while the handler of the one before is ringing the bell
    # must not deadlock the loop it interrupted (a ring takes no lock).
    import os
    import signal as sig

    from support.waiting import HANG_GUARD_S

    cli = TimelineCli(any_cli.db_url)
    cli("mood", "add", "lobby")
    poller = start_run(any_cli.db_url, tmp_path, "--interval", "0.01")
    try:
        wait_for(lambda: "running every" in (tmp_path / "run.log").read_text(),
                 what="the poller to run")
        for _ in range(300):
            os.kill(poller.pid, sig.SIGTERM)
        assert poller.wait(HANG_GUARD_S) == 0
    finally:
        if poller.poll() is None:
            poller.kill()
