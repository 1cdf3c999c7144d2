"""Restart safety: close turns whose runner is gone; find wakes nobody started.

A turn whose runner died on this machine is closed as cut off (and its
agent's process group killed); a turn another machine runs whose heartbeat
has gone silent is closed too.  A wake recorded but never started, here by a
poller that died before starting it or elsewhere by a dead machine, is
returned to be started: the runner's claim makes sure only one poller does.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import signal

from poller.cycle.context import Context
from poller.kinds import WakeStatus
from poller import procs
from poller.procs import group_alive, pid_alive
from poller.store import cycle, turns
from poller.turns import kept, settling

log = logging.getLogger("poller.loop")

UNSTARTED_GRACE = dt.timedelta(seconds=60)
RUNNER_MARKERS = ("poller",)  # in the command line of a runner, or of a poller running turns itself


def recover(ctx: Context, now: dt.datetime, ours: set[int]) -> tuple[int, list[int]]:
    """Settle turns kept on disk, close dead turns; returns (how many closed, wake ids
    to start)."""
    closed, start = 0, []
    settle_kept(ctx, now, ours)
    stale = now - dt.timedelta(seconds=ctx.cfg.turn_stale)
    with ctx.store.reading() as s:  # most cycles find nothing: no write lock for that
        if not anything_to_recover(s, ours, stale, now):
            return closed, start
    with ctx.store.writing() as s:
        # Locked and skipped when busy: a runner settling its turn right now
        # holds its row, and another poller recovering holds the rest.
        for w in cycle.in_flight_on_host(s):
            if w.id in ours:
                continue
            if w.status == WakeStatus.RUNNING and not runner_alive(w.runner_pid, ours):
                end_turn(ctx.counter, s, w, "its turn was cut off: the poller or its runner stopped "
                                    "during the turn", now)
                closed += 1
            elif (w.status == WakeStatus.PENDING and w.runner_pid is None
                  and w.created_at < now - UNSTARTED_GRACE):
                start.append(w.id)
        for w in cycle.silent_elsewhere(s, stale):
            end_turn(ctx.counter, s, w, f"its turn was cut off: the machine running it ({w.host}) "
                                f"stopped answering", now)
            closed += 1
        start += cycle.unstarted_elsewhere(s, now - UNSTARTED_GRACE)
    return closed, start


def settle_kept(ctx: Context, now: dt.datetime, ours: set[int]) -> int:
    """Turns that finished while the store was down, whose runner is gone: settled from
    what was kept on disk (:mod:`poller.turns.kept`), before anything calls them cut off.
    Returns how many were settled."""
    url, done = ctx.store.engine.url, 0
    for wake_id in kept.waiting(url):
        if wake_id in ours:
            continue  # our own thread is still trying
        with ctx.store.reading() as s:
            w = cycle.wake_state(s, wake_id)
        if w is not None and w.status == WakeStatus.RUNNING:
            if w.host == procs.HOST and runner_alive(w.runner_pid, ours):
                continue  # its runner is still trying
            outcome = kept.kept(url, wake_id)
            if outcome is None:
                continue  # unreadable: left to the cut-off rule
            status = settling.settle_outcome(ctx.store, wake_id, outcome, now)
            log.info("turn %s settled from its kept outcome: %s", wake_id, status,
                     extra={"action": "turn_settled_kept", "wake_id": wake_id, "status": status})
            done += 1
        kept.drop(url, wake_id)
    return done


def anything_to_recover(s, ours: set[int], stale: dt.datetime, now: dt.datetime) -> bool:
    """Whether :func:`recover` would find work: read without locking anything."""
    for w in cycle.in_flight_here_unlocked(s):
        if w.id in ours:
            continue
        if w.status == WakeStatus.RUNNING and not runner_alive(w.runner_pid, ours):
            return True
        if (w.status == WakeStatus.PENDING and w.runner_pid is None
                and w.created_at < now - UNSTARTED_GRACE):
            return True
    return (cycle.any_silent_elsewhere(s, stale)
            or bool(cycle.unstarted_elsewhere(s, now - UNSTARTED_GRACE)))


def runner_alive(pid, ours: set[int] = frozenset()) -> bool:
    """Is the process that ran this turn still at it?

    A turn whose runner pid is this very process, yet is not one of the turns
    this process is running, was left by a thread that died (or by an earlier
    poller whose pid this one reuses): nobody is running it.
    """
    if pid == os.getpid():
        return False
    return any(pid_alive(pid, marker) for marker in RUNNER_MARKERS)


def end_turn(counter, s, w, why: str, now: dt.datetime, follow_up: bool = True) -> None:
    """Close a turn as cut off, killing its agent first if it runs on this machine.

    Unless an operator ended it, the agent is owed a look-only follow-up.
    """
    kill_agent(w)
    turns.close(s, counter, w, WakeStatus.CUT_OFF, why, now)
    if follow_up:
        turns.follow_up(s, counter, w, now)


def stop_turn(counter, s, w, why: str, now: dt.datetime) -> None:
    """End a turn on an operator's (or a trusted person's) word: its runner, if it runs
    on this machine, is killed; a turn running inside a poller ends when its heartbeat
    finds the turn closed.  No follow-up: someone meant it to stop."""
    if w.host == procs.HOST and pid_alive(w.runner_pid, "poller.turns.runner"):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(w.runner_pid, signal.SIGKILL)
    end_turn(counter, s, w, why, now, follow_up=False)


def kill_agent(w) -> None:
    # A process group id means something only on the machine that ran the turn.
    if w.host == procs.HOST and w.agent_pgid and group_alive(w.agent_pgid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(w.agent_pgid, signal.SIGKILL)
