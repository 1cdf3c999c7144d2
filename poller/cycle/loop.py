"""The poller's cycle: recover -> scan -> evaluate what is due -> compose -> commit -> launch.

One cycle (``Poller.tick``) reads the clock once, reads the dial wording
(which may fetch the wiki) before any transaction, and then:

1. **recover** (:mod:`poller.cycle.recover`): closes turns whose runner died and
   finds wakes nobody started;
2. **scan** (:mod:`poller.cycle.scan`): reads new posts and sign-ins past its
   cursors, in batches, and updates only the listeners they touch; then the
   organs' stages that come before the listeners (:mod:`poller.cycle.stages`:
   away and back brings back the agents whose absence is up and offers idle
   nudges; the schedules weigh, compose and record the alarms and check-ins due);
3. **evaluate** (:mod:`poller.cycle.evaluate`): takes the listeners that are due
   (an indexed ``due_at``) a batch at a time, claims the batch and reads its
   facts with a few set queries (:mod:`poller.store.facts`), applies the law
   to each kind that is due and records every decision with one executemany;
   after it, the stages that come after (the schedules' mail is sent);
4. **compose** (:mod:`poller.cycle.drafts`): renders the batch's wakes with no
   transaction open, and hands them to the stages' last look (the screen);
5. **commit**: records them and the posts they answer in one short write
   transaction that re-checks each claim (a savepoint each);
6. **launch** (:mod:`poller.turns.launch`): starts the batch's turns once its wakes
   are recorded.

A cycle with nothing new reads two cursors and two index ranges (the due
listeners, the absences due back), whatever the number of Moods.  ``run``
repeats the cycle until SIGTERM/SIGINT.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import threading
import time
import uuid
from typing import Callable, Optional

from poller.clock import SYSTEM
from poller.config import Config
from poller.cycle import drafts, evaluate
from poller import errors
from poller.turns import launch
from poller.store import bell
from poller.cycle import organs, recover, scan, stages
from poller import text
from poller.wake import summarize
from poller.cycle.context import Context, Planned, Step, TickReport
from poller.scope import Scope
from poller import procs
from poller.store import Store, cycle, db
from wiki_rules.fallback import BUILT_IN, DialWords

__all__ = ["Poller", "Planned", "TickReport"]


transient_errors = db.transient_errors  # the cycle is retried whole on these

log = logging.getLogger("poller.loop")

DUE_BATCH = 1_000  # pairs claimed and weighed in one transaction: ~0.1 s of SQLite write lock
LEASE_NAME = "poller"


BEAT_EVERY_S = 1.0  # a loop its bell rings cycles more often; its beat is written at most this often


class Poller:
    def __init__(self, store: Store, config: Config, *,
                 dials: Optional[Callable[[dt.datetime], DialWords]] = None,
                 launcher: Optional[launch.Launcher] = None, detach: bool = False,
                 scope: Scope = Scope()):
        organs.load()  # every kind of wake declared before anything is weighed
        self.store = store
        self.config = config
        self.dials = dials or (lambda now: BUILT_IN)
        self.launcher = launcher or launch.for_config(store, config, detach=detach)
        self.holder = f"{procs.HOST}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.ctx = Context(store, config,
                           summarizer=summarize.from_config(config.summarizer, store.counter))
        for stage in stages.ordered():
            if stage.setup:
                stage.setup(self.ctx)  # e.g. the screen's client
        self._dry = None  # the one rolled-back transaction of a dry run
        self.clock: Optional[Callable[[], dt.datetime]] = None  # run's clock, once it runs
        self.scope = scope
        self._served: Optional[set[int]] = None  # the Moods the scope serves (None: all)
        self.booted_at: Optional[dt.datetime] = None  # when run started (the return floor)
        self._checked = False

    @property
    def settings(self):
        return self.ctx.settings

    @contextlib.contextmanager
    def _tx(self):
        """A short write transaction, or the single rolled-back one of a dry run."""
        if self._dry is not None:
            # A savepoint per step: a step that fails leaves the others standing.
            with self._dry.begin_nested():
                yield self._dry
            return
        with self.store.writing() as s:
            yield s

    @contextlib.contextmanager
    def _rx(self):
        """A read transaction (no write lock on SQLite), or the dry run's one."""
        if self._dry is not None:
            yield self._dry
            return
        with self.store.reading() as s:
            yield s

    # -- the cycle ------------------------------------------------------------------------

    def tick(self, now: dt.datetime, *, dry_run: bool = False) -> TickReport:
        report = TickReport()
        if not dry_run and not self._lease(now, report):
            return report
        self.ctx.dials = self.dials(now)  # may fetch the wiki: before any transaction
        if not dry_run:
            report.recovered = self._recover(now)
            self._cycle(now, report, launch_turns=True)
            return report
        with self.store.scratch() as session:
            self._dry = session
            try:
                self._cycle(now, report, launch_turns=False)
            finally:
                self._dry = None
        return report

    def start_listening(self, now: dt.datetime) -> int:
        """Mark the store's starting point now, as a first cycle would; the newest post id.

        What was posted up to now is history; everything after is heard.  On a
        store a poller has already looked at, nothing changes.
        """
        with self._tx() as s:
            self.ctx.agents = cycle.agents(s)
            self.settings.refresh(s)
            if not cycle.cursor_exists(s, "posts"):
                scan.first_run(self.ctx, s, now)
            return cycle.history_before(s) or 0

    def _lease(self, now: dt.datetime, report: TickReport) -> bool:
        """SQLite serves one poller at a time: take or renew the lease, or say who has it."""
        if self.store.dialect != "sqlite":
            return True
        with self._tx() as s:
            other = cycle.take_lease(s, self.scope.lease_name(LEASE_NAME), self.holder, now,
                                     dt.timedelta(seconds=self.config.poller.lease))
        if other is not None:
            report.started = False
            report.holder = f"{other.holder} until {text.iso(other.expires_at)}"
        return other is None

    def _cycle(self, now: dt.datetime, report: TickReport, launch_turns: bool) -> None:
        with self._rx() as s:
            scram = cycle.flag(s, "scram") is not None
            self.ctx.agents = cycle.agents(s)
            changed = self.settings.refresh(s)
            if not self.scope.everything:
                self._served = {i for i, slug in cycle.mood_slugs(s).items()
                                if self.scope.serves(slug)}
        if not self._checked:
            self.check_catalogs()
        if changed:
            with self._tx() as s:
                cycle.lift_holds(s, now)  # new settings may lift holds
        report.posts_read = self._drain("posts", scan.posts, now)
        report.signins_read = self._drain("signins", scan.signins, now)
        if scram:
            report.scram = True
            return
        start = self._start if launch_turns else None
        step = self.step(start)
        self._stages("before", step, now, report, launch_turns)
        self._evaluate_due(now, report, start)
        self._stages("after", step, now, report, launch_turns)

    def step(self, start: Optional[Callable[[int, dt.datetime], None]] = None) -> Step:
        """What the organs' stages are handed: this cycle's transactions and this poller."""
        return Step(self._tx, self._rx, None if self._served is None else frozenset(self._served),
                    self.holder, self.booted_at, start, transient_errors())

    def _stages(self, when: str, step: Step, now: dt.datetime, report: TickReport,
                live: bool) -> None:
        """The organs' steps *when* (before or after the listeners), in their order; the
        live-only ones only when turns are started (a return writes outside its
        transaction: not in a dry run)."""
        for stage in stages.ordered():
            hook = getattr(stage, when)
            if hook and (live or not stage.live_only):
                hook(self.ctx, step, now, report)

    def check_catalogs(self) -> None:
        """What the organs check once, as the poller starts: e.g. every agent's activities
        catalog; one that is present but invalid stops it (ConfigError, exit 78) rather
        than being ignored."""
        with self._rx() as s:
            agents = cycle.agents(s)
        for stage in stages.ordered():
            if stage.check:
                stage.check(self.ctx, agents)
        self._checked = True

    def _drain(self, cursor: str, step, now: dt.datetime) -> int:
        """Run a scan step in short transactions until the backlog is read.

        Whether there is anything to read is asked first in a read
        transaction, so an idle cycle never takes the write lock.
        """
        with self._rx() as s:
            if not cycle.unread(s, cursor):
                return 0
        total = 0
        while True:
            with self._tx() as s:
                n = step(self.ctx, s, now)
            total += n
            if n < scan.BATCH:
                return total

    def _evaluate_due(self, now: dt.datetime, report: TickReport,
                      start: Optional[Callable[[int, dt.datetime], None]]) -> None:
        """Each due listener once, a batch at a time: decide, then compose and record
        the batch's wakes, then start their turns (*start*; None in a dry run)."""
        seen: set[tuple[int, int]] = set()
        after = None  # the last due listener read: each page starts after it
        while True:
            with self._rx() as s:
                page = cycle.due_listeners(s, now, DUE_BATCH, after)
            if not page:
                break
            after = page[-1]
            # A pair weighed already and due again (held for a free slot) waits for the next cycle.
            due = [(a, m) for _, a, m in page if (a, m) not in seen]
            seen.update(due)
            pairs = [d for d in due if d[0] in self.ctx.agents
                     and (self._served is None or d[1] in self._served)]
            recorded: list[Planned] = []
            try:
                self._batch(pairs, now, report, recorded)
            finally:
                # Committed: start the turns even if a later step of the cycle fails.
                # (Not one by one as recorded: a turn that ended at once would change
                # the load the batch's later wakes of its agent were decided on.)
                for planned in recorded:
                    report.wakes.append(planned)
                    if start is not None:
                        start(planned.wake_id, now)
        report.due = len(seen)

    def _batch(self, pairs: list[tuple[int, int]], now: dt.datetime, report: TickReport,
               recorded: list[Planned]) -> None:
        """Weigh a batch of due pairs in one transaction, then compose and record its wakes.

        If the database refuses something, the transaction is gone: the pairs
        are weighed again one by one, so only the one that breaks it is set aside.
        """
        if not pairs:
            return
        try:
            with self._tx() as s:
                decided = evaluate.evaluate(self.ctx, s, pairs, now)
        except transient_errors():
            raise  # a lock or a lost connection: the whole cycle is retried
        except Exception as exc:
            if len(pairs) == 1:
                self._set_aside(*pairs[0], exc, now, report)
            else:
                for pair in pairs:
                    self._batch([pair], now, report, recorded)
            return
        decided.tell(report)
        for (agent_id, mood_id), exc in decided.bad:
            self._set_aside(agent_id, mood_id, exc, now, report)
        composed = []
        for draft in decided.drafts:
            try:
                composed.append((draft, drafts.compose_text(self.ctx, draft)))  # no transaction
            except transient_errors():
                raise
            except Exception as exc:  # this wake's data broke composing it: set it aside, go on
                self._set_aside(draft.agent.id, draft.mood.id, exc, now, report)
        recorded += self._record(self._screened(composed, now, report), now, report)

    def _screened(self, composed: list, now: dt.datetime, report: TickReport) -> list:
        """The composed wakes to record: what the organs' last looks leave (the screen
        records the considers nobody needs as screened out instead)."""
        if self._dry is not None:
            return composed
        step = self.step()
        for stage in stages.ordered():
            if stage.composed and composed:
                composed = stage.composed(self.ctx, step, composed, now, report)
        return composed

    def _record(self, composed: list, now: dt.datetime, report: TickReport) -> list[Planned]:
        """Record a batch's composed wakes in one write transaction: all at once, in a
        savepoint (:func:`drafts.record_set`); if that breaks, one by one, each in a
        savepoint of its own (one that breaks is set aside, the others stand)."""
        planned, failed = [], []
        if composed:
            with self._tx() as s:
                try:
                    with s.begin_nested():
                        outcomes = drafts.record_set(self.ctx, s, composed, now, report)
                except transient_errors():
                    raise
                except Exception:
                    log.debug("a batch of %d wakes recorded one by one", len(composed),
                              exc_info=True)
                    outcomes = None
                if outcomes is not None:
                    for (draft, _), one in zip(composed, outcomes):
                        if one is None:
                            report.abandoned += 1  # changed meanwhile: looked at again next cycle
                        else:
                            drafts.told(draft, report)
                            planned.append(one)
                    composed = []
                for draft, wake in composed:
                    try:
                        with s.begin_nested():
                            one = drafts.record(self.ctx, s, draft, wake, now, report)
                    except transient_errors():
                        raise
                    except Exception as exc:
                        failed.append((draft, exc))
                        continue
                    if one is None:
                        report.abandoned += 1  # changed meanwhile: looked at again next cycle
                    else:
                        planned.append(one)
        for draft, exc in failed:
            self._set_aside(draft.agent.id, draft.mood.id, exc, now, report)
        return planned

    def _set_aside(self, agent_id: int, mood_id: int, exc: Exception, now: dt.datetime,
                   report: TickReport) -> None:
        """Quarantine a listener whose evaluation raised; it is tried again later."""
        error = f"{type(exc).__name__}: {exc}"
        log.exception("agent %s in Mood %s set aside: %s", agent_id, mood_id, error,
                      extra={"action": "quarantined", "kind": "listener"})
        report.quarantined += 1
        with self._tx() as s:
            cycle.quarantine(s, "listener", f"{agent_id}:{mood_id}", error, now,
                             agent_id=agent_id, mood_id=mood_id)
            cycle.defer_listener(s, agent_id, mood_id,
                                 now + dt.timedelta(seconds=self.config.poller.hold_renew))

    def _recover(self, now: dt.datetime) -> int:
        closed, start = recover.recover(self.ctx, now, self.launcher.running())
        for wake_id in start:
            self._start(wake_id, now)
        return closed

    def _start(self, wake_id: int, now: dt.datetime) -> None:
        """Start a turn on the poller's clock as it reads now, not as it read when the
        cycle began (a turn stamped with the cycle's start would seem to begin early)."""
        self.launcher.start(wake_id, self.clock() if self.clock is not None else now)

    # -- turns ------------------------------------------------------------------------------

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Wait for the turns this poller started; False if some still run."""
        return self.launcher.wait(timeout)

    def reap(self) -> None:
        self.launcher.running()

    # -- run ----------------------------------------------------------------------------------

    def run(self, interval: float, stop: threading.Event,
            clock: Callable[[], dt.datetime] = SYSTEM) -> None:
        """Cycle every *interval* seconds, and at once when something is committed.

        Whoever sets *stop* rings :data:`poller.store.bell.BELL` so the sleep ends.
        """
        waiting_logged = False
        self.clock = clock
        self.booted_at = clock()
        listener = self.listen_for_commits()
        beat_at = 0.0
        try:
            while not stop.is_set():
                began = time.monotonic()
                now = clock()
                report = self._tick_or_retry(now)
                if report is not None and not report.started:
                    if not waiting_logged:
                        log.info("another poller holds the lease (%s); waiting", report.holder,
                                 extra={"action": "lease_wait"})
                    waiting_logged = True
                else:
                    waiting_logged = False
                    if report is not None and time.monotonic() - beat_at >= BEAT_EVERY_S:
                        beat_at = time.monotonic()
                        self._beat(now, interval, beat_at - began)
                self.reap()
                if not stop.is_set():
                    bell.BELL.sleep(interval)
        finally:
            listener.close()
            self.shutdown(clock())
            self._beat(None, interval, 0.0)

    def _beat(self, now: Optional[dt.datetime], interval: float, took: float) -> None:
        """Record that this poller cycled at *now* (None: it stopped), for ``/healthz`` and
        ``health``; a beat that cannot be written only ages."""
        from poller.store import access

        try:
            if now is None:
                access.drop_beat(self.store, self.holder)
            else:
                access.record_beat(self.store, self.holder, now, interval, took,
                                   self.scope.describe())
        except Exception as exc:
            log.debug("beat not recorded: %s", exc, extra={"action": "beat_failed"})

    def listen_for_commits(self) -> bell.CommitListener:
        """Have other processes' commits ring this process's bell (see poller.store.bell)."""
        listener = bell.CommitListener()
        url = self.store.engine.url
        if self.store.dialect == "postgresql":
            listener.listen_postgresql(url)
        elif url.database and url.database != ":memory:":
            listener.listen_sqlite(url.database)
        return listener

    def _tick_or_retry(self, now: dt.datetime) -> Optional[TickReport]:
        import sqlalchemy as sa

        try:
            return self.tick(now)
        except errors.StoreGone as exc:
            # Every later cycle would refuse the same: stop, and say why once.
            log.error("poller stopping: %s", exc, extra={"action": "store_gone"})
            raise
        except errors.PollerError:
            raise
        except sa.exc.SQLAlchemyError as exc:
            # A lost race with another poller (a deadlock, a duplicate
            # first-run cursor) or a blip in the database: the cycle's
            # transaction rolled back, so the next cycle simply retries.
            log.warning("cycle failed, retrying: %s", str(exc).splitlines()[0],
                        extra={"action": "cycle_failed"})
            return None
        except Exception:
            # Never exit over data: what one item breaks is set aside where it
            # is met; anything else is logged whole and the next cycle goes on.
            log.exception("cycle failed, retrying", extra={"action": "cycle_failed"})
            return None

    def shutdown(self, now: dt.datetime) -> None:
        """Stop claiming, give running turns a grace period, then end them."""
        if self.launcher.running() and not self.wait(self.config.poller.shutdown_grace):
            self.launcher.stop()
            self.wait(10)
        self.release()

    def release(self) -> None:
        """Give up the SQLite lease so the next tick need not wait for it to expire."""
        if self.store.dialect == "sqlite":
            with contextlib.suppress(Exception), self.store.writing() as s:
                cycle.drop_lease(s, LEASE_NAME, self.holder)
