"""Detect: read new posts and sign-ins past the cursors; touch only their listeners.

Each call reads one batch (``BATCH`` rows) inside the caller's short write
transaction and moves the cursor past it; the cycle calls again until a batch
comes back short, so a burst is drained in one cycle without holding the
write lock long.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Callable, Optional

from poller import law
from poller.cycle import due
from poller.cycle.context import Context, log
from poller.kinds import ParticipantKind, PostKind, Trust
from poller.store import cycle, facts
from poller.store.facts import ListenerRow

BATCH = 1_000  # rows read per transaction: bounds the scan's memory and write-lock time


@dataclass(frozen=True)
class Reader:
    """What an organ reads in people's posts before they are conversation.

    *carry_out* ``(ctx, s, post, addressed, listeners, now)`` does what a post tells
    the service to do and returns the agents it named (their mention is owed no
    answer).  *commands* ``(s, mentioned)`` finds the posts that are a command for
    one agent (``{post_id: command}``), never conversation; *target*
    ``(ctx, command, addressed)`` names that agent, and *take*
    ``(ctx, s, listener, post, command, now)`` hands it the command.
    """

    name: str
    carry_out: Optional[Callable] = None
    commands: Optional[Callable] = None
    target: Optional[Callable] = None
    take: Optional[Callable] = None


READERS: dict[str, Reader] = {}


def read_with(reader: Reader) -> Reader:
    """Register a reader of posts (an organ does, as it is loaded)."""
    READERS[reader.name] = reader
    return reader


def carried_out(ctx: Context, s, r, addressed: set[int], listeners: dict,
                now: dt.datetime) -> set[int]:
    done: set[int] = set()
    for reader in READERS.values():
        if reader.carry_out:
            done |= reader.carry_out(ctx, s, r, addressed, listeners, now)
    return done


def commands_in(s, mentioned: dict[int, set[int]]) -> dict[int, tuple[Reader, object]]:
    """The posts among those mentioning an agent that are a command for one, with the
    reader that found each."""
    found: dict[int, tuple[Reader, object]] = {}
    for reader in READERS.values():
        if reader.commands and mentioned:
            for post_id, said in reader.commands(s, mentioned).items():
                found.setdefault(post_id, (reader, said))
    return found


def posts(ctx: Context, s, now: dt.datetime) -> int:
    """Read one batch of new posts; returns how many were read."""
    cur = cycle.claim_cursor(s, "posts")
    if cur is None:
        if not cycle.cursor_exists(s, "posts"):
            first_run(ctx, s, now)
        return 0  # first run, or another poller is reading them right now
    rows = cycle.new_posts(s, cur.value, BATCH)
    if not rows:
        return 0
    agent_ids = set(ctx.agents)
    mentioned = cycle.mentions_between(s, cur.value, rows[-1].id, agent_ids)
    listeners = facts.listeners(s, {(a, r.mood_id) for r in rows for a in agent_ids})
    with cycle.texts_read(s, mentioned):  # what the posts naming an agent say: read once
        owed = _read(ctx, s, rows, mentioned, listeners, agent_ids, now)
    cycle.add_owed(s, owed)
    owed_pairs = {(a, m) for a, _, m in owed}
    for pair, row in listeners.items():
        reschedule(row, pair in owed_pairs, now)
    facts.save(s, listeners.values())
    cycle.advance_cursor(s, cur, rows[-1].id, now)
    return len(rows)


def _read(ctx: Context, s, rows: list, mentioned: dict[int, set[int]], listeners: dict,
          agent_ids: set[int], now: dt.datetime) -> set[tuple[int, int, int]]:
    """Each post of the batch as every agent's listener takes it; the mentions owed."""
    asked = commands_in(s, mentioned)
    owed: set[tuple[int, int, int]] = set()
    for r in rows:
        addressed = mentioned.get(r.id, set())
        if r.sender_trust == Trust.NONE and r.sender_kind == ParticipantKind.PERSON:
            addressed = set()  # people with trust none: a mention is just text
        commanded = carried_out(ctx, s, r, addressed, listeners, now) if addressed else set()
        # (a command from someone with trust none is refused too, not read as mere text)
        reader, said = asked.get(r.id, (None, None))
        target = reader.target(ctx, said, mentioned.get(r.id, set())) if reader else None
        for agent_id in agent_ids:
            try:
                l = listeners[(agent_id, r.mood_id)]
                if target is not None:  # a command is not conversation: nothing owed or considered
                    if agent_id == target:
                        reader.take(ctx, s, l, r, said, now)
                    continue
                apply_post(ctx, l, r, agent_id, addressed, now, owed)
            except Exception as exc:  # one bad row must not stop every Mood, nor other agents
                set_aside(s, "post", r.id, r.mood_id, exc, now)
        for agent_id in commanded:  # "@agent stop" was carried out: nothing to answer
            owed.discard((agent_id, r.id, r.mood_id))
    return owed


def apply_post(ctx: Context, l: ListenerRow, r: cycle.PostEvent, agent_id: int,
               addressed: set[int], now: dt.datetime, owed: set) -> None:
    """What one post means for one agent's listener in its Mood."""
    if r.kind not in (PostKind.POST, PostKind.SILENT):
        return  # system notes and handoff events are not conversation
    values = ctx.settings.values(r.mood_id, agent_id, now)
    idle = dt.timedelta(seconds=values["idle_after"])
    if r.sender_id == agent_id:
        # The agent spoke (or chose silence) after reading up to looked_id
        # (set when its wake was made): people's posts that came in during
        # its turn are still unread and stay up for a consider.
        if l.consider_from_id and l.consider_from_id <= (l.looked_id or 0):
            l.consider_from_id, l.consider_due_at = 0, None
        if r.kind == PostKind.POST:
            l.quiet_backoff = 0
            l.quiet_due_at = r.created_at + idle if values["idle_after"] else None
        return
    if r.kind != PostKind.POST:
        return
    person = r.sender_kind == ParticipantKind.PERSON
    if person:
        l.last_person_at, l.last_person_id, l.quiet_backoff = r.created_at, r.id, 0
        if l.hold_reason:
            l.due_at = now  # a person spoke: a bot-loop hold may lift
    l.quiet_due_at = (r.created_at + law.slowed(values["idle_after"], l.quiet_backoff or 0)
                      if values["idle_after"] else None)
    if agent_id in addressed:
        owed.add((agent_id, r.id, r.mood_id))
        # Posts up to a mention belong to the mention's wake.
        l.consider_from_id, l.consider_due_at = 0, None
    elif person and not addressed:
        l.consider_from_id = l.consider_from_id or r.id
        l.consider_due_at = r.created_at + dt.timedelta(seconds=values["consider_after"])


def set_aside(s, kind: str, item_id: int, mood_id: int, exc: Exception, now: dt.datetime) -> None:
    """Quarantine one row the scan could not apply; the cursor moves on past it."""
    error = f"{type(exc).__name__}: {exc}"
    cycle.quarantine(s, kind, str(item_id), error, now, mood_id=mood_id)
    log.error("%s %s set aside: %s", kind, item_id, error,
              extra={"action": "quarantined", "kind": kind, "ref": str(item_id)})


def reschedule(l: ListenerRow, owed: bool, now: dt.datetime) -> None:
    when = due.next_due(l, owed, now)
    if l.due_at is not None and (when is None or l.due_at < when):
        when = l.due_at  # never push back something already due sooner
    l.due_at = when


def first_run(ctx: Context, s, now: dt.datetime) -> None:
    """A new deployment starts from now, not from history.

    Cursors start at the newest post and sign-in; Moods where a person
    spoke lately get a quiet clock that starts now, so the first quiet
    looks are spread from start-up instead of all at once.
    """
    newest = cycle.start_cursors(s, now)
    recent = cycle.moods_people_spoke_in(s, now - dt.timedelta(seconds=ctx.cfg.person_recent))
    listeners = facts.listeners(s, {(a, m.mood_id) for m in recent for a in ctx.agents})
    for m in recent:
        for a in ctx.agents:
            l = listeners[(a, m.mood_id)]
            idle = ctx.settings.values(m.mood_id, a, now)["idle_after"]
            l.last_person_at, l.last_person_id = m.at, m.post_id
            l.quiet_due_at = now + dt.timedelta(seconds=idle) if idle else None
            l.due_at = l.quiet_due_at
    facts.save(s, listeners.values())
    log.info("first run: starting from post %s", newest, extra={"action": "first_run"})


def signins(ctx: Context, s, now: dt.datetime) -> int:
    """Read one batch of new sign-ins; a fresh one is an arrival for every other agent."""
    cur = cycle.claim_cursor(s, "signins")
    if cur is None:
        return 0
    rows = cycle.new_signins(s, cur.value, BATCH)
    if not rows:
        return 0
    window = dt.timedelta(seconds=ctx.cfg.arrival_window)
    fresh = [r for r in rows if r.at > now - window]
    listeners = facts.listeners(s, {(a, r.mood_id) for r in fresh for a in ctx.agents})
    for r in fresh:
        try:
            for a in ctx.agents:
                if r.participant_id == a:
                    continue  # its own sign-in would only be skipped; don't let it displace one
                l = listeners[(a, r.mood_id)]
                # The oldest sign-in not yet dealt with waits first; the ones
                # after it are taken in turn (see evaluate.next_arrival).
                l.arrival_signin_id = l.arrival_signin_id or r.id
                l.due_at = now if l.due_at is None else min(l.due_at, now)
        except Exception as exc:
            set_aside(s, "signin", r.id, r.mood_id, exc, now)
    facts.save(s, listeners.values())
    cycle.advance_cursor(s, cur, rows[-1].id, now)
    return len(rows)
