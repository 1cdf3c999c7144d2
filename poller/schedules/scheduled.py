"""Scheduled wakes in the cycle: alarms, missed check-ins and the contact stage.

The listeners' loop (:mod:`poller.cycle.evaluate`) wakes agents for what was said;
this step wakes them for what a clock says.  Each cycle, after the scan and
before the listeners (and never during an emergency stop), it reads the alarms
and agreements that are due, and for each:

1. weighs it with :func:`poller.law.decide` (a turn already in flight here, no
   free slot, the hourly cap, a spent daily budget or a stop defer it; no
   cooldown, no floor, no listening gate: a wake asked for at a time is kept), and on a wake gathers it like
   any other (:func:`poller.cycle.drafts.gather`), in one short write transaction;
2. composes it with no transaction open;
3. records it in a second short write transaction, only if the alarm's or
   agreement's ``version`` is still what was read, together with what it
   covers (the firings, the missed deadlines and their streak, the contact
   stage offered).  A second poller that read the same row finds it moved.

A wake and the schedule it answers commit together, so a restart never
sends a firing twice nor forgets one; a poller that was down across several
firings finds them all due at once and sends one late wake for them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from dataclasses import dataclass, field
from typing import Callable, Optional

from poller.schedules import agreements, alarms, checkins, timing
from poller.wake import compose
from poller.cycle import drafts, evaluate
from poller import law
from poller.cycle.context import Context, Planned, Step, TickReport, log_decision
from poller.kinds import ContactState, Outcome, Tools, WakeKind
from poller.store import cycle, facts, schedules
from poller.values import MoodInfo

log = logging.getLogger("poller.scheduled")


@dataclass
class Job:
    """One scheduled wake to weigh, or (kind None) a row to update with no wake."""

    kind: Optional[str]
    table: str  # alarm | agreement
    row_id: int
    version: int
    agent_id: int
    mood_id: int
    info: compose.Scheduled = field(default_factory=compose.Scheduled)
    firing: Optional[alarms.Firing] = None
    missed: list[dt.datetime] = field(default_factory=list)
    late: bool = False
    contact_state: str = ""  # for an update with no wake: what the contact stage became


def late_words(due: dt.datetime, now: dt.datetime) -> str:
    if now - due < dt.timedelta(minutes=1):
        return ""
    return compose.duration((now - due).total_seconds())


def due_jobs(s, now: dt.datetime) -> list[Job]:
    """What is due now: alarms first, then agreements (read only)."""
    jobs = [alarm_job(a, now) for a in schedules.due_alarms(s, now)]
    due = schedules.due_agreements(s, now)
    names = schedules.handles(s, {g.person_id for g in due})
    return jobs + [agreement_job(s, g, names.get(g.person_id, "?"), now) for g in due]


def alarm_job(a, now: dt.datetime) -> Job:
    f = alarms.firing(a, now)
    info = compose.Scheduled(due=timing.shown(f.due, a.tz), count=f.count,
                             late_by=late_words(f.due, now), noticed_late=f.late, note=a.note,
                             set_by=a.set_by, next_due=timing.shown(f.next_at, a.tz))
    return Job(WakeKind.ALARM, "alarm", a.id, a.version, a.agent_id, a.mood_id, info, firing=f,
               late=f.late)


def agreement_job(s, g, person: str, now: dt.datetime) -> Job:
    terms = agreements.terms(g)
    base = dict(table="agreement", row_id=g.id, version=g.version, agent_id=g.agent_id,
                mood_id=g.mood_id)
    missed = checkins.missed(terms, now)
    if missed:
        late = checkins.late(missed[0], now, g.lateness_cutoff_minutes)
        info = compose.Scheduled(
            due=timing.shown(missed[0], g.tz), count=len(missed), person=person,
            newest=timing.shown(missed[-1], g.tz), late_by=late_words(missed[0], now),
            noticed_late=late, next_due=timing.shown(terms.when.next(missed[-1]), g.tz))
        return Job(WakeKind.CHECKIN_MISSED, info=info, missed=missed, late=late, **base)
    st = schedules.open_streak(s, g.id)
    if st is None or st.grace_until is None or st.grace_until > now or st.contact_state:
        return Job(None, **base)  # only the next look to plan
    if not (g.armed and g.consent_at and g.contact_email):
        return Job(None, contact_state=ContactState.OFF, **base)
    if checkins.late(st.grace_until, now, g.lateness_cutoff_minutes):
        return Job(None, contact_state=ContactState.LATE, **base)
    notice_at = st.grace_until - dt.timedelta(minutes=g.grace_minutes)
    info = compose.Scheduled(due=timing.shown(st.first_due, g.tz), person=person,
                             newest=timing.shown(st.last_due, g.tz),
                             notice_at=timing.shown(notice_at, g.tz), contact=g.contact_email,
                             body_limit=checkins.CONTACT_BODY_LIMIT)
    return Job(WakeKind.CHECKIN_CONTACT, info=info, **base)


# -- the step --------------------------------------------------------------------------------


def run(ctx: Context, step: Step, now: dt.datetime, report: TickReport,
        start: Optional[Callable[[int, dt.datetime], None]], transient: tuple) -> None:
    """Weigh, compose and record every scheduled wake due now; start their turns.

    *step* is the cycle's transactions and the Moods it serves; *transient* are the
    database errors that retry the whole cycle."""
    with step.reading() as s:
        jobs = due_jobs(s, now)
    # a poller serving some Moods (run --moods) wakes there only
    jobs = [j for j in jobs if step.served is None or j.mood_id in step.served]
    woken: set[tuple[int, int]] = set()  # one wake per (agent, Mood) a cycle; the rest wait
    for job in jobs:
        if job.kind is not None and (job.agent_id, job.mood_id) in woken:
            continue
        try:
            planned = one(ctx, step, job, now, report)
        except transient:
            raise
        except Exception as exc:  # this row's data broke it: set it aside, go on
            set_aside(step, job, exc, now, report)
            continue
        if planned is not None:
            woken.add((job.agent_id, job.mood_id))
            report.wakes.append(planned)
            if start is not None:
                start(planned.wake_id, now)


def set_aside(step: Step, job: Job, exc: Exception, now: dt.datetime, report: TickReport) -> None:
    """Quarantine a schedule whose wake could not be made; it is tried again each cycle,
    logged in full the first time only."""
    error = f"{type(exc).__name__}: {exc}"
    report.quarantined += 1
    with step.writing() as s:
        first = cycle.quarantine(s, "schedule", f"{job.table}:{job.row_id}", error, now,
                                 agent_id=job.agent_id, mood_id=job.mood_id)
    (log.exception if first else log.debug)(
        "%s %s set aside: %s", job.table, job.row_id, error,
        extra={"action": "quarantined", "kind": "schedule"})


def one(ctx: Context, step: Step, job: Job, now: dt.datetime,
        report: TickReport) -> Optional[Planned]:
    if job.agent_id not in ctx.agents:
        return None  # the agent was removed: its schedules wait (and show in the listings)
    if job.kind is None:
        with step.writing() as s:
            settle_quietly(s, job, now)
        return None
    with step.writing() as s:
        l = listener(s, job)
        decision = weigh(ctx, s, job, l, now)
        if decision.outcome != Outcome.WAKE:
            new = cycle.record_decision(s, job.agent_id, job.mood_id, job.kind, decision.outcome,
                                        decision.reason, decision.next_due, now)
            handle, slug = ctx.agents[job.agent_id].handle, schedules.slugs(s, {job.mood_id})[job.mood_id]
            report.decisions.append((handle, slug, job.kind, decision.code))
            log_decision(handle, slug, job.kind, decision, new)
            return None
        d = gather(ctx, s, job, l, now)
    wake = drafts.compose_text(ctx, d)
    with step.writing() as s:
        return drafts.record(ctx, s, d, wake, now, report)


def listener(s, job: Job):
    """The pair's listener row (made if missing), locked: where a stop and what the
    agent has seen are kept."""
    pair = (job.agent_id, job.mood_id)
    return facts.listeners(s, {pair})[pair]


def weigh(ctx: Context, s, job: Job, l, now: dt.datetime) -> law.Decision:
    values = ctx.settings.values(job.mood_id, job.agent_id, now)
    load = schedules.load(s, job.agent_id, job.mood_id, now)
    return law.decide(law.Facts(kind=job.kind, now=now, settings=values,
                                busy_here=load.busy_here, running_for_agent=load.running,
                                wakes_last_hour=load.woke, stopped=bool(l.stopped_at),
                                **evaluate.budget_facts(s, l, values, now)))


def gather(ctx: Context, s, job: Job, l, now: dt.datetime) -> drafts.Draft:
    """The wake's draft, recorded by the path every wake takes (:func:`drafts.record`):
    only if the alarm's or agreement's version is still the one read and the law still
    says wake, with what it covers written beside it."""
    values = ctx.settings.values(job.mood_id, job.agent_id, now)
    mood = MoodInfo.from_row(schedules.mood_row(s, job.mood_id))
    d = drafts.gather(ctx, s, job.kind, l, ctx.agents[job.agent_id], mood, values, [], now,
                      force_tools=Tools.LOOK)
    d.request = dataclasses.replace(d.request, scheduled=job.info)
    claimed = []

    def still_due(s, l) -> bool:
        row = (schedules.claim_alarm if job.table == "alarm" else schedules.claim_agreement)(
            s, job.row_id, job.version)
        claimed.append(row)
        return row is not None and weigh(ctx, s, job, l, now).outcome == Outcome.WAKE

    def write_covered(s, wake_id: int, _answers, now: dt.datetime) -> None:
        covered(s, job, claimed[-1], wake_id, now)

    d.guard, d.on_record = still_due, (write_covered,)
    return d


def covered(s, job: Job, row, wake_id: int, now: dt.datetime) -> None:
    """What the recorded wake answers, written with it (and the row's version moved on)."""
    if job.table == "alarm":
        schedules.alarm_fired(s, row, job.firing.next_at, job.firing.count, wake_id)
        return
    if job.kind == WakeKind.CHECKIN_CONTACT:
        schedules.contact_offered(s, row.id, wake_id)
    else:
        schedules.notice_recorded(s, row, job.missed[0], job.missed[-1], wake_id, job.late, now)
    plan_next(s, row, now)


def plan_next(s, row, now: dt.datetime) -> None:
    """The agreement's next look: its next deadline, or its open streak's grace end; and
    its version moved on."""
    st = schedules.open_streak(s, row.id)
    schedules.plan_agreement(s, row, checkins.next_check(
        agreements.terms(row), st.grace_until if st else None,
        st.contact_state if st else ContactState.NONE), now)


CONTACT_NOTES = {ContactState.OFF: "the contact stage was off when grace ended",
                 ContactState.LATE: "grace ended past the lateness cutoff"}


def settle_quietly(s, job: Job, now: dt.datetime) -> None:
    """A due row that needs no wake: the contact stage ended unopened, or only the next
    look to plan."""
    row = schedules.claim_agreement(s, job.row_id, job.version)
    if row is None:
        return
    if job.contact_state:
        schedules.contact_ended(s, row.id, job.contact_state, CONTACT_NOTES[job.contact_state])
        log.info("agreement %s: contact stage %s", row.id, job.contact_state,
                 extra={"action": "contact_stage", "state": job.contact_state})
    plan_next(s, row, now)
