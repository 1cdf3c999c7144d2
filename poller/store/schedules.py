"""Alarms, check-in agreements, their streaks and notices, and the mail outbox: the rows.

Every verb takes the caller's session, so what a cycle decides (a wake, the
firing it covers, the streak it opens, the mail it writes) commits together.
Claims are conditional on a row's ``version``: a second poller that read the
same row finds it moved and records nothing.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Optional

import sqlalchemy as sa
from sqlalchemy.orm import Session

from poller import errors
from poller.kinds import IN_FLIGHT, LIVE_AGREEMENTS, AgreementStatus, ContactState
from poller.models import (Agent, Alarm, CheckinAgreement, CheckinNotice, CheckinStreak, Listener,
                           MailOut, Mood, Participant, Post, Wake, WakeAnswer)
from poller.store import cycle


# -- who and where ----------------------------------------------------------------------------


def mood_id(s: Session, slug: str) -> int:
    found = s.scalar(sa.select(Mood.id).where(Mood.slug == slug.lower()))
    if found is None:
        raise errors.NotFound(f"no Mood {slug!r}")
    return found


def mood_row(s: Session, mood: int) -> Mood:
    return s.get(Mood, mood)


def participant_id(s: Session, handle: str, kind: str) -> int:
    q = sa.select(Participant.id).where(Participant.handle_key == handle.lstrip("@").lower(),
                                        Participant.kind == kind)
    if kind == "agent":
        q = q.join(Agent, Agent.participant_id == Participant.id).where(Agent.retired_at.is_(None))
    else:
        q = q.where(Participant.retired_at.is_(None))
    found = s.scalar(q)
    if found is None:
        raise errors.NotFound(f"no {kind} {handle!r}")
    return found


def handles(s: Session, ids: set[int]) -> dict[int, str]:
    return dict(s.execute(sa.select(Participant.id, Participant.handle)
                          .where(Participant.id.in_(ids))).all()) if ids else {}


def slugs(s: Session, ids: set[int]) -> dict[int, str]:
    return dict(s.execute(sa.select(Mood.id, Mood.slug).where(Mood.id.in_(ids))).all()) if ids else {}


@dataclass(frozen=True)
class PairLoad:
    """What the law needs to know of an agent's turns to weigh a scheduled wake."""

    busy_here: bool
    running: int
    woke: tuple[dt.datetime, ...]


def load(s: Session, agent_id: int, mood_id_: int, now: dt.datetime) -> PairLoad:
    flying = s.execute(sa.select(Wake.mood_id).where(Wake.agent_id == agent_id,
                                                     Wake.status.in_(IN_FLIGHT))).scalars().all()
    woke = s.execute(sa.select(Wake.created_at).where(
        Wake.agent_id == agent_id, Wake.created_at > now - dt.timedelta(hours=1))).scalars().all()
    return PairLoad(mood_id_ in flying, len(flying), tuple(woke))


# -- alarms -----------------------------------------------------------------------------------


def add_alarm(s: Session, **values) -> Alarm:
    row = Alarm(fired=0, version=0, **values)
    s.add(row)
    s.flush()
    return row


def alarms(s: Session, agent_id: Optional[int] = None, mood: Optional[int] = None,
           include_removed: bool = False) -> list[Alarm]:
    q = sa.select(Alarm).order_by(Alarm.id)
    if agent_id is not None:
        q = q.where(Alarm.agent_id == agent_id)
    if mood is not None:
        q = q.where(Alarm.mood_id == mood)
    if not include_removed:
        q = q.where(Alarm.removed_at.is_(None))
    return list(s.scalars(q))


def remove_alarm(s: Session, alarm_id: int, now: dt.datetime) -> Alarm:
    row = s.scalar(cycle.for_update(s, sa.select(Alarm).where(Alarm.id == alarm_id)))
    if row is None or row.removed_at is not None:
        raise errors.NotFound(f"no alarm {alarm_id}")
    row.removed_at, row.next_at, row.version = now, None, row.version + 1
    return row


_ACTIVE_AGENTS = sa.select(Agent.participant_id).where(Agent.retired_at.is_(None))


def _idle_pair(table):
    """No turn of the agent in flight in the Mood and no stop there: a busy or stopped
    pair's schedules wait unread (its turn's end, or the stop's lift, is the next chance),
    so a long turn costs no cycle anything."""
    busy = sa.exists().where(Wake.agent_id == table.agent_id, Wake.mood_id == table.mood_id,
                             Wake.status.in_(IN_FLIGHT))
    stopped = sa.exists().where(Listener.agent_id == table.agent_id,
                                Listener.mood_id == table.mood_id, Listener.stopped_at.is_not(None))
    return ~busy & ~stopped


def due_alarms(s: Session, now: dt.datetime, limit: int = 500) -> list[Alarm]:
    """Alarms due by *now* of agents still there (a removed agent's wait, unread) and not
    at work in that Mood."""
    return list(s.scalars(_DUE_ALARMS, {"now": now, "limit": limit}))


_DUE_ALARMS = (sa.select(Alarm).where(
    Alarm.next_at <= sa.bindparam("now", type_=Alarm.next_at.type), Alarm.removed_at.is_(None),
    Alarm.agent_id.in_(_ACTIVE_AGENTS), _idle_pair(Alarm))
    .order_by(Alarm.next_at).limit(sa.bindparam("limit")))


def claim_alarm(s: Session, alarm_id: int, version: int) -> Optional[Alarm]:
    """The alarm locked, if it is still as it was read; None if another poller moved it."""
    row = s.scalar(cycle.skip_locked(s, sa.select(Alarm).where(Alarm.id == alarm_id)))
    return row if row is not None and row.version == version else None


# -- check-in agreements ----------------------------------------------------------------------


def live_agreement(s: Session, person_id: int, lock: bool = False) -> Optional[CheckinAgreement]:
    q = sa.select(CheckinAgreement).where(CheckinAgreement.person_id == person_id,
                                          CheckinAgreement.status.in_(LIVE_AGREEMENTS))
    return s.scalar(cycle.for_update(s, q) if lock else q)


def agreements_here(s: Session, agent_id: int, mood: int) -> list[CheckinAgreement]:
    """The live agreements this agent watches in the Mood, locked (a turn is settling)."""
    return list(s.scalars(cycle.for_update(s, sa.select(CheckinAgreement).where(
        CheckinAgreement.agent_id == agent_id, CheckinAgreement.mood_id == mood,
        CheckinAgreement.status.in_(LIVE_AGREEMENTS)).order_by(CheckinAgreement.id))))


def agreement(s: Session, agreement_id: int) -> Optional[CheckinAgreement]:
    """One agreement, locked: what a settling turn changes, no cycle changes meanwhile."""
    return s.scalar(cycle.for_update(s, sa.select(CheckinAgreement).where(
        CheckinAgreement.id == agreement_id)))


def add_agreement(s: Session, **values) -> CheckinAgreement:
    row = CheckinAgreement(version=0, armed=False, **values)
    s.add(row)
    s.flush()
    return row


def due_agreements(s: Session, now: dt.datetime, limit: int = 500) -> list[CheckinAgreement]:
    return list(s.scalars(_DUE_AGREEMENTS, {"now": now, "limit": limit}))


_DUE_AGREEMENTS = (sa.select(CheckinAgreement).where(
    CheckinAgreement.next_check_at
    <= sa.bindparam("now", type_=CheckinAgreement.next_check_at.type),
    CheckinAgreement.status == AgreementStatus.ACTIVE,
    CheckinAgreement.agent_id.in_(_ACTIVE_AGENTS), _idle_pair(CheckinAgreement))
    .order_by(CheckinAgreement.next_check_at).limit(sa.bindparam("limit")))


def claim_agreement(s: Session, agreement_id: int, version: int) -> Optional[CheckinAgreement]:
    row = s.scalar(cycle.skip_locked(s, sa.select(CheckinAgreement)
                                     .where(CheckinAgreement.id == agreement_id)))
    return row if row is not None and row.version == version else None


def by_consent(s: Session, digest: str) -> Optional[CheckinAgreement]:
    return s.scalar(cycle.for_update(s, sa.select(CheckinAgreement).where(
        CheckinAgreement.consent_digest == digest,
        CheckinAgreement.status.in_(LIVE_AGREEMENTS))))


# -- streaks and notices ----------------------------------------------------------------------


def open_streak(s: Session, agreement_id: int) -> Optional[CheckinStreak]:
    return s.scalar(sa.select(CheckinStreak).where(CheckinStreak.agreement_id == agreement_id,
                                                   CheckinStreak.closed_at.is_(None)))


def latest_streak(s: Session, agreement_id: int) -> Optional[CheckinStreak]:
    return s.scalar(sa.select(CheckinStreak).where(CheckinStreak.agreement_id == agreement_id)
                    .order_by(CheckinStreak.id.desc()).limit(1))


def add_streak(s: Session, **values) -> CheckinStreak:
    row = CheckinStreak(closed_by="", contact_state="", contact_note="", **values)
    s.add(row)
    s.flush()
    return row


def add_notice(s: Session, **values) -> None:
    s.add(CheckinNotice(**values))


def notice(s: Session, wake_id: int) -> Optional[CheckinNotice]:
    return s.get(CheckinNotice, wake_id)


def streak(s: Session, streak_id: int) -> Optional[CheckinStreak]:
    return s.get(CheckinStreak, streak_id)


def streak_of_contact_wake(s: Session, wake_id: int) -> Optional[CheckinStreak]:
    return s.scalar(sa.select(CheckinStreak).where(CheckinStreak.contact_wake_id == wake_id))


# -- what a wake showed: the posts a checkin block may quote -------------------------------


def posts_shown(s: Session, mood: int, person_id: int, after_id: int,
                upto_id: int) -> list[tuple[int, str, dt.datetime]]:
    """The person's posts in the Mood with ids in (after_id, upto_id]: (id, text, time)."""
    return [tuple(r) for r in s.execute(sa.select(Post.id, Post.text, Post.created_at).where(
        Post.mood_id == mood, Post.sender_id == person_id, Post.kind == "post",
        Post.id > after_id, Post.id <= upto_id).order_by(Post.id))]


def posts_answered(s: Session, wake_id: int) -> list[tuple[int, int, str, dt.datetime]]:
    """The people's posts the wake answers (those that called it): (id, sender, text, time)."""
    return [tuple(r) for r in s.execute(
        sa.select(Post.id, Post.sender_id, Post.text, Post.created_at)
        .join(WakeAnswer, WakeAnswer.post_id == Post.id)
        .where(WakeAnswer.wake_id == wake_id, Post.kind == "post").order_by(Post.id))]


def previous_seen(s: Session, agent_id: int, mood: int, before_wake: int) -> int:
    """The newest post the agent's wake before *before_wake* here showed (0: none)."""
    return s.scalar(sa.select(Wake.seen_id).where(Wake.agent_id == agent_id, Wake.mood_id == mood,
                                                  Wake.id < before_wake)
                    .order_by(Wake.id.desc()).limit(1)) or 0


# -- an agreement's life ------------------------------------------------------------------------


def close_open_streak(s: Session, agreement_id: int, why: str, now: dt.datetime) -> bool:
    """End the agreement's open streak (a check-in, a pause, a cancel...); False if none."""
    st = open_streak(s, agreement_id)
    if st is None:
        return False
    st.closed_at, st.closed_by = now, why
    return True


def replaced(s: Session, g: CheckinAgreement) -> None:
    """A newer agreement of the person's takes this one's place."""
    g.status, g.armed, g.next_check_at = AgreementStatus.REPLACED, False, None
    g.consent_digest, g.version = None, g.version + 1


def consent_asked(s: Session, g: CheckinAgreement, code_digest: str) -> None:
    """An invitation went out: only its code's hash is kept, until the contact gives it."""
    g.consent_digest, g.consent_at = code_digest, None


def consent_given(s: Session, g: CheckinAgreement, now: dt.datetime) -> None:
    g.consent_digest, g.consent_at = None, now


def agreement_state(s: Session, g: CheckinAgreement, status: Optional[str] = None,
                    armed: Optional[bool] = None,
                    watched_from: Optional[dt.datetime] = None,
                    forget_consent: bool = False) -> None:
    """A person's control: its status, whether the contact stage is armed, deadlines
    watched again only from *watched_from* (a resume), consent forgotten (a cancel)."""
    if status is not None:
        g.status = status
    if armed is not None:
        g.armed = armed
    if watched_from is not None:
        g.processed_until = max(g.processed_until, watched_from)
    if forget_consent:
        g.consent_digest = None


def checked_in(s: Session, g: CheckinAgreement, answered_until: dt.datetime,
               completes: bool) -> None:
    """A check-in answered the deadlines up to *answered_until* (and the last of a once
    agreement: it is complete)."""
    g.answered_until = answered_until
    if completes:
        g.status, g.armed = AgreementStatus.COMPLETED, False


def notice_confirmed(s: Session, notice: CheckinNotice, now: dt.datetime) -> None:
    notice.confirmed_at = now


def grace_planned(s: Session, streak: CheckinStreak, until: dt.datetime, wake_id: int) -> None:
    """The streak's grace: the contact stage opens at *until* unless the person checks in."""
    streak.grace_until, streak.grace_wake_id = until, wake_id


def contact_settled(s: Session, streak: CheckinStreak, state: str, note: str,
                    reopen: bool = False) -> None:
    """How the contact stage's one message went: declined, refused, sent to the outbox,
    or (*reopen*) refused before its attempt was used, so the stage is offered again."""
    streak.contact_state, streak.contact_note = state, note
    if reopen:
        streak.contact_wake_id = None


# -- what a scheduled wake covers, written with it ----------------------------------------------


def alarm_fired(s: Session, row: Alarm, next_at: Optional[dt.datetime], count: int,
                wake_id: int) -> None:
    """An alarm's wake covers *count* firings; it is next due at *next_at* (None: never)."""
    row.next_at, row.fired, row.last_wake_id = next_at, row.fired + count, wake_id
    row.version += 1


def contact_offered(s: Session, agreement_id: int, wake_id: int) -> None:
    st = open_streak(s, agreement_id)
    st.contact_state, st.contact_wake_id = ContactState.OFFERED, wake_id


def contact_ended(s: Session, agreement_id: int, state: str, note: str) -> None:
    """The open streak's contact stage ended unopened, and why."""
    st = open_streak(s, agreement_id)
    st.contact_state, st.contact_note = state, note


def notice_recorded(s: Session, row: CheckinAgreement, oldest: dt.datetime,
                    newest: dt.datetime, wake_id: int, late: bool, now: dt.datetime) -> None:
    """A missed-check-in wake: its notice, in the open streak (opened if none)."""
    st = open_streak(s, row.id)
    if st is None:
        st = add_streak(s, agreement_id=row.id, first_due=oldest, last_due=newest, opened_at=now)
    st.last_due = newest
    add_notice(s, wake_id=wake_id, streak_id=st.id, oldest_due=oldest, newest_due=newest,
               late=late)
    row.processed_until = newest


def plan_agreement(s: Session, row: CheckinAgreement, next_check_at: Optional[dt.datetime],
                   now: dt.datetime) -> None:
    """The agreement's next look, and its version moved on (a second poller that read it
    finds it moved)."""
    row.next_check_at, row.updated_at = next_check_at, now
    row.version += 1


# -- the mail outbox ----------------------------------------------------------------------------


def add_mail(s: Session, **values) -> MailOut:
    row = MailOut(state="pending", claimed_by="", error="", **values)
    s.add(row)
    s.flush()
    return row


def mail_waiting(s: Session, limit: int = 50) -> list[int]:
    return list(s.scalars(sa.select(MailOut.id).where(MailOut.state == "pending")
                          .order_by(MailOut.id).limit(limit)))


def claim_mail(s: Session, mail_id: int, holder: str, now: dt.datetime) -> Optional[MailOut]:
    """pending -> sending, or None if another poller has it."""
    done = s.execute(sa.update(MailOut).where(MailOut.id == mail_id, MailOut.state == "pending")
                     .values(state="sending", claimed_at=now, claimed_by=holder)).rowcount
    return s.get(MailOut, mail_id) if done == 1 else None


def withdraw_mail(s: Session, mail_id: int, why: str) -> None:
    """A claimed message no longer wanted: never sent."""
    m = s.get(MailOut, mail_id)
    m.state, m.error = "withdrawn", why


def mail_attempted(s: Session, mail_id: int, state: str, error: str, now: dt.datetime,
                   sent_body: Optional[str] = None) -> None:
    """How handing a message to the server went: sent (its body replaced by *sent_body*
    when given: an invitation's code is not kept once sent), failed, or pending again
    (the server could not be reached: the claim is released)."""
    m = s.get(MailOut, mail_id)
    m.state, m.error = state, error
    m.sent_at = now if state == "sent" else None
    if state == "sent" and sent_body is not None:
        m.body = sent_body
    if state == "pending":
        m.claimed_at, m.claimed_by = None, ""


def mark_mail_handing(s: Session, mail_id: int) -> None:
    """sending -> handing: the server answered and the message is about to go over."""
    s.execute(sa.update(MailOut).where(MailOut.id == mail_id, MailOut.state == "sending")
              .values(state="handing"))


def release_mail_claims(s: Session, before: dt.datetime) -> None:
    """Claims their pollers left.  One that never reached the server (its poller is
    gone, or the claim is older than any attempt to connect lasts) is pending again;
    one left mid-handover is ``uncertain``, never resent: the server may have it."""
    left = list(s.scalars(cycle.skip_locked(s, sa.select(MailOut).where(
        MailOut.state.in_(("sending", "handing"))))))
    for m in left:
        if not (m.claimed_at < before or cycle.holder_dead(m.claimed_by)):
            continue
        if m.state == "sending":
            m.state, m.claimed_at, m.claimed_by = "pending", None, ""
            m.error = "its poller stopped before it reached the mail server"
        else:
            m.state, m.error = "uncertain", "claimed and never marked: it may have been sent"


def mail(s: Session, mail_id: int) -> Optional[MailOut]:
    return s.get(MailOut, mail_id)


def mail_given_up(s: Session, limit: int = 20) -> list[MailOut]:
    """The newest mail that will not be sent (again): failed, or uncertain whether it was."""
    return list(s.scalars(sa.select(MailOut).where(MailOut.state.in_(("failed", "uncertain")))
                          .order_by(MailOut.id.desc()).limit(limit)))


def upcoming(s: Session, limit: int = 10) -> list[tuple[str, int, int, dt.datetime, str]]:
    """The next alarms and agreement looks, soonest first: (what, agent, Mood, when, zone)."""
    a = s.execute(sa.select(Alarm.agent_id, Alarm.mood_id, Alarm.next_at, Alarm.tz).where(
        Alarm.next_at.is_not(None), Alarm.removed_at.is_(None))
        .order_by(Alarm.next_at).limit(limit)).all()
    g = s.execute(sa.select(CheckinAgreement.agent_id, CheckinAgreement.mood_id,
                            CheckinAgreement.next_check_at, CheckinAgreement.tz).where(
        CheckinAgreement.next_check_at.is_not(None),
        CheckinAgreement.status == AgreementStatus.ACTIVE)
        .order_by(CheckinAgreement.next_check_at).limit(limit)).all()
    both = [("alarm", *r) for r in a] + [("checkin", *r) for r in g]
    return sorted(both, key=lambda r: r[3])[:limit]
