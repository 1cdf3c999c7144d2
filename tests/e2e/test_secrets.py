"""Agents cannot reach the poller's secrets, and no output shows a credential.

The attacks are real: a real ``tick`` starts a real agent, a shell script
that tries every route to a secret it can think of (its own environment,
``/proc/<pid>/environ`` and the open files of each ancestor, the files it
inherited, the database file) and posts what it found as its reply.  Root
can read any process's environment, so the agent that runs as the poller's
own user runs as a throwaway non-root user, poller and all; the ``--run-as``
agent runs as the throwaway user under a root poller.

Here, the part run as processes; the rest sits under the same name in the other
layers.
"""

from __future__ import annotations

import stat
import sys


from support.cli import Cli
from support.machine import REPO
from support.secrecy import (HEADER_SECRET, inherited, leaked, lobby, no_ancestor_to_read,
                             poller_env, probe_reply, run_tick, write_probe)
from support.secrecy import shared, throwaway_user  # noqa: F401  (fixtures)


# -- the attacks ----------------------------------------------------------------------


def test_an_agent_run_as_another_user_reads_no_secret_nor_the_database(throwaway_user, shared):
    user = throwaway_user
    probe = write_probe(shared)
    db = shared / "moods.db"  # in a directory anyone may enter: only the file's mode guards it
    url = f"sqlite:///{db}"
    cli = Cli(url)
    lobby(cli, probe, db, "--run-as", user.pw_name)
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    cli("agent", "add", "svc", "--url", "http://127.0.0.1:9/wake",
        "--header", f"Authorization: Bearer {HEADER_SECRET}")
    listed = cli("agent", "list").out
    assert f"(as {user.pw_name})" in listed and HEADER_SECRET not in listed

    run_tick([sys.executable], poller_env(url), REPO, 2)

    reply = probe_reply(cli)
    assert leaked(reply) == [], reply
    assert f"== uid {user.pw_uid}" in reply
    assert f"HOME={user.pw_dir}" in reply and f"USER={user.pw_name}" in reply
    assert f"== unreadable: {db}" in reply
    assert no_ancestor_to_read(reply)
    assert not [line for line in inherited(reply) if "moods.db" in line or "socket:" in line]
