"""The mail outbox: check-in mail, written with the decision, sent once by a poller.

A consent invitation or a contact message becomes a ``mail_outbox`` row in
the transaction that decides it, with its Message-ID fixed there.  Each cycle
a poller claims the waiting rows (pending -> sending, a conditional update,
so two pollers never both send one) and hands each to the configured SMTP
server (``[mail]``; STARTTLS or implicit TLS with the certificate verified;
the password only from ``MOOD_POLLER_MAIL_PASSWORD``).  A poller killed
after a message was written and before it was sent leaves it pending: the
next cycle sends it, once.  A message is checked again when it is claimed:
an invitation whose agreement was cancelled or replaced, or a contact
message whose person checked in (or whose agreement ended, or whose stage
was disarmed) since it was written, is withdrawn, never sent.  A message is
rendered whole when claimed, to exactly its stored recipient: one that
cannot be written as an e-mail is failed with the reason, and the rows
behind it go on.  Once the
server has answered, and before the message is handed over, the row is
marked ``handing``.  A claim its poller left before that (it died while
reaching the server) goes back to pending: the server never saw the
message.  A message left ``handing`` (the poller died mid-conversation) is
marked ``uncertain`` and never sent again: the server may have it.  A server
that cannot be reached leaves the row pending.
"""

from __future__ import annotations

import datetime as dt
import email.policy
import logging
import os
import re
import smtplib
import ssl
from email.message import EmailMessage
from email.utils import format_datetime

import email_validator

from poller import errors
from poller.config import ENV_MAIL_PASSWORD, MailConfig
from poller.kinds import LIVE_AGREEMENTS, AgreementStatus
from poller.store import schedules

log = logging.getLogger("poller.mail")

STALE_SENDING = dt.timedelta(minutes=10)  # a claim this old with no outcome: uncertain
CODE_LINE = re.compile(r"^    \S+$", re.M)  # an invitation's code, on a line of its own


def address(value: str, what: str = "--contact-email") -> str:
    """*value* as the one address mail goes to, checked by a parser made for addresses
    (no quoted or internationalised local part, no IP literal, a domain with a dot; an
    internationalised domain in its ASCII form); UserError in one line otherwise."""
    try:
        return email_validator.validate_email(
            value.strip(), check_deliverability=False, allow_smtputf8=False).ascii_email
    except email_validator.EmailNotValidError as exc:
        raise errors.UserError(f"{what} {value!r} is not an e-mail address: {exc}") from None


class Unrenderable(Exception):
    """An outbox row that cannot be written as an e-mail: it fails, it is never retried."""


def message(m, sender: str, now: dt.datetime) -> EmailMessage:
    """The e-mail of outbox row *m*, to exactly its stored recipient, rendered whole here
    so that a row that cannot be mail fails before any server is reached."""
    try:
        recipient = address(m.recipient, "the recipient")
        if recipient != m.recipient:
            raise errors.UserError(f"the recipient {m.recipient!r} is not written as sent "
                                   f"({recipient!r})")
        msg = EmailMessage()
        msg["From"], msg["To"], msg["Subject"] = sender, recipient, m.subject
        msg["Message-ID"], msg["Date"] = m.message_id, format_datetime(now)
        msg.set_content(m.body)
        msg.as_bytes(policy=email.policy.SMTP)
    except Exception as exc:  # rendering is pure: whatever it raises is about this row
        raise Unrenderable(f"it could not be written as an e-mail: {exc}") from exc
    return msg


def connect(cfg: MailConfig) -> smtplib.SMTP:
    context = ssl.create_default_context()
    if cfg.tls:
        smtp = smtplib.SMTP_SSL(cfg.host, cfg.port, timeout=cfg.timeout, context=context)
    else:
        smtp = smtplib.SMTP(cfg.host, cfg.port, timeout=cfg.timeout)
        if cfg.starttls:
            smtp.starttls(context=context)
    if cfg.user:
        smtp.login(cfg.user, os.environ.get(ENV_MAIL_PASSWORD, ""))
    return smtp


class Unreachable(Exception):
    """The server could not be reached or refused us before anything was handed over."""


def send_one(cfg: MailConfig, msg: EmailMessage, handing=lambda: None) -> None:
    """Reach the server, call *handing* (the row is marked before anything is handed
    over), then hand the message over."""
    try:
        smtp = connect(cfg)
    except (OSError, smtplib.SMTPException) as exc:
        raise Unreachable(f"{type(exc).__name__}: {exc}") from exc
    with smtp:
        handing()
        # The envelope names the stored address, which `message` put in To: exactly as it
        # is, never one parsed back out of the headers.
        smtp.send_message(msg, to_addrs=[str(msg["To"])])


def send_waiting(store, cfg: MailConfig, holder: str, now: dt.datetime) -> int:
    """Send what waits in the outbox; the number sent.  Without a mail server, nothing."""
    if not cfg.host:
        return 0
    with store.writing() as s:
        schedules.release_mail_claims(s, now - STALE_SENDING)
    with store.reading() as s:
        waiting = schedules.mail_waiting(s)
    sent = 0
    for mail_id in waiting:
        with store.writing() as s:
            msg, kept = _claimed(s, mail_id, cfg, holder, now)
        if msg is None:
            continue  # another poller has it, it is no longer wanted, or it cannot be mail
        state, error = _attempt(cfg, msg, mail_id, lambda: _handing(store, mail_id))
        with store.writing() as s:
            schedules.mail_attempted(s, mail_id, state, error, now, sent_body=kept)
        sent += state == "sent"
    return sent


def _claimed(s, mail_id: int, cfg: MailConfig, holder: str, now: dt.datetime):
    """Claim one waiting row: its message and the body kept once it is sent, or
    (None, None) when there is nothing to send (withdrawn or failed, and why)."""
    m = schedules.claim_mail(s, mail_id, holder, now)
    if m is None:
        return None, None
    if not still_wanted(s, m):
        schedules.withdraw_mail(s, mail_id, "the agreement or check-in it was about was "
                                "answered or ended before it went")
        return None, None
    try:
        msg = message(m, cfg.sender, now)
    except Unrenderable as exc:
        log.warning("mail %s failed: %s", mail_id, exc,
                    extra={"action": "mail_failed", "mail_id": mail_id})
        schedules.mail_attempted(s, mail_id, "failed", str(exc), now)
        return None, None
    kept = (CODE_LINE.sub("    (the single-use code, not kept once sent)", m.body)
            if m.purpose == "invite" else None)
    return msg, kept


def still_wanted(s, m) -> bool:
    """Checked again right before sending.  An invitation goes only while its agreement
    is live and still waits for the contact's answer (not cancelled, replaced or
    answered since); a contact message only while its streak is still open and the
    stage armed, as it was when the agent wrote it."""
    g = schedules.agreement(s, m.agreement_id)
    if g is None:
        return False
    if m.purpose == "invite":
        return (g.status in LIVE_AGREEMENTS and g.consent_at is None
                and g.consent_digest is not None)
    st = schedules.streak(s, m.streak_id)
    return (st is not None and st.closed_at is None and g.armed
            and g.consent_at is not None and g.status == AgreementStatus.ACTIVE)


def _handing(store, mail_id: int) -> None:
    with store.writing() as s:
        schedules.mark_mail_handing(s, mail_id)


def _attempt(cfg: MailConfig, msg: EmailMessage, mail_id: int,
             handing=lambda: None) -> tuple[str, str]:
    try:
        send_one(cfg, msg, handing)
    except Unreachable as exc:
        log.warning("mail %s not sent, kept for the next cycle: %s", mail_id, exc,
                    extra={"action": "mail_deferred", "mail_id": mail_id})
        return "pending", str(exc)
    except (OSError, smtplib.SMTPException) as exc:
        log.warning("mail %s failed: %s", mail_id, exc,
                    extra={"action": "mail_failed", "mail_id": mail_id})
        return "failed", f"{type(exc).__name__}: {exc}"
    log.info("mail %s sent", mail_id, extra={"action": "mail_sent", "mail_id": mail_id})
    return "sent", ""
