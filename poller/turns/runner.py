"""Runs one turn: ``python -m poller.turns.runner WAKE_ID``, or :func:`run_turn` in process.

The poller records a wake, then starts its turn (:mod:`poller.launch`).  The
turn claims the wake (pending -> running, recording its pid), hands the wake
to the agent's waker, and settles the outcome in one transaction
(:func:`poller.turns.settling.settle_outcome`): the reply becomes a post (or a
silent dot), a failure or timeout closes the turn with a system post, and the
listener's cooldown and quiet back-off are updated.  A reply's ```handoff and
```settings blocks are applied in the same transaction, or refused whole.
While the agent works a heartbeat marks the turn alive for pollers on other
machines; a turn closed elsewhere (an emergency stop) ends the agent.
SIGTERM ends the turn and records it as cut off.  The database URL and config
path come from the environment (``MOOD_POLLER_DB``, ``MOOD_POLLER_CONFIG``),
never argv.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import signal
import sys
import threading
import time
from typing import Callable, Optional

from poller import errors, logs, procs, secure, settings, tokens

from poller.config import Config, PollerConfig, data_dir, load
from poller.turns import kept, registry, sandbox, settling, wakers
from poller.store import db
from poller.clock import Clock
from poller.kinds import ANSWERED, WakeKind
from poller.store import Store, turns

log = logging.getLogger("poller.runner")

HEARTBEAT_S = 10.0
SETTLE_ATTEMPTS = 5  # claiming a wake
SETTLE_PATIENCE_S = 600.0  # how long a finished turn waits here for its store
SETTLE_BACKOFF_MAX_S = 5.0


def heartbeat(store: Store, wake_id: int, clock, done: threading.Event, every: float,
              cancel: threading.Event) -> None:
    """Mark the turn alive every few seconds until it ends, for pollers on other machines.

    If the turn is no longer running (an emergency stop, or a poller elsewhere
    closed it), end it here too.
    """
    while not done.wait(every):
        try:
            if not turns.beat(store, wake_id, clock()):
                cancel.set()
                return
        except Exception:  # a missed beat is harmless; the next one may land
            log.warning("turn %s: heartbeat failed", wake_id, extra={"action": "heartbeat_failed"})


class Progress:
    """Writes what a running turn is doing to its wake (``wakes.progress``), from a thread
    of its own: the agent's output is read without waiting on the database, reports
    that come faster than every *every* seconds are folded into the latest, and a
    failed write is only logged (progress is a courtesy, never the turn's business)."""

    def __init__(self, store: Store, wake_id: int, every: float = 0.25) -> None:
        self.store, self.wake_id, self.every = store, wake_id, every
        self.latest, self.written = "", ""
        self.wanted, self.done = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._write, name=f"progress-{wake_id}",
                                       daemon=True)
        self.thread.start()

    def __call__(self, doing: str) -> None:
        self.latest = doing
        self.wanted.set()

    def _write(self) -> None:
        while not self.done.is_set():
            self.wanted.wait()
            self.wanted.clear()
            doing = self.latest
            if doing and doing != self.written and not self.done.is_set():
                try:
                    turns.record_progress(self.store, self.wake_id, doing)
                    self.written = doing
                except Exception:
                    log.warning("turn %s: progress not recorded", self.wake_id,
                                extra={"action": "progress_failed"})
            self.done.wait(self.every)

    def stop(self) -> None:
        self.done.set()
        self.wanted.set()
        self.thread.join(5)


def timeout_for(agent, tools: str, cfg: PollerConfig):
    if agent.timeout:
        return agent.timeout
    if tools == "full":
        return cfg.full_timeout or None
    return cfg.look_timeout or None


def settle_with_retries(store: Store, wake_id: int, outcome: wakers.TurnResult, clock,
                        prices: Optional[settling.Prices] = None,
                        patience: float = SETTLE_PATIENCE_S) -> str:
    """Settle, waiting out a store that cannot take it now (a lost race, a busy file, a
    database that is down).

    From the first failed try the outcome is kept on disk (:mod:`poller.turns.kept`),
    so a reply the agent finished is never thrown away: this process goes on trying
    for *patience* seconds, and should it stop or die first, recovery settles the
    kept outcome when the store is back.  Returns the final status, or ``""`` when
    the turn is left to recovery.  A reply that cannot be recorded for what it is
    (not for want of a store) closes the turn as failed.
    """
    transient = db.transient_errors()
    url = store.engine.url
    deadline, attempt, kept_it = time.monotonic() + patience, 0, False
    while True:
        try:
            status = settling.settle_outcome(store, wake_id, outcome, clock(), prices)
        except transient as exc:
            attempt += 1
            log.warning("settling turn %s failed (attempt %d): %s", wake_id, attempt,
                        str(exc).splitlines()[0], extra={"action": "settle_retry"})
            if not kept_it:
                kept_it = kept.keep(url, wake_id, outcome)
            if time.monotonic() >= deadline:
                log.error("turn %s: the store is still unreachable; its outcome is kept for "
                          "recovery to settle", wake_id, extra={"action": "settle_deferred",
                                                                "wake_id": wake_id})
                return ""
            time.sleep(min(SETTLE_BACKOFF_MAX_S, 0.2 * 2 ** min(attempt, 10)))
            continue
        except Exception as exc:
            log.exception("settling turn %s failed", wake_id)
            failed = wakers.TurnResult("failed", error=f"the reply could not be recorded: "
                                       f"{type(exc).__name__}")
            status = settle_with_retries(store, wake_id, failed, clock, patience=patience)
        if kept_it:
            kept.drop(url, wake_id)
        return status


def claim_with_retries(store: Store, wake_id: int, clock):
    """Claim the wake, waiting out a busy database instead of dying on it."""
    import sqlalchemy.exc

    for attempt in range(SETTLE_ATTEMPTS):
        try:
            return turns.claim(store, wake_id, clock(), os.getpid())
        except sqlalchemy.exc.OperationalError as exc:
            log.warning("claiming turn %s failed (attempt %d): %s", wake_id, attempt + 1,
                        str(exc).splitlines()[0], extra={"action": "claim_retry"})
            time.sleep(0.2 * 2 ** attempt)
    return turns.claim(store, wake_id, clock(), os.getpid())


def mood_settings(store: Store, claimed: turns.Claimed, now: dt.datetime) -> dict:
    """The Mood's own settings for its turns (model, effort, rules), as they stand now."""
    try:
        return settings.values(store.resolved(now, mood=claimed.mood, agent=claimed.agent.handle))
    except errors.NotFound:  # the agent or Mood went meanwhile: the turn runs with none
        return {key: settings.KEYS[key].default for key in TURN_KEYS}


TURN_KEYS = ("model", "effort", "rules", "persona", "session_tokens", "max_tool_calls",
             "archive_after", "approve_tools")


def kept_history(claimed: turns.Claimed, here: dict, now: dt.datetime) -> tuple[Optional[str], str]:
    """The session and conversation a model agent resumes: none once the session sat unused
    longer than ``archive_after`` (the wake then carries the full catch-up)."""
    fresh = (claimed.session_at is not None and here["archive_after"]
             and claimed.session_at >= now - dt.timedelta(seconds=here["archive_after"]))
    return (claimed.session, claimed.history) if fresh else (None, "")


def toolbox_for(store: Store, claimed: turns.Claimed, clock, max_calls: int):
    """The turn's tools, for wakers that call them."""
    try:
        from poller import tools

        return tools.for_turn(store, claimed, clock, max_calls=max_calls)
    except Exception:  # the turn still runs, without tools, and says why in the log
        log.exception("turn %s: its tools could not be made ready; it runs without them",
                      claimed.wake_id)
        return None


def run_turn(store: Store, cfg: Config, wake_id: int,
             clock: Callable[[], dt.datetime], cancel: threading.Event) -> str:
    """Claim, run and settle one turn; returns its final status ("" if not ours)."""
    claimed = claim_with_retries(store, wake_id, clock)
    if claimed is None:
        return ""
    from poller.cycle import organs

    organs.load()  # every kind declared: whether the Mood is told of a failure depends on it
    agent, started = claimed.agent, time.monotonic()
    # Only a waker that reports its progress gets a writer thread for it.
    able = registry.capabilities(agent.waker)
    progress = Progress(store, wake_id) if able.reports_progress else None
    here = mood_settings(store, claimed, clock())
    session, history = claimed.session, ""
    if able.keeps_history:
        session, history = kept_history(claimed, here, clock())
    toolbox = (toolbox_for(store, claimed, clock, here["max_tool_calls"])
               if able.calls_tools and here["max_tool_calls"] else None)
    asks = toolbox is not None and bool(here["approve_tools"]) and claimed.tools == "full"
    if asks:  # acting tools a person approves first: asked in the Mood, as Claude Code's are
        ask_for_approval(store, claimed, clock, toolbox, here["approve_tools"])
    jail, refusal = jail_for(cfg, agent, claimed.tools)
    timeout = timeout_for(agent, claimed.tools, cfg.poller)
    tools_open = (open_tools(store, claimed, clock, timeout)
                  if able.runs_process and not refusal else None)
    server = tools_open[0] if tools_open else None
    if server is not None and jail is not None:
        jail = jail.needing((server.directory,))
    turn = wakers.TurnRequest(wake_id, agent.handle, claimed.mood, claimed.kind, claimed.tools,
                       claimed.text, claimed.answers,
                       timeout=timeout,
                       silence_limit=(cfg.poller.silence_limit or None) if claimed.tools == "full"
                       else None,
                       workdir=agent.workdir, session=session,
                       pass_env=tuple(n.strip() for n in cfg.poller.agent_env.split(",")
                                      if n.strip()),
                       model=here["model"], effort=here["effort"], rules=here["rules"],
                       on_progress=progress, history=history, persona=here["persona"],
                       session_tokens=here["session_tokens"], toolbox=toolbox, sandbox=jail,
                       tool_server=server)
    done = threading.Event()
    every = min(HEARTBEAT_S, cfg.poller.turn_stale / 4)
    threading.Thread(target=heartbeat, args=(store, wake_id, clock, done, every, cancel),
                     daemon=True).start()
    try:
        outcome = (run_waker(store, agent, turn, cancel) if not refusal else
                   wakers.TurnResult("failed", error=f"the turn could not be sandboxed: {refusal}",
                                     public="its turn could not be sandboxed"))
    finally:  # the turn's capability never outlives it
        if tools_open is not None:
            close_tools(store, claimed, tools_open[1], clock)
        elif asks:
            revoke_quietly(store, claimed, clock)
    if tools_open is not None:
        outcome = with_tool_blocks(store, claimed, outcome, clock)
    if progress is not None:
        progress.stop()  # before settling, which clears it: no report lands after the end
    try:  # the heartbeat goes on while settling waits for its store: the turn is alive
        status = settle_with_retries(store, wake_id, outcome, clock, prices_for(agent, cfg.poller))
    finally:
        done.set()
    log_end(claimed, status, outcome, time.monotonic() - started)
    return status


TOOLS_LAST_S = 24 * 3600.0  # a capability's life when its turn has no time limit


def open_tools(store: Store, claimed: turns.Claimed, clock, timeout: Optional[float]):
    """The Moods' tools for the turn's processes: a capability minted for it and the door
    its ``mood-poller mcp`` reaches them by; None (and a warning) if they cannot be made."""
    from poller.store import capabilities
    from poller.toolserver.door import Door

    try:
        user, failed = wakers.resolve_run_as((claimed.agent.options or {}).get("run_as"))
        owner = (user.uid, user.gid) if user is not None else None
        lasts = dt.timedelta(seconds=(timeout or TOOLS_LAST_S) + 60)
        token = capabilities.mint(store, claimed.wake_id, claimed.tools, clock(), lasts)
        door = Door(store, clock, owner=owner if failed is None else None)
        from poller import tools

        reading = tuple(t.spec.name for t in tools.registered() if not t.spec.acting)
        return (wakers.ToolServer(token, door.path, door.dir, reading, owner), door)
    except Exception:  # the turn still runs, without the Moods' tools
        log.warning("turn %s: the Moods' tools could not be opened for it", claimed.wake_id,
                    exc_info=True, extra={"action": "tools_unavailable",
                                          "wake_id": claimed.wake_id})
        return None


def close_tools(store: Store, claimed: turns.Claimed, door, clock) -> None:
    """The turn is over: its capability is revoked and its door closed."""
    try:
        door.close()
    finally:
        revoke_quietly(store, claimed, clock)


def revoke_quietly(store: Store, claimed: turns.Claimed, clock) -> None:
    from poller.store import capabilities

    try:
        capabilities.revoke(store, claimed.wake_id, clock())
    except Exception:  # the capability still dies with the wake's running state
        log.warning("turn %s: its capability could not be revoked", claimed.wake_id,
                    extra={"action": "revoke_failed", "wake_id": claimed.wake_id})


def ask_for_approval(store: Store, claimed: turns.Claimed, clock, box, names: str) -> None:
    """A model agent's acting tools named in ``approve_tools`` wait for a person's approval,
    asked in the Mood with the turn's own capability (revoked at its end)."""
    from poller.store import capabilities
    from poller.toolserver import approvals

    secret = capabilities.mint(store, claimed.wake_id, claimed.tools, clock(),
                               dt.timedelta(seconds=TOOLS_LAST_S))
    cap, _ = capabilities.find(store, secret, clock())

    def ask(tool: str, args: dict) -> tuple[bool, str]:
        decided = approvals.request(store, cap, secret, tool, args, clock=clock)
        said = approvals.outcome(decided, args)
        return said["behavior"] == "allow", said.get("message", "")

    box.approve, box.ask = tuple(n for n in names.split(",") if n), ask


def with_tool_blocks(store: Store, claimed: turns.Claimed, outcome: wakers.TurnResult,
                     clock) -> wakers.TurnResult:
    """The reply with the blocks the turn's acting tools accepted over MCP appended, as
    settling must read them."""
    import dataclasses

    from poller.store import capabilities
    from poller.tools.registry import Toolbox

    if outcome.status != "replied":
        return outcome
    try:
        kinds, texts = capabilities.blocks_of(store, claimed.wake_id)
    except Exception:
        log.warning("turn %s: the blocks its tools accepted could not be read",
                    claimed.wake_id, extra={"action": "tool_blocks_lost"})
        return outcome
    if not texts:
        return outcome
    box = Toolbox(store, wake_id=claimed.wake_id, agent_id=claimed.agent.id,
                  agent=claimed.agent.handle, mood_id=0, mood=claimed.mood,
                  tools=claimed.tools, clock=clock)
    box.block_kinds, box.blocks = kinds, texts
    return dataclasses.replace(outcome, reply=box.reply_with_blocks(outcome.reply))


def jail_for(cfg: Config, agent, tools: str) -> tuple[Optional[sandbox.Jail], str]:
    """Where the agent's processes run this turn (``poller.sandbox``), or why they may not."""
    hidden = sandbox.hidden_paths(cfg.db_url, cfg.source, str(data_dir()))
    jail, refusal = sandbox.for_turn(
        cfg.poller.sandbox, tools=tools, workdir=agent.workdir,
        network=(agent.options or {}).get("network") != "off",
        writable=tuple(p for p in cfg.poller.sandbox_writable.split(":") if p), hidden=hidden)
    # Only a waker that starts a process of its own here is refused for want of a sandbox.
    return jail, refusal if registry.capabilities(agent.waker).runs_process else ""


def run_waker(store: Store, agent, turn: wakers.TurnRequest, cancel: threading.Event) -> wakers.TurnResult:
    """The turn through the agent's waker; a waker's bug still ends it with a reason."""
    try:
        kind = registry.kind(agent.waker)
    except registry.UnknownWaker as exc:  # its package was removed since the wake was recorded
        return wakers.TurnResult("failed", error=str(exc), public="its waker is not installed here")
    if turn.kind == WakeKind.COMMAND and not kind.takes_commands:
        why = "a command runs only in the session of a waker that takes commands"  # changed since
        return wakers.TurnResult("failed", error=why, public=why)
    try:
        return kind.from_agent(agent).run(
            turn, lambda pgid: turns.record_pgid(store, turn.wake_id, pgid), cancel)
    except Exception as exc:  # a waker bug must still close the turn
        log.exception("waker failed")
        return wakers.TurnResult("failed", error=f"the waker failed: {type(exc).__name__}")


def prices_for(agent, cfg: PollerConfig) -> Optional[settling.Prices]:
    """What an agent's tokens cost, for agents whose waker reports no cost of its own
    (Claude Code reports its turns' cost; command and HTTP agents are priced by token counts)."""
    able = registry.capabilities(agent.waker)
    if (able.reports_cost and not able.reports_tokens) or not (cfg.usd_per_mtok_in
                                                               or cfg.usd_per_mtok_out):
        return None
    return settling.Prices(cfg.usd_per_mtok_in, cfg.usd_per_mtok_out)


def log_end(claimed: turns.Claimed, status: str, outcome: wakers.TurnResult, seconds: float) -> None:
    """One line per turn's end: who, where, how it ended, how long, how big the wake was."""
    detail = f": {outcome.error}" if outcome.error else ""  # an answer may carry one too
    level = logging.INFO if status in ANSWERED and not outcome.error else logging.WARNING
    log.log(level, "turn %s: %s in %s (%s) %s after %.1f s%s", claimed.wake_id,
            claimed.agent.handle, claimed.mood, claimed.kind, status, seconds, detail,
            extra={"action": "turn_settled", "wake_id": claimed.wake_id,
                   "agent": claimed.agent.handle, "mood": claimed.mood, "kind": claimed.kind,
                   "tools": claimed.tools, "status": status, "duration_s": round(seconds, 3),
                   "prompt_tokens": claimed.prompt_tokens, "error": outcome.error or ""})


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    secure.undumpable()  # the agent may not read this process's environment or memory
    procs.become_subreaper()  # a daemon the agent starts is re-parented here, not to init
    if len(argv) != 1 or not argv[0].isdigit():
        print("usage: python -m poller.turns.runner WAKE_ID", file=sys.stderr)
        return 2
    logs.setup_from_env()
    cancel = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: cancel.set())
    signal.signal(signal.SIGINT, lambda *_: cancel.set())
    try:
        cfg = load()
        store = Store(db.make_engine(cfg.db_url), tokens.counter(cfg.encoding))
    except errors.PollerError as exc:
        print(f"mood-poller runner: {exc}", file=sys.stderr)
        return exc.exit_code
    try:
        run_turn(store, cfg, int(argv[0]), Clock.from_env(), cancel)
    finally:
        # The turn is over: nothing it started outlives it, in its process
        # group or not (this process's only children are the agent's).
        procs.kill_descendants()
        store.engine.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
