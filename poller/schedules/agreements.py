"""Check-in agreements: setting one up, the person's controls, and what replies do to one.

A person promises to check in by a time; their agent in a Mood watches the
promise (the rules are :mod:`poller.schedules.checkins`, the wakes
:mod:`poller.schedules.scheduled`).  This module is the verbs: ``setup`` (which replaces
the person's agreement and sends the contact one invitation with a
single-use code), ``status``, ``pause``/``resume``/``cancel``, ``arm``/
``disarm`` (the contact stage is off until armed), ``done`` (a dated
check-in), ``accept`` (the contact's consent), and, while a turn settles,
what its reply means: the notice confirmed, a ``checkin`` block counted, the
one ``contact`` message written to the outbox, an ``alarm`` block added.

Pausing, cancelling, an emergency stop or anything the person merely says
never count as a check-in.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from email.utils import make_msgid
from typing import Optional

from poller.schedules import alarms, checkins, mail, timing
from poller import errors, text
from poller.kinds import AgreementStatus, ContactState, WakeKind
from poller.store import schedules

MAIL_DOMAIN = "mood-poller.invalid"
CONTACT_FOOTER = (
    "\n\n-- \nThis message was written by an AI agent under a check-in agreement the "
    "person set up with it. It is not an emergency service: no one is watching beyond "
    "this one message, and none will follow.")


def digest(code: str) -> str:
    return hashlib.sha256(code.strip().encode()).hexdigest()


def terms(g) -> checkins.Terms:
    return checkins.Terms(g.kind, g.spec, g.tz, g.status, g.answered_until, g.processed_until,
                          g.grace_minutes, g.lateness_cutoff_minutes, g.created_at)


def replan(s, g, now: dt.datetime) -> None:
    st = schedules.open_streak(s, g.id)
    schedules.plan_agreement(s, g, checkins.next_check(
        terms(g), st.grace_until if st else None,
        st.contact_state if st else ContactState.NONE), now)


def close_streak(s, g, why: str, now: dt.datetime) -> bool:
    return schedules.close_open_streak(s, g.id, why, now)


# -- setting up ------------------------------------------------------------------------------


def setup(store, *, person: str, agent: str, mood: str, kind: str, when: str, tz: str,
          grace: int, cutoff: int, contact_email: Optional[str], now: dt.datetime) -> dict:
    """A new agreement for *person*, replacing theirs; its status, with DST warnings."""
    spec = checkins.make_spec(kind, when, tz)
    checkins.check_minutes(grace, "--grace-minutes", checkins.GRACE_RANGE)
    checkins.check_minutes(cutoff, "--lateness-cutoff-minutes", checkins.CUTOFF_RANGE)
    email = mail.address(contact_email) if contact_email else None
    timing.first_firing(spec, now, "a once agreement needs a deadline ahead", inclusive=False)
    with store.writing() as s:
        ids = (schedules.participant_id(s, person, "person"), schedules.participant_id(s, agent, "agent"),
               schedules.mood_id(s, mood))
        old = schedules.live_agreement(s, ids[0], lock=True)
        if old is not None:
            close_streak(s, old, "replace", now)
            schedules.replaced(s, old)
        g = schedules.add_agreement(s, person_id=ids[0], agent_id=ids[1], mood_id=ids[2], kind=kind,
                               spec=spec.text, tz=spec.tz, grace_minutes=grace,
                               lateness_cutoff_minutes=cutoff, status=AgreementStatus.ACTIVE,
                               contact_email=email, processed_until=now, created_at=now,
                               updated_at=now)
        if email:
            invite(s, g, person, now)
        replan(s, g, now)
        out = view(s, g, now)
    out["warnings"] = timing.warnings(spec, now)
    return out


def invite(s, g, person: str, now: dt.datetime) -> None:
    """One invitation to the contact, with a single-use code; only its hash is kept."""
    code = secrets.token_urlsafe(12)
    schedules.consent_asked(s, g, digest(code))
    body = (f"Hello,\n\n{person} has set up a check-in agreement with an AI agent and named you "
            f"as the one contact it may write to if {person} misses a check-in and does not "
            f"answer a reminder. It would write at most one short message per missed check-in, "
            f"and only if {person} turned that on.\n\nIf you agree, give {person} (or whoever "
            f"runs the service) this code, which works once:\n\n    {code}\n\nIf you do not "
            f"agree, do nothing: without your agreement you will never be written to.\n"
            f"{CONTACT_FOOTER}")
    schedules.add_mail(s, agreement_id=g.id, purpose="invite", recipient=g.contact_email,
                  subject=f"{person} asks: may an AI agent write to you if they miss a check-in?",
                  body=body, message_id=make_msgid(domain=MAIL_DOMAIN), created_at=now)


def accept(store, code: str, now: dt.datetime) -> dict:
    """The contact's consent, by the invitation's code (once)."""
    text.check_text(code, "the code", 200)
    with store.writing() as s:
        g = schedules.by_consent(s, digest(code)) if code.strip() else None
        if g is None:
            raise errors.UserError("that code is unknown or was already used")
        schedules.consent_given(s, g, now)
        replan(s, g, now)
        return view(s, g, now)


# -- the person's controls ----------------------------------------------------------------


def _live(s, person: str):
    g = schedules.live_agreement(s, schedules.participant_id(s, person, "person"), lock=True)
    if g is None:
        raise errors.NotFound(f"{person} has no check-in agreement")
    return g


def status(store, person: str, now: dt.datetime) -> dict:
    with store.reading() as s:
        g = schedules.live_agreement(s, schedules.participant_id(s, person, "person"))
        if g is None:
            raise errors.NotFound(f"{person} has no check-in agreement")
        return view(s, g, now)


def control(store, person: str, action: str, now: dt.datetime, mail_ready: bool = False) -> dict:
    """pause | resume | cancel | arm | disarm; the agreement as it is after."""
    with store.writing() as s:
        g = _live(s, person)
        {"pause": _pause, "resume": _resume, "cancel": _cancel, "arm": _arm,
         "disarm": _disarm}[action](s, g, now, mail_ready)
        replan(s, g, now)
        return view(s, g, now)


def _pause(s, g, now, _ready) -> None:
    if g.kind != "daily":
        raise errors.UserError("only a daily agreement can be paused (cancel a once agreement)")
    if g.status == AgreementStatus.PAUSED:
        raise errors.UserError("the agreement is already paused")
    close_streak(s, g, "pause", now)  # not a check-in: the streak ends, nobody is contacted
    schedules.agreement_state(s, g, status=AgreementStatus.PAUSED, armed=False)


def _resume(s, g, now, _ready) -> None:
    if g.status != AgreementStatus.PAUSED:
        raise errors.UserError("the agreement is not paused")
    # deadlines in the pause were not watched
    schedules.agreement_state(s, g, status=AgreementStatus.ACTIVE, watched_from=now)


def _cancel(s, g, now, _ready) -> None:
    close_streak(s, g, "cancel", now)
    schedules.agreement_state(s, g, status=AgreementStatus.CANCELLED, armed=False,
                              forget_consent=True)


def _arm(s, g, now, ready) -> None:
    if g.status != AgreementStatus.ACTIVE:
        raise errors.UserError("the agreement is paused: arm it again once it is resumed")
    if not g.contact_email or g.consent_at is None:
        raise errors.UserError("the contact has not agreed yet: arming needs a contact who "
                               "accepted the invitation")
    if not ready:
        raise errors.UserError("no mail server is configured ([mail] host): nothing could be sent")
    if schedules.open_streak(s, g.id) is not None or checkins.missed(terms(g), now):
        raise errors.UserError("a check-in is missed: check in first, then arm")
    schedules.agreement_state(s, g, armed=True)


def _disarm(s, g, now, _ready) -> None:
    schedules.agreement_state(s, g, armed=False)


def done(store, person: str, for_label: str, now: dt.datetime) -> dict:
    """A dated check-in for the deadline *for_label* names; what it answered."""
    with store.writing() as s:
        g = _live(s, person)
        target = timing.parse_shown(for_label, g.tz)
        answer = checkins.dated(terms(g), target, now)
        said = apply_answer(s, g, answer, now)
        out = view(s, g, now)
    out["answered"] = said
    return out


def apply_answer(s, g, answer: checkins.Answer, now: dt.datetime) -> Optional[str]:
    """Write what a check-in answered; the deadline it answered, shown (None: nothing new)."""
    if answer.answered is None:
        return None
    schedules.checked_in(s, g, answer.answered_until, answer.completes)
    close_streak(s, g, "checkin", now)
    replan(s, g, now)
    return timing.shown(answer.answered, g.tz)


def view(s, g, now: dt.datetime) -> dict:
    t, st = terms(g), schedules.latest_streak(s, g.id)
    names = schedules.handles(s, {g.person_id, g.agent_id})
    nxt = t.when.next(t.floor) if g.status == AgreementStatus.ACTIVE else None
    missing = checkins.missed(t, now)
    streak = None
    if st is not None:
        streak = {"open": st.closed_at is None, "first_due": timing.shown(st.first_due, g.tz),
                  "last_due": timing.shown(st.last_due, g.tz), "closed_by": st.closed_by or None,
                  "grace_until": timing.shown(st.grace_until, g.tz) or None,
                  "contact": st.contact_state or None, "contact_note": st.contact_note or None}
    return {"id": g.id, "person": names[g.person_id], "agent": names[g.agent_id],
            "mood": schedules.slugs(s, {g.mood_id})[g.mood_id], "kind": g.kind, "time": g.spec,
            "tz": g.tz, "status": g.status, "next_deadline": timing.shown(nxt, g.tz) or None,
            "answered_until": timing.shown(g.answered_until, g.tz) or None,
            "missed_unprocessed": [timing.shown(m, g.tz) for m in missing],
            "grace_minutes": g.grace_minutes,
            "lateness_cutoff_minutes": g.lateness_cutoff_minutes,
            "contact_email": g.contact_email, "consented": g.consent_at is not None,
            "armed": g.armed, "streak": streak,
            "not_an_emergency_service": checkins.NOT_AN_EMERGENCY_SERVICE}


# -- what a reply does --------------------------------------------------------------------


def confirm_notice(s, w, now: dt.datetime) -> None:
    """The notice's reply was posted: the person was told.  The first confirmed, on-time
    notice of a streak that finds the contact stage armed plans its grace, once."""
    n = schedules.notice(s, w.id)
    if n is None or n.confirmed_at is not None:
        return
    schedules.notice_confirmed(s, n, now)
    st = schedules.streak(s, n.streak_id)
    g = schedules.agreement(s, st.agreement_id)
    if (st.closed_at is None and st.grace_until is None and not n.late and g.armed
            and g.status == AgreementStatus.ACTIVE):
        schedules.grace_planned(s, st, now + dt.timedelta(minutes=g.grace_minutes), w.id)
        replan(s, g, now)


def alarm(s, w, block, notes: list[str], now: dt.datetime) -> str:
    """Add the alarm an ``alarm`` block asks for; or why not."""
    handle = schedules.handles(s, {w.agent_id})[w.agent_id]
    try:
        row, warns = alarms.add(s, agent_id=w.agent_id, mood_id=w.mood_id, kind=block.kind,
                                when=block.when, tz=block.tz, note=block.note,
                                set_by=f"@{handle}", now=now)
    except errors.UserError as exc:
        return str(exc).replace("--", "")
    extra = "".join(f" Note: {x}." for x in warns[:2])
    notes.append(f"@{handle} set alarm {row.id} ({row.kind} {row.spec} {row.tz}); first due "
                 f"{timing.shown(row.next_at, row.tz)}.{extra}")
    return ""


def checkin(s, w, block, notes: list[str], now: dt.datetime) -> str:
    """Count the person's words a ``checkin`` block quotes as their check-in; or why not."""
    here = schedules.agreements_here(s, w.agent_id, w.mood_id)
    names = schedules.handles(s, {g.person_id for g in here})
    if block.person:
        here = [g for g in here if names[g.person_id].lower() == block.person.lower()]
    if len(here) != 1:
        return ("there is no check-in agreement " + (f"for {block.person} " if block.person else "")
                + "with you in this Mood" if not here else
                "several people have agreements here: say whose with for:")
    g = here[0]
    who = names[g.person_id]
    if g.status != AgreementStatus.ACTIVE:
        return f"{who}'s agreement is paused: no check-in counts until it is resumed"
    post = _quoted(s, w, g, block.quote)
    if post is None:
        return (f"the quote matches no post by {who} this turn answers: only {who}'s own "
                "words count as a check-in")
    said = apply_answer(s, g, checkins.ordinary(terms(g), post[2]), now)
    nxt = timing.shown(terms(g).when.next(terms(g).floor), g.tz) if g.status == "active" else ""
    head = (f"{who}'s check-in counted for {said}" if said
            else f"{who}'s check-in answered nothing new")
    notes.append(head + (f"; next deadline {nxt}." if nxt else "; the agreement is complete."))
    return ""


def _quoted(s, w, g, quote: str):
    """The person's post this turn answers whose words the quote gives, or None.

    A turn that posts called (a mention) answers those posts only: another person's
    words in its catch-up are not theirs to give, whatever the reply quotes.  A turn
    no post called (a consider, a follow-up) answers what is new in it."""
    want = " ".join(quote.split()).casefold()
    answered = schedules.posts_answered(s, w.id)
    if answered:
        theirs = [(i, body, t) for i, sender, body, t in answered if sender == g.person_id]
    else:
        after = schedules.previous_seen(s, w.agent_id, w.mood_id, w.id)
        theirs = schedules.posts_shown(s, w.mood_id, g.person_id, after, w.seen_id)
    for post in reversed(theirs):
        if want in " ".join(post[1].split()).casefold():
            return post
    return None


def contact(s, w, block, notes: list[str], now: dt.datetime) -> str:
    """Write the one contact message a ``contact`` block gives to the outbox, or record
    that the agent declined (a block of None: it wrote no valid one); or why not."""
    st = schedules.streak_of_contact_wake(s, w.id)
    if w.kind != WakeKind.CHECKIN_CONTACT or st is None:
        return "a contact block is honoured only in the checkin-contact wake that offers it"
    if st.contact_state != ContactState.OFFERED:
        return "this wake's one contact message was already used"
    g = schedules.agreement(s, st.agreement_id)
    if block is None or block.decline:
        schedules.contact_settled(s, st, ContactState.DECLINED, block.decline if block
                                  else "the reply wrote no valid contact block")
        return ""
    why = _contact_refusal(st, g, block)
    if why and len(block.body) > checkins.CONTACT_BODY_LIMIT and st.closed_at is None:
        # The text was checked before the attempt was claimed: the window opens again
        # (while the lateness cutoff allows), and the next wake says why.
        schedules.contact_settled(s, st, ContactState.NONE, why, reopen=True)
        replan(s, g, now)
        return why
    if why:
        schedules.contact_settled(s, st, ContactState.REFUSED, why)
        return why
    schedules.add_mail(s, agreement_id=g.id, streak_id=st.id, purpose="contact",
                  recipient=g.contact_email, subject=text.check_utf8(block.subject, "subject"),
                  body=block.body + CONTACT_FOOTER, message_id=make_msgid(domain=MAIL_DOMAIN),
                  created_at=now)
    schedules.contact_settled(s, st, ContactState.SENT, "written to the outbox")
    return ""


def _contact_refusal(st, g, block) -> str:
    if st.closed_at is not None:
        return "the person checked in (or the agreement ended) since: nothing was sent"
    if not (g.armed and g.consent_at and g.contact_email and g.status == AgreementStatus.ACTIVE):
        return "the contact stage is no longer armed: nothing was sent"
    if len(block.body) > checkins.CONTACT_BODY_LIMIT:
        return (f"the message is {len(block.body):,} characters; the limit is "
                f"{checkins.CONTACT_BODY_LIMIT:,}: nothing was sent")
    return ""
