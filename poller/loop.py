"""The poller's cycle: detect -> decide -> compose -> record, then deliver.

One cycle (``Poller.tick``) reads the clock once and:

1. closes turns whose runner died (restart safety);
2. reads new posts and sign-ins past its cursors and updates only the
   listeners they touch (timers, owed mentions);
3. takes the listeners that are due (an indexed ``due_at``), claims each,
   applies the law to each kind that is due and records every decision;
4. for each wake, composes the text and commits it with the posts it answers
   before any turn starts; then starts one runner process per wake
   (:mod:`poller.runner`), which runs the agent and settles its reply.

A cycle with nothing new reads two cursors and one index range, whatever the
number of Moods.  ``run`` repeats the cycle until SIGTERM/SIGINT.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable, Optional

import sqlalchemy as sa

from poller import clock, compose, config as config_mod, errors, gather, law, state, summarize, text, turns
from poller.models import Listener, Owed, Participant, Post, Wake
from poller.store import Store
from wiki_rules.fallback import BUILT_IN, DialWords

log = logging.getLogger("poller.loop")

POST_BATCH = 1_000  # posts read per cycle: bounds the scan's memory and write-lock time
DUE_BATCH = 500
LEASE_NAME = "poller"
UNSTARTED_GRACE = dt.timedelta(seconds=60)


@dataclass
class Planned:
    """A wake recorded this cycle (or, in a dry run, one that would be)."""

    wake_id: Optional[int]
    agent: str
    mood: str
    kind: str
    tools: str
    text: str
    answers: list[int]


@dataclass
class TickReport:
    started: bool = True  # False: another poller holds the lease
    holder: str = ""
    scram: bool = False
    posts_read: int = 0
    signins_read: int = 0
    due: int = 0
    wakes: list[Planned] = field(default_factory=list)
    decisions: list[tuple[str, str, str, str]] = field(default_factory=list)  # agent, mood, kind, code
    recovered: int = 0


class Poller:
    def __init__(self, store: Store, config: config_mod.Config, *,
                 dials: Optional[Callable[[dt.datetime], DialWords]] = None,
                 detach: bool = False, python: str = sys.executable):
        self.store = store
        self.config = config
        self.cfg = config.poller
        self.dials = dials or (lambda now: BUILT_IN)
        self.detach = detach  # runners outlive us (cron ticks) or die with us (run)
        self.python = python
        self.holder = f"{state.HOST}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.settings = state.SettingsCache()
        self.children: dict[int, subprocess.Popen] = {}
        self.summarizer = summarize.from_config(config.summarizer, store.counter)
        self._dry: Optional[sa.orm.Session] = None

    # -- transactions ---------------------------------------------------------------

    @contextlib.contextmanager
    def _tx(self):
        """A short write transaction, or the single rolled-back one of a dry run."""
        if self._dry is not None:
            yield self._dry
            self._dry.flush()
            return
        with self.store.writing() as s:
            yield s

    # -- the cycle ------------------------------------------------------------------------

    def tick(self, now: dt.datetime, *, dry_run: bool = False) -> TickReport:
        report = TickReport()
        if self.store.dialect == "sqlite" and not dry_run:
            with self._tx() as s:
                other = state.take_lease(s, LEASE_NAME, self.holder, now,
                                         dt.timedelta(seconds=self.cfg.lease))
            if other is not None:
                report.started, report.holder = False, f"{other.holder} until {text.iso(other.expires_at)}"
                return report
        if not dry_run:
            self._cycle(now, report)
            return report
        with self.store.scratch() as session:
            self._dry = session
            try:
                self._cycle(now, report)
            finally:
                self._dry = None
        return report

    def _cycle(self, now: dt.datetime, report: TickReport) -> None:
        if self._dry is None:
            report.recovered = self.recover(now)
        with self._tx() as s:
            scram = state.flag(s, "scram")
            if self.settings.refresh(s):
                # New settings may lift holds (listening back on, a cap raised).
                s.execute(sa.update(Listener).where(Listener.hold_reason.is_not(None))
                          .values(due_at=now))
        # Drain the backlog in batches, each its own short transaction, so a
        # burst is caught up in one cycle without holding the write lock long.
        for scan, counter in ((self._scan_posts, "posts_read"), (self._scan_signins, "signins_read")):
            while True:
                with self._tx() as s:
                    n = scan(s, now)
                setattr(report, counter, getattr(report, counter) + n)
                if n < POST_BATCH:
                    break
        if scram is not None:
            report.scram = True
            return
        with self._tx() as s:
            agents = {p.id: (p, a) for p, a in state.agent_rows(s)}
        seen: set[tuple[int, int]] = set()
        while True:
            with self._tx() as s:
                due = [d for d in state.due_listeners(s, now, DUE_BATCH + len(seen))
                       if d not in seen]
            if not due:
                break
            for pair in due:
                seen.add(pair)
                if pair[0] not in agents:
                    continue
                before = len(report.wakes)
                with self._tx() as s:
                    self._evaluate(s, agents, pair[0], pair[1], now, report)
                if self._dry is None:
                    # Committed: start the turn now, so a later failure in this
                    # cycle cannot leave a recorded wake waiting.
                    for planned in report.wakes[before:]:
                        self._launch(planned.wake_id, now)
        report.due = len(seen)

    # -- detect: new posts and sign-ins ---------------------------------------------------

    def _scan_posts(self, s, now: dt.datetime) -> int:
        cur = state.claim_cursor(s, "posts")
        if cur is None:
            if s.get(state.Cursor, "posts") is None:
                self._first_run(s, now)
            return 0  # first run, or another poller is reading them right now
        rows = state.new_posts(s, cur.value, POST_BATCH)
        if not rows:
            return 0
        agent_ids = {p.id for p, _ in state.agent_rows(s)}
        mentioned = state.mentions_between(s, cur.value, rows[-1].id, agent_ids)
        listeners = state.listeners_for(s, {(a, r.mood_id) for r in rows for a in agent_ids})
        owed: set[tuple[int, int, int]] = set()
        for r in rows:
            addressed = mentioned.get(r.id, set())
            if r[6] == "none" and r[5] == "person":
                addressed = set()  # people with trust none: a mention is just text
            for agent_id in agent_ids:
                self._apply_post(listeners[(agent_id, r.mood_id)], r, agent_id, addressed, now, owed)
        s.add_all(Owed(agent_id=a, post_id=p, mood_id=m) for a, p, m in owed)
        owed_pairs = {(a, m) for a, _, m in owed}
        for (agent_id, mood_id), row in listeners.items():
            self._reschedule(row, (agent_id, mood_id) in owed_pairs, now)
        cur.value, cur.at = rows[-1].id, now
        return len(rows)

    def _apply_post(self, l: Listener, r, agent_id: int, addressed: set[int],
                    now: dt.datetime, owed: set) -> None:
        post_id, mood_id, sender_id, created_at, kind, sender_kind = r[:6]
        if kind not in ("post", "silent"):
            return  # system notes and handoff events are not conversation
        values = self.settings.values(mood_id, agent_id, now)
        idle = dt.timedelta(seconds=values["idle_after"])
        if sender_id == agent_id:
            # The agent spoke (or chose silence) after reading up to looked_id
            # (set when its wake was made): people's posts that came in during
            # its turn are still unread and stay up for a consider.
            if l.consider_from_id and l.consider_from_id <= (l.looked_id or 0):
                l.consider_from_id, l.consider_due_at = 0, None
            if kind == "post":
                l.quiet_backoff = 0
                l.last_post_at = created_at
                l.quiet_due_at = created_at + idle if values["idle_after"] else None
            return
        if kind != "post":
            return
        l.last_post_at = created_at
        if sender_kind == "person":
            l.last_person_at, l.last_person_id, l.quiet_backoff = created_at, post_id, 0
            if l.hold_reason:
                l.due_at = now  # a person spoke: a bot-loop hold may lift
        l.quiet_due_at = created_at + idle * (2 ** (l.quiet_backoff or 0)) if values["idle_after"] else None
        if agent_id in addressed:
            owed.add((agent_id, post_id, mood_id))
            # Posts up to a mention belong to the mention's wake.
            l.consider_from_id, l.consider_due_at = 0, None
        elif sender_kind == "person" and not addressed:
            l.consider_from_id = l.consider_from_id or post_id
            l.consider_due_at = created_at + dt.timedelta(seconds=values["consider_after"])

    def _reschedule(self, l: Listener, owed: bool, now: dt.datetime) -> None:
        due = state.next_due(l, owed, now)
        if l.due_at is not None and (due is None or l.due_at < due):
            due = l.due_at  # never push back something already due sooner
        l.due_at = due

    def _first_run(self, s, now: dt.datetime) -> None:
        """A new deployment starts from now, not from history.

        Cursors start at the newest post and sign-in; Moods where a person
        spoke lately get a quiet clock that starts now, so the first quiet
        looks are spread from start-up instead of all at once.
        """
        s.add(state.Cursor(name="posts", value=state.max_id(s, Post.id), at=now))
        s.add(state.Cursor(name="signins", value=state.max_id(s, state.SignIn.id), at=now))
        since = now - dt.timedelta(seconds=self.cfg.person_recent)
        q = (sa.select(Post.mood_id, sa.func.max(Post.created_at), sa.func.max(Post.id))
             .join(Participant, Participant.id == Post.sender_id)
             .where(Participant.kind == "person", Post.kind == "post", Post.created_at > since)
             .group_by(Post.mood_id))
        recent = s.execute(q).all()
        agent_ids = [p.id for p, _ in state.agent_rows(s)]
        listeners = state.listeners_for(s, {(a, m) for m, _, _ in recent for a in agent_ids})
        for mood_id, at, pid in recent:
            for a in agent_ids:
                l = listeners[(a, mood_id)]
                idle = self.settings.values(mood_id, a, now)["idle_after"]
                l.last_person_at, l.last_person_id, l.last_post_at = at, pid, at
                l.quiet_due_at = now + dt.timedelta(seconds=idle) if idle else None
                l.due_at = l.quiet_due_at
        log.info("first run: starting from post %s", state.max_id(s, Post.id),
                 extra={"action": "first_run"})

    def _scan_signins(self, s, now: dt.datetime) -> int:
        cur = state.claim_cursor(s, "signins")
        if cur is None:
            return 0
        rows = state.new_signins(s, cur.value, POST_BATCH)
        if not rows:
            return 0
        agent_ids = {p.id for p, _ in state.agent_rows(s)}
        window = dt.timedelta(seconds=self.cfg.arrival_window)
        fresh = [r for r in rows if r.at > now - window]
        listeners = state.listeners_for(s, {(a, r.mood_id) for r in fresh for a in agent_ids})
        for r in fresh:
            for a in agent_ids:
                if r.participant_id == a:
                    continue  # its own sign-in would only be skipped; don't let it displace one
                l = listeners[(a, r.mood_id)]
                # The oldest sign-in not yet dealt with waits first; the ones
                # after it are taken in turn (see _next_arrival).
                l.arrival_signin_id = l.arrival_signin_id or r.id
                l.due_at = now if l.due_at is None else min(l.due_at, now)
        cur.value, cur.at = rows[-1].id, now
        return len(rows)

    # -- decide -----------------------------------------------------------------------------

    def _evaluate(self, s, agents, agent_id: int, mood_id: int, now: dt.datetime,
                  report: TickReport) -> None:
        l = state.claim_listener(s, agent_id, mood_id)
        if l is None or l.due_at is None or l.due_at > now:
            return  # another poller took it, or it is no longer due
        state.lock_agent(s, agent_id)
        participant, agent = agents[agent_id]
        mood = state.mood_row(s, mood_id)
        resolved = self.settings.resolve(mood_id, agent_id, now)
        values = {k: r.value for k, r in resolved.items()}
        owed = state.owed_posts(s, agent_id, mood_id)
        kinds = []
        if owed:
            kinds.append("mention")
        if l.arrival_signin_id:
            kinds.append("arrival")
        if l.consider_from_id and l.consider_due_at and l.consider_due_at <= now:
            kinds.append("consider")
        if l.quiet_due_at and l.quiet_due_at <= now:
            kinds.append("quiet")
        hour_ago = now - law.HOUR
        base = dict(
            now=now, settings=values, archived=mood.archived,
            listening_until=resolved["listening"].until,
            busy_here=state.in_flight_here(s, agent_id, mood_id) is not None,
            running_for_agent=state.running_count(s, agent_id),
            wakes_last_hour=state.wake_times(s, agent_id, hour_ago),
            cooldown_until=l.cooldown_until, bot_chain_cap=self.cfg.bot_chain_cap)
        retry: list[Optional[dt.datetime]] = []
        for kind in kinds:
            facts = law.Facts(kind=kind, **base, **self._kind_facts(s, kind, l, participant, owed, now))
            decision = law.decide(facts)
            if decision.outcome == "wake":
                planned = self._wake(s, kind, l, participant, mood, values, owed, now,
                                     agent_ids=set(agents))
                state.record_decision(s, agent_id, mood_id, kind, "wake", "woke", None, now,
                                      planned.wake_id)
                report.wakes.append(planned)
                report.decisions.append((participant.handle, mood.slug, kind, "woke"))
                self._log_decision(participant.handle, mood.slug, kind, decision, True)
                l.due_at = None  # the turn's settling makes it due again
                return
            new = state.record_decision(s, agent_id, mood_id, kind, decision.outcome,
                                        decision.reason, decision.next_due, now)
            report.decisions.append((participant.handle, mood.slug, kind, decision.code))
            self._log_decision(participant.handle, mood.slug, kind, decision, new)
            retry.append(self._after(s, decision, kind, l, participant, mood, owed, now))
        if not owed and l.hold_reason:
            l.hold_reason, l.hold_since = None, None
        pending = [t for t in retry if t is not None]
        untried = state.next_due(l, False, now)
        if untried is not None and untried > now:
            pending.append(untried)
        l.due_at = min(pending) if pending else None

    def _kind_facts(self, s, kind: str, l: Listener, participant, owed: list[int],
                    now: dt.datetime) -> dict:
        recent = now - dt.timedelta(seconds=self.cfg.person_recent)
        if kind == "mention":
            senders = s.execute(sa.select(Participant.kind, Post.id).join(
                Post, Post.sender_id == Participant.id).where(Post.id.in_(owed))).all()
            if all(k == "agent" for k, _ in senders):
                newest = max(owed)
                lo = l.last_person_id if l.last_person_id and l.last_person_id < newest else 0
                if l.last_person_id and l.last_person_id > newest:
                    return {"bot_chain": 0}  # a person spoke since: the loop is broken
                chain = state.agent_posts_between(s, l.mood_id, lo, newest,
                                                  self.cfg.bot_chain_cap + 1)
                return {"bot_chain": chain - 1}
            return {}
        if kind == "arrival":
            signin = s.get(state.SignIn, l.arrival_signin_id)
            said = state.last_said_at(s, signin.participant_id, l.mood_id)
            greet_since = now - dt.timedelta(seconds=self.cfg.greet_window)
            return {"arrival_is_self": signin.participant_id == participant.id,
                    "arrival_spoke_recently": said is not None and said > recent,
                    "arrival_greeted_recently": state.greeted_since(
                        s, participant.id, l.mood_id, signin.participant_id, greet_since)}
        if kind == "consider":
            return {"considers_last_hour": state.wake_times(s, participant.id, now - law.HOUR,
                                                            l.mood_id, "consider")}
        return {"person_recent": l.last_person_at is not None and l.last_person_at > recent}

    def _after(self, s, decision: law.Decision, kind: str, l: Listener, participant, mood,
               owed: list[int], now: dt.datetime) -> Optional[dt.datetime]:
        """Apply a non-wake decision to the listener; returns when to look again."""
        if decision.outcome == "skip":
            if kind == "arrival":
                l.arrival_signin_id = self._next_arrival(s, l, now)
            elif kind == "consider":
                l.consider_from_id, l.consider_due_at = 0, None
            elif kind == "quiet":
                l.quiet_due_at = None  # until someone speaks again
            return None
        if decision.outcome == "hold":
            if l.hold_reason != decision.reason:
                l.hold_reason, l.hold_since = decision.reason, now
                self._hold_note(s, participant, mood, decision, len(owed), now)
            if decision.reason == "no-free-slot":
                return now  # a slot frees when any of its turns ends: look each cycle
            return decision.next_due or now + dt.timedelta(seconds=self.cfg.hold_renew)
        return decision.next_due or now + dt.timedelta(seconds=self.cfg.hold_renew)

    def _next_arrival(self, s, l: Listener, now: dt.datetime) -> int:
        """The sign-in after the one just dealt with, still fresh and not the agent's own."""
        since = now - dt.timedelta(seconds=self.cfg.arrival_window)
        return s.scalar(sa.select(sa.func.min(state.SignIn.id)).where(
            state.SignIn.mood_id == l.mood_id, state.SignIn.id > l.arrival_signin_id,
            state.SignIn.participant_id != l.agent_id, state.SignIn.at > since)) or 0

    HOLD_WORDS = {
        "busy": "it is in the middle of a turn here and will answer when that ends",
        "no-free-slot": "all its turn slots are in use; it will answer when one frees up",
        "hourly-cap": "it has reached its wakes-per-hour limit; it will answer when that allows",
        "listening-off": "its listening is off here; it will answer when listening is back on",
        "bot-loop": ("agents have been mentioning each other with no person in between; "
                     "it will answer once a person posts"),
    }

    def _hold_note(self, s, participant, mood, decision: law.Decision, count: int,
                   now: dt.datetime) -> None:
        words = self.HOLD_WORDS.get(decision.reason, decision.reason)
        when = f" (until {text.iso(decision.next_due)})" if decision.next_due else ""
        plural = "mention" if count == 1 else "mentions"
        self.system_post(s, mood.id, participant.id,
                         f"@{participant.handle} is holding {count} {plural}: {words}{when}.", now)

    def system_post(self, s, mood_id: int, sender_id: int, body: str, now: dt.datetime) -> None:
        s.add(Post(mood_id=mood_id, sender_id=sender_id, created_at=now, text=body,
                   kind="system", reply_to=None, tokens=self.store.counter.count(body)))

    def _log_decision(self, agent: str, mood: str, kind: str, d: law.Decision, new: bool) -> None:
        level = logging.INFO if new else logging.DEBUG
        log.log(level, "%s in %s: %s %s", agent, mood, kind, d.code,
                extra={"action": "decision", "agent": agent, "mood": mood, "kind": kind,
                       "outcome": d.outcome, "reason": d.reason, "code": d.code})

    # -- compose and record -------------------------------------------------------------------

    def _wake(self, s, kind: str, l: Listener, participant, mood, values: dict,
              owed: list[int], now: dt.datetime, force_tools: Optional[str] = None,
              agent_ids: Optional[set[int]] = None) -> Planned:
        if agent_ids is None:
            agent_ids = {p.id for p, _ in state.agent_rows(s)}
        woke: list[compose.WakePost] = []
        arrival = None
        about_id = None
        answers: list[int] = []
        tools = "look"
        if kind == "mention":
            woke = gather.posts_by_id(s, owed)
            answers = list(owed)
            trusts = s.execute(sa.select(Participant.kind, Participant.trust).join(
                Post, Post.sender_id == Participant.id).where(Post.id.in_(owed))).all()
            if trusts and all(k == "person" and t == "full" for k, t in trusts):
                tools = "full"
        tools = force_tools or tools
        if kind == "mention":
            since = state.last_spoke_id(s, participant.id, mood.id)
            hist, earlier = gather.history(s, mood.id, since, set(owed))
            new_after = None
        else:
            hist, earlier = gather.history(s, mood.id, 0, set())
            earlier = 0  # "the Mood lately": older posts are not owed to anyone
            new_after = l.looked_id or 0
            if kind == "consider":
                woke = [p for p in hist if p.id >= l.consider_from_id and not p.sender_is_agent
                        and p.kind == "post"]
                chosen = {p.id for p in woke}
                hist = [p for p in hist if p.id not in chosen]
            elif kind == "arrival":
                signin = s.get(state.SignIn, l.arrival_signin_id)
                who = s.get(Participant, signin.participant_id)
                about_id = who.id
                arrival = compose.Arrival(who.handle, signin.label or who.handle, who.trust)
        seen = max([p.id for p in woke] + [p.id for p in hist] + [0])
        extras = gather.extras(s, participant.id, mood.id, woke,
                               {p.id for p in woke} | {p.id for p in hist}, now)
        request = compose.WakeRequest(
            kind=kind, mood=mood.slug, mood_title=mood.title, agent=participant.handle, now=now,
            tools=tools, woke=woke, history=hist, earlier_count=earlier, new_after_id=new_after,
            arrival=arrival, also_asked=gather.also_asked(s, answers, participant.id, agent_ids),
            cut_off=gather.cut_off(s, participant.id, mood.id),
            settings_changed=extras.settings_changed, handed=extras.handed,
            refusals=extras.refusals, linked=extras.linked,
            discretion=values["discretion"], verbosity=values["verbosity"],
            dials=self.dials(now), catch_up_tokens=values["catch_up_tokens"])
        wake = compose.compose(request, config=self.config.wake, counter=self.store.counter,
                               summarizer=self.summarizer)
        row = state.add_wake(s, agent_id=participant.id, mood_id=mood.id, kind=kind, tools=tools,
                             text=wake.text, prompt_tokens=wake.prompt_tokens,
                             dial_source=wake.dial_source, now=now, answers=answers,
                             about_id=about_id, seen_id=seen)
        gather.taken(s, row.id, extras)  # handed context and refusals go out once
        l.looked_id = max(l.looked_id or 0, seen)
        l.hold_reason, l.hold_since = None, None
        if kind in ("mention", "consider"):
            if l.consider_from_id and l.consider_from_id <= seen:
                l.consider_from_id, l.consider_due_at = 0, None
        if kind == "arrival":
            l.arrival_signin_id = self._next_arrival(s, l, now)
        if kind == "quiet":
            l.quiet_due_at = None  # set again when the look settles
        return Planned(row.id, participant.handle, mood.slug, kind, tools, wake.text, answers)

    # -- deliver --------------------------------------------------------------------------------

    def _launch(self, wake_id: int, now: dt.datetime) -> None:
        env = dict(os.environ)
        env["MOOD_POLLER_DB"] = self.config.db_url
        if self.config.source:
            env["MOOD_POLLER_CONFIG"] = self.config.source
        offset = (now - clock.wall()).total_seconds()
        env[clock.CLOCK_OFFSET_ENV] = f"{offset:.6f}"
        proc = subprocess.Popen([self.python, "-m", "poller.runner", str(wake_id)], env=env,
                                stdin=subprocess.DEVNULL, start_new_session=self.detach)
        self.children[wake_id] = proc
        log.info("turn %s started (runner pid %s)", wake_id, proc.pid,
                 extra={"action": "turn_started", "wake_id": wake_id, "pid": proc.pid})

    def reap(self) -> None:
        for wake_id, proc in list(self.children.items()):
            if proc.poll() is not None:
                del self.children[wake_id]

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Wait for the runners this poller started; False if some still run."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for proc in list(self.children.values()):
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                proc.wait(left)
            except subprocess.TimeoutExpired:
                return False
        self.reap()
        return True

    def stop_children(self) -> None:
        """Ask every runner to end its turn (it records the turn as cut off)."""
        for proc in self.children.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)

    # -- restart safety ---------------------------------------------------------------------------

    def recover(self, now: dt.datetime) -> int:
        """Close turns whose runner is gone; start wakes a dead poller never started."""
        closed = 0
        relaunch = []
        with self.store.writing() as s:
            # Locked and skipped when busy: a runner settling its turn right now
            # holds its row, and another poller recovering holds the rest.
            rows = s.scalars(state.skip_locked(s, sa.select(Wake).where(
                Wake.status.in_(state.IN_FLIGHT), Wake.host == state.HOST))).all()
            for w in rows:
                if w.id in self.children:
                    continue
                if w.status == "running" and not state.pid_alive(w.runner_pid, "poller.runner"):
                    turns.close_turn(s, self.store.counter, w, "cut_off", "its turn was cut off: "
                                     "the poller or its runner stopped during the turn", now)
                    closed += 1
                elif w.status == "pending" and w.runner_pid is None and \
                        w.created_at < now - UNSTARTED_GRACE:
                    relaunch.append(w.id)
            closed += self._close_stale_elsewhere(s, now)
            # A wake recorded by a poller elsewhere (or under an old host name)
            # that died before starting it: start it here; the runner's claim
            # makes sure only one poller ever does.
            relaunch += s.scalars(sa.select(Wake.id).where(
                Wake.status == "pending", Wake.host != state.HOST, Wake.runner_pid.is_(None),
                Wake.created_at < now - UNSTARTED_GRACE)).all()
        for wake_id in relaunch:
            self._launch(wake_id, now)
        return closed

    def _close_stale_elsewhere(self, s, now: dt.datetime) -> int:
        """Close turns another machine left running with no heartbeat (that machine died)."""
        stale = now - dt.timedelta(seconds=self.cfg.turn_stale)
        rows = s.scalars(state.skip_locked(s, sa.select(Wake).where(
            Wake.status == "running", Wake.host != state.HOST,
            sa.func.coalesce(Wake.heartbeat_at, Wake.started_at) < stale))).all()
        for w in rows:
            turns.close_turn(s, self.store.counter, w, "cut_off",
                             f"its turn was cut off: the machine running it ({w.host}) "
                             f"stopped answering", now)
        return len(rows)

    # -- run ----------------------------------------------------------------------------------------

    def run(self, interval: float, stop: threading.Event,
            clock: Callable[[], dt.datetime] = clock.SYSTEM) -> None:
        waiting_logged = False
        try:
            while not stop.is_set():
                try:
                    report = self.tick(clock())
                except errors.PollerError:
                    raise
                except sa.exc.SQLAlchemyError as exc:
                    # A lost race with another poller (a deadlock, a duplicate
                    # first-run cursor) or a blip in the database: the cycle's
                    # transaction rolled back, so the next cycle simply retries.
                    log.warning("cycle failed, retrying: %s", str(exc).splitlines()[0],
                                extra={"action": "cycle_failed"})
                    stop.wait(interval)
                    continue
                if not report.started:
                    if not waiting_logged:
                        log.info("another poller holds the lease (%s); waiting", report.holder,
                                 extra={"action": "lease_wait"})
                        waiting_logged = True
                else:
                    waiting_logged = False
                self.reap()
                stop.wait(interval)
        finally:
            self.shutdown(clock())

    def shutdown(self, now: dt.datetime) -> None:
        """Stop claiming, give running turns a grace period, then end them."""
        if self.children and not self.wait(self.cfg.shutdown_grace):
            self.stop_children()
            self.wait(10)
        self.release()

    def release(self) -> None:
        """Give up the SQLite lease so the next tick need not wait for it to expire."""
        if self.store.dialect == "sqlite":
            with contextlib.suppress(Exception), self.store.writing() as s:
                state.drop_lease(s, LEASE_NAME, self.holder)
