"""A running turn's capability and the approvals it asks of the room: their reads and writes.

A turn that calls the Moods' tools from a process of its own (``mood-poller mcp``)
proves itself with a secret minted when the turn starts (:func:`mint`); only its
SHA-256 is kept.  :func:`find` says what a secret may do now, or why it may do
nothing: unknown, revoked (the turn ended), expired, or its wake no longer running.
The reply blocks its acting tools accept are kept on it (:func:`add_block`) and
taken when the turn settles (:func:`take_blocks`).

An approval is a turn's request to use a tool its tier does not pre-allow: asked
with a notice posted in the Mood (:func:`ask`), decided once (:func:`decide`) by a
person with trust ``full`` or an operator, or ended by the wait running out or the
turn ending.
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass
from typing import Optional

import sqlalchemy as sa
from sqlalchemy.orm import Session

from poller import errors
from poller.kinds import WakeStatus
from poller.models import Approval, Mood, Participant, TurnCapability, Wake
from poller.store import cycle
from poller.store.access import digest
from poller.store.core import Store

TOKEN_PREFIX = "mtt_"  # a turn's token: recognisable, never a person's (mpt_)


@dataclass(frozen=True)
class Capability:
    """What a turn's token may do: act as *agent* in *mood* with *tools*."""

    wake_id: int
    agent_id: int
    agent: str
    mood_id: int
    mood: str
    tools: str  # full | look
    kind: str  # the wake's kind
    expires_at: dt.datetime


def mint(store: Store, wake_id: int, tools: str, now: dt.datetime,
         lasts: dt.timedelta) -> str:
    """A new secret for the turn of *wake_id* (replacing any it had), valid for *lasts*."""
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with store.writing() as s:
        s.execute(sa.delete(TurnCapability).where(TurnCapability.wake_id == wake_id))
        s.add(TurnCapability(wake_id=wake_id, token_hash=digest(secret), tools=tools,
                             created_at=now, expires_at=now + lasts, blocks={}))
    return secret


def find(store: Store, secret: str, now: dt.datetime) -> tuple[Optional[Capability], str]:
    """What *secret* may do now, or ``(None, why not)``."""
    if not secret or not secret.startswith(TOKEN_PREFIX):
        return None, "that is not a turn's token"
    with store.reading() as s:
        row = s.execute(
            sa.select(TurnCapability, Wake, Participant.handle, Mood.slug)
            .join(Wake, Wake.id == TurnCapability.wake_id)
            .join(Participant, Participant.id == Wake.agent_id)
            .join(Mood, Mood.id == Wake.mood_id)
            .where(TurnCapability.token_hash == digest(secret))).first()
    if row is None:
        return None, "the turn's token is unknown"
    cap, wake, agent, mood = row
    if cap.revoked_at is not None:
        return None, "the turn's token was revoked: its turn has ended"
    if cap.expires_at <= now:
        return None, "the turn's token has expired"
    if wake.status != WakeStatus.RUNNING:
        return None, "the turn's token is no longer valid: its turn is not running"
    return Capability(wake.id, wake.agent_id, agent, wake.mood_id, mood, cap.tools, wake.kind,
                      cap.expires_at), ""


def revoke(store: Store, wake_id: int, now: dt.datetime) -> None:
    """The turn has ended: its token does nothing from now on, and what it asked is over."""
    with store.writing() as s:
        s.execute(sa.update(TurnCapability).where(TurnCapability.wake_id == wake_id,
                                                  TurnCapability.revoked_at.is_(None))
                  .values(revoked_at=now))
        s.execute(sa.update(Approval).where(Approval.wake_id == wake_id,
                                            Approval.status == "pending")
                  .values(status="ended", decided_at=now, via="turn_end"))


def add_block(store: Store, wake_id: int, kind: str, text: str) -> None:
    """Keep a reply block an acting tool accepted, for the turn's settling."""
    with store.writing() as s:
        cap = s.scalar(cycle.for_update(s, sa.select(TurnCapability)
                                        .where(TurnCapability.wake_id == wake_id)))
        if cap is None:
            raise errors.NotFound(f"no capability for wake {wake_id}")
        kept = dict(cap.blocks or {})
        cap.blocks = {"kinds": [*kept.get("kinds", []), kind],
                      "texts": [*kept.get("texts", []), text]}


def blocks_of(store: Store, wake_id: int) -> tuple[list[str], list[str]]:
    """The blocks kept for the turn so far: (kinds, texts)."""
    with store.reading() as s:
        kept = s.scalar(sa.select(TurnCapability.blocks).where(TurnCapability.wake_id == wake_id))
    kept = kept or {}
    return list(kept.get("kinds", [])), list(kept.get("texts", []))


# -- Approvals ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ApprovalInfo:
    id: int
    wake_id: int
    agent: str
    mood: str
    tool: str
    shown: str
    status: str  # pending | approved | denied | timed_out | ended
    asked_at: dt.datetime
    decided_at: Optional[dt.datetime]
    decided_by: Optional[str]
    via: str
    reason: str
    notice_post_id: Optional[int]

    def to_json(self) -> dict:
        from poller import text

        return {"id": self.id, "wake_id": self.wake_id, "agent": self.agent, "mood": self.mood,
                "tool": self.tool, "input": self.shown, "status": self.status,
                "asked_at": text.iso(self.asked_at), "decided_at": text.iso(self.decided_at),
                "decided_by": self.decided_by, "via": self.via, "reason": self.reason,
                "notice_post_id": self.notice_post_id}


def _infos(s: Session, where) -> list[ApprovalInfo]:
    agent, decider = sa.orm.aliased(Participant), sa.orm.aliased(Participant)
    rows = s.execute(
        sa.select(Approval, agent.handle, Mood.slug, decider.handle)
        .join(agent, agent.id == Approval.agent_id).join(Mood, Mood.id == Approval.mood_id)
        .outerjoin(decider, decider.id == Approval.decided_by).where(where)
        .order_by(Approval.id))
    return [ApprovalInfo(a.id, a.wake_id, who, mood, a.tool, a.shown, a.status, a.asked_at,
                         a.decided_at, by, a.via, a.reason, a.notice_post_id)
            for a, who, mood, by in rows]


def ask(store: Store, cap: Capability, tool: str, shown: str, notice: str,
        now: dt.datetime) -> ApprovalInfo:
    """Record the request and post its notice in the Mood (``{id}`` in *notice* is its id)."""
    with store.writing() as s:
        row = Approval(wake_id=cap.wake_id, agent_id=cap.agent_id, mood_id=cap.mood_id,
                       tool=tool, shown=shown, status="pending", asked_at=now, via="",
                       reason="")
        s.add(row)
        s.flush()
        body = notice.replace("{id}", str(row.id))
        post = cycle.add_system_post(s, cap.mood_id, cap.agent_id, body, now,
                                     store.counter.count(body))
        row.notice_post_id = post.id
        s.flush()
        return _infos(s, Approval.id == row.id)[0]


def approval(store: Store, approval_id: int) -> ApprovalInfo:
    with store.reading() as s:
        found = _infos(s, Approval.id == approval_id)
    if not found:
        raise errors.NotFound(f"no approval {approval_id}")
    return found[0]


def approvals_of(store: Store, wake_id: int) -> list[ApprovalInfo]:
    with store.reading() as s:
        return _infos(s, Approval.wake_id == wake_id)


def pending_in(store: Store, mood: Optional[str] = None) -> list[ApprovalInfo]:
    """Requests still waiting for an answer (in one Mood, or everywhere)."""
    with store.reading() as s:
        where = Approval.status == "pending"
        if mood is not None:
            where = sa.and_(where, Mood.slug == mood)
        return _infos(s, where)


def by_notice(store: Store, post_id: int) -> Optional[ApprovalInfo]:
    """The request whose notice is post *post_id*."""
    with store.reading() as s:
        found = _infos(s, Approval.notice_post_id == post_id)
    return found[0] if found else None


def by_notices(store: Store, post_ids) -> dict[int, ApprovalInfo]:
    """The requests whose notices are among *post_ids*, by notice."""
    ids = list(post_ids)
    if not ids:
        return {}
    with store.reading() as s:
        return {a.notice_post_id: a for a in _infos(s, Approval.notice_post_id.in_(ids))}


def may_decide(s: Session, person_id: Optional[int]) -> str:
    """Why *person_id* may not decide an approval ("" when they may; None: an operator at
    the command line)."""
    if person_id is None:
        return ""
    p = s.get(Participant, person_id)
    if p is None or p.kind != "person":
        return "only a person may answer an approval"
    if p.trust == "full" or p.operator:
        return ""
    return (f"{p.handle} has trust {p.trust}: only a person with trust full (or an operator) "
            f"may answer an approval")


def decide(store: Store, approval_id: int, approve: bool, now: dt.datetime, *,
           person_id: Optional[int], via: str, reason: str = "") -> ApprovalInfo:
    """Approve or deny a pending request, once; refused with the reason when it is not
    pending any more or *person_id* may not decide it."""
    with store.writing() as s:
        return decide_in(s, store.counter, approval_id, approve, now, person_id=person_id,
                         via=via, reason=reason)


def decide_in(s: Session, counter, approval_id: int, approve: bool, now: dt.datetime, *,
              person_id: Optional[int], via: str, reason: str = "") -> ApprovalInfo:
    """:func:`decide` inside the caller's write transaction; the decision is said in the
    Mood (a system post: the page, the event stream and a bridged room show it)."""
    row = s.scalar(cycle.for_update(s, sa.select(Approval).where(Approval.id == approval_id)))
    if row is None:
        raise errors.NotFound(f"no approval {approval_id}")
    why = may_decide(s, person_id)
    if why:
        raise errors.UserError(why)
    if row.status != "pending":
        raise errors.UserError(f"approval {approval_id} is {row.status.replace('_', ' ')} "
                               f"already: each request is answered once")
    row.status = "approved" if approve else "denied"
    row.decided_at, row.decided_by, row.via = now, person_id, via
    row.reason = " ".join(reason.split())[:300]
    s.flush()
    decided = _infos(s, Approval.id == row.id)[0]
    _tell_decision(s, counter, row, decided, now)
    return decided


def said(a: ApprovalInfo) -> str:
    """How a decided request is told in the Mood."""
    who = a.decided_by or "an operator"
    why = f": {a.reason}" if a.reason else ""
    return {"approved": f"Approval #{a.id} ({a.tool} for @{a.agent}): approved by {who}.",
            "denied": f"Approval #{a.id} ({a.tool} for @{a.agent}): denied by {who}{why}.",
            "timed_out": f"Approval #{a.id} ({a.tool} for @{a.agent}): nobody answered in "
                         f"time, so it is denied."}.get(a.status, "")


def _tell_decision(s: Session, counter, row: Approval, a: ApprovalInfo, now: dt.datetime) -> None:
    body = said(a)
    if body:
        cycle.add_system_post(s, row.mood_id, row.agent_id, body, now, counter.count(body))


def pending_for(s: Session, agent_id: int, mood_id: int) -> list[int]:
    """The ids of the requests *agent_id* waits on in *mood_id*, oldest first."""
    return list(s.scalars(sa.select(Approval.id).where(
        Approval.agent_id == agent_id, Approval.mood_id == mood_id,
        Approval.status == "pending").order_by(Approval.id)))


def time_out(store: Store, approval_id: int, now: dt.datetime) -> ApprovalInfo:
    """The wait ran out: a request still pending is denied as ``timed_out``."""
    with store.writing() as s:
        row = s.scalar(cycle.for_update(s, sa.select(Approval).where(Approval.id == approval_id)))
        if row is not None and row.status == "pending":
            row.status, row.decided_at, row.via = "timed_out", now, "timeout"
            s.flush()
            _tell_decision(s, store.counter, row, _infos(s, Approval.id == row.id)[0], now)
    return approval(store, approval_id)


def person_id(store: Store, handle: str) -> Optional[int]:
    with store.reading() as s:
        return s.scalar(sa.select(Participant.id).where(Participant.handle_key
                                                        == handle.lower()))
