"""Control in the cycle: "@agent stop" and "@agent resume", and a person's slash command.

The scan hands people's posts to control's readers (:class:`poller.cycle.scan.Reader`)
before they are conversation: a stop or resume is carried out
(:func:`poller.control.commands.carry_out`), and a slash command
(``@agent /compact``) is set to run or refused.  The command is a kind of wake:
not composed: the wake is the command alone, run in the agent's session
here with look-only tools, whatever the Mood's dials and budgets; it waits
while a turn runs there or the agent is stopped there, and passes through an
absence.  Declared with :func:`poller.kinds.register` (see
:mod:`poller.cycle.organs`); what it printed is recorded at settling by
:func:`poller.control.replies.command_done`, declared to :mod:`poller.turns.blocks`.
"""

from __future__ import annotations

import datetime as dt

from poller import kinds
from poller.control import commands, replies, slash
from poller.cycle import drafts, scan
from poller.cycle.context import log
from poller.kinds import KindSpec, Tools, WakeKind
from poller.store import cycle, reads
from poller.turns import blocks


def command_draft(g: drafts.Gathering) -> drafts.Draft:
    """The wake is the command alone (``/compact``), never the rest of the post, and
    answers that post."""
    post_id = g.l.command_post_id
    asked = slash.parse(cycle.post_texts(g.s, [post_id]).get(post_id, ""))
    word = asked.word if asked else ""
    return drafts.Draft(g.agent, g.mood, WakeKind.COMMAND, Tools.LOOK, None, [post_id], None, 0,
                        reads.command_extras(g.s, g.agent.id, g.mood.id), command=f"/{word}")


def command_taken(ctx, s, l, _done, now) -> None:
    l.command_post_id = 0


COMMAND = kinds.register(KindSpec(
    WakeKind.COMMAND, 60, paced=False, dials_apply=False, while_away="pass", composed=False,
    due_at=lambda l, owed, now: now if l.command_post_id else None,
    gather=command_draft, after_wake=command_taken, after_skip=command_taken, frames=()))


# -- reading posts -----------------------------------------------------------------------------


def slash_commands(s, mentioned: dict[int, set[int]]) -> dict[int, slash.Asked]:
    """The posts among those mentioning an agent that are slash commands (``@a /compact``)."""
    texts = cycle.post_texts(s, list(mentioned))
    found = {post_id: slash.parse(text) for post_id, text in texts.items()}
    return {post_id: a for post_id, a in found.items() if a is not None}


def command_target(ctx, asked: slash.Asked, addressed: set[int]):
    """The agent a command post is addressed to (the handle it starts with), or None."""
    return next((a for a in addressed if ctx.agents[a].handle.lower() == asked.handle.lower()),
                None)


def take_command(ctx, s, l, r, asked: slash.Asked, now: dt.datetime) -> None:
    """A person's slash command to this agent: due to run in its session here, or refused
    with a one-line system note in the Mood (the agent is not woken by it)."""
    agent = ctx.agents[l.agent_id]
    waiting = cycle.post_texts(s, [l.command_post_id]) if l.command_post_id else {}
    before = slash.parse(waiting.get(l.command_post_id, ""))
    why = slash.refusal(asked, agent.handle, agent.waker, r.sender_kind, r.sender_trust,
                        before.word if before else "")
    if why:
        cycle.add_system_post(s, r.mood_id, l.agent_id, why, now, ctx.counter.count(why))
        log.info("command %s for %s refused: %s", asked.shown, agent.handle, why,
                 extra={"action": "command_refused", "agent": agent.handle, "post_id": r.id})
        return
    l.command_post_id = r.id
    l.due_at = now


scan.read_with(scan.Reader("stop-resume", carry_out=commands.carry_out))
scan.read_with(scan.Reader("slash", commands=slash_commands, target=command_target,
                           take=take_command))

# A command wake's reply is what the command printed, recorded as a note: not a post.
blocks.register_output(blocks.Output(WakeKind.COMMAND, replies.command_done))
