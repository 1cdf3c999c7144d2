"""Control's kind of wake: a person's slash command (``@agent /compact``), run as typed.

Not composed: the wake is the command alone, run in the agent's session
here with look-only tools, whatever the Mood's dials and budgets; it waits
while a turn runs there or the agent is stopped there, and passes through an
absence.  Declared with :func:`poller.kinds.register` (see
:mod:`poller.cycle.organs`).
"""

from __future__ import annotations

from poller import kinds
from poller.control import slash
from poller.cycle import draft as drafts
from poller.kinds import KindSpec, Tools, WakeKind
from poller.store import cycle, gather


def command_draft(g: drafts.Gathering) -> drafts.Draft:
    """The wake is the command alone (``/compact``), never the rest of the post, and
    answers that post."""
    post_id = g.l.command_post_id
    asked = slash.parse(cycle.post_texts(g.s, [post_id]).get(post_id, ""))
    word = asked.word if asked else ""
    return drafts.Draft(g.agent, g.mood, WakeKind.COMMAND, Tools.LOOK, None, [post_id], None, 0,
                        gather.command_extras(g.s, g.agent.id, g.mood.id), command=f"/{word}")


def command_taken(ctx, s, l, _done, now) -> None:
    l.command_post_id = 0


COMMAND = kinds.register(KindSpec(
    WakeKind.COMMAND, 60, paced=False, dials_apply=False, while_away="pass", composed=False,
    due_at=lambda l, owed, now: now if l.command_post_id else None,
    gather=command_draft, after_wake=command_taken, after_skip=command_taken, frames=()))
