"""What the tool server plugs into the cycle: ``@agent approve`` / ``@agent deny [reason]``.

A post answering an agent's pending approval in its Mood is a command, not
conversation: the request is decided (by a person with trust ``full`` or an
operator; anyone else is told in one line that they may not) and the agent owes
the post no answer.  A post that answers nothing pending is conversation as usual.
"""

from __future__ import annotations

import datetime as dt
import logging

from poller import errors
from poller.cycle import scan
from poller.kinds import ParticipantKind
from poller.store import capabilities, cycle
from poller.toolserver.approvals import parse_answer

log = logging.getLogger("poller.approvals")


def carry_out(ctx, s, r, addressed: set[int], listeners: dict, now: dt.datetime) -> set[int]:
    """Decide the approval post *r* answers; the agents it answered (nothing owed to them)."""
    if r.sender_kind != ParticipantKind.PERSON or not addressed:
        return set()
    body = cycle.post_text(s, r.id)
    done: set[int] = set()
    for agent_id in addressed:
        agent = ctx.agents[agent_id].handle
        answer = parse_answer(body, agent)
        if answer is None:
            continue
        pending = capabilities.pending_for(s, agent_id, r.mood_id)
        if answer.approval_id is not None:
            pending = [p for p in pending if p == answer.approval_id]
        if not pending:
            continue  # nothing to answer: it is conversation
        done.add(agent_id)
        try:
            a = capabilities.decide_in(s, ctx.counter, pending[0], answer.approve, now,
                                       person_id=r.sender_id, via="post", reason=answer.reason)
        except errors.UserError as exc:
            note = f"Approval #{pending[0]} is still waiting: {exc}."
            cycle.add_system_post(s, r.mood_id, agent_id, note, now, ctx.counter.count(note))
            continue
        log.info("approval %s %s by %s", a.id, a.status, a.decided_by,
                 extra={"action": "approval_answered", "approval_id": a.id, "post_id": r.id,
                        "status": a.status})
    return done


scan.read_with(scan.Reader("approvals", carry_out=carry_out))
