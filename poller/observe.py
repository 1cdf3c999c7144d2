"""Answers for operators: which wakes happened, why (or why not), what is running.

Also the emergency stop, which both records itself and ends running turns.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
from typing import Optional

import sqlalchemy as sa

from poller import errors, state, turns
from poller.models import Listener, Mood, Owed, Participant, Wake
from poller.store import Store
from poller.text import iso


def _wake_json(s, w: Wake, handles: dict, slugs: dict, full: bool = False) -> dict:
    out = {"id": w.id, "agent": handles[w.agent_id], "mood": slugs[w.mood_id], "kind": w.kind,
           "tools": w.tools, "status": w.status, "created_at": iso(w.created_at),
           "started_at": iso(w.started_at), "finished_at": iso(w.finished_at),
           "answers": state.answers(s, w.id), "dial_source": w.dial_source,
           "prompt_tokens": w.prompt_tokens, "reply_post_id": w.reply_post_id, "error": w.error}
    if full:
        out["text"] = w.text
    return out


def _names(s) -> tuple[dict, dict]:
    handles = dict(s.execute(sa.select(Participant.id, Participant.handle)).all())
    slugs = dict(s.execute(sa.select(Mood.id, Mood.slug)).all())
    return handles, slugs


def wakes(store: Store, mood: Optional[str] = None, agent: Optional[str] = None,
          kind: Optional[str] = None, limit: int = 50) -> list[dict]:
    if limit < 1:
        raise errors.UserError("--limit must be at least 1")
    mood_id = store.mood(mood).id if mood else None
    agent_id = store.agent(agent).id if agent else None
    with store.reading() as s:
        q = sa.select(Wake).order_by(Wake.id.desc()).limit(limit)
        if mood_id is not None:
            q = q.where(Wake.mood_id == mood_id)
        if agent_id is not None:
            q = q.where(Wake.agent_id == agent_id)
        if kind is not None:
            q = q.where(Wake.kind == kind)
        handles, slugs = _names(s)
        return [_wake_json(s, w, handles, slugs) for w in s.scalars(q)]


def wake(store: Store, wake_id: int) -> dict:
    with store.reading() as s:
        w = s.get(Wake, wake_id)
        if w is None:
            raise errors.NotFound(f"no wake {wake_id}")
        handles, slugs = _names(s)
        return _wake_json(s, w, handles, slugs, full=True)


def _scram(s) -> Optional[dict]:
    f = state.flag(s, "scram")
    return None if f is None else {"by": f.set_by, "at": iso(f.at)}


def why(store: Store, slug: str, handle: str, now: dt.datetime) -> dict:
    mood = store.mood(slug)
    agent = store.agent(handle)
    with store.reading() as s:
        decisions = {}
        for kind, d in state.latest_decisions(s, agent.id, mood.id).items():
            from poller.law import Decision as LawDecision

            code = LawDecision(d.outcome, d.reason, d.next_due).code
            decisions[kind] = {"outcome": d.outcome, "reason": d.reason, "code": code,
                               "at": iso(d.at), "last_at": iso(d.last_at), "count": d.count,
                               "next_due": iso(d.next_due), "wake_id": d.wake_id}
        l = s.get(Listener, (agent.id, mood.id))
        owed = len(state.owed_posts(s, agent.id, mood.id))
        flight = state.in_flight_here(s, agent.id, mood.id)
        hold = None
        if l is not None and l.hold_reason and owed:
            hold = {"reason": l.hold_reason, "since": iso(l.hold_since), "owed": owed}
        timers = {}
        if l is not None:
            timers = {"due_at": iso(l.due_at),
                      "consider_due_at": iso(l.consider_due_at) if l.consider_from_id else None,
                      "quiet_due_at": iso(l.quiet_due_at), "cooldown_until": iso(l.cooldown_until),
                      "quiet_backoff": l.quiet_backoff or None}
        return {"mood": slug, "agent": agent.handle, "scram": _scram(s), "hold": hold,
                "owed": owed, "in_flight": flight.id if flight else None,
                "decisions": decisions, "timers": timers}


def status(store: Store, now: dt.datetime) -> dict:
    with store.reading() as s:
        handles, slugs = _names(s)
        flight = s.scalars(sa.select(Wake).where(Wake.status.in_(state.IN_FLIGHT))
                           .order_by(Wake.id)).all()
        held = s.execute(sa.select(Listener.agent_id, Listener.mood_id, Listener.hold_reason)
                         .where(Listener.hold_reason.is_not(None))).all()
        owed_pairs = set(s.execute(sa.select(Owed.agent_id, Owed.mood_id).distinct()).all())
        agents = []
        for p, _ in state.agent_rows(s):
            at_work = [slugs[w.mood_id] for w in flight if w.agent_id == p.id]
            holds = [{"mood": slugs[m], "reason": r} for a, m, r in held
                     if a == p.id and (a, m) in owed_pairs]
            st = "at work" if at_work else ("holding" if holds else "idle")
            agents.append({"handle": p.handle, "state": st, "at_work": at_work, "held": holds})
        due = s.execute(sa.select(Listener.agent_id, Listener.mood_id, Listener.due_at)
                        .where(Listener.due_at.is_not(None)).order_by(Listener.due_at).limit(10)).all()
        return {"scram": _scram(s), "agents": sorted(agents, key=lambda a: a["handle"].lower()),
                "in_flight": [{"id": w.id, "agent": handles[w.agent_id], "mood": slugs[w.mood_id],
                               "kind": w.kind, "status": w.status,
                               "since": iso(w.started_at or w.created_at)} for w in flight],
                "next_due": [{"agent": handles[a], "mood": slugs[m], "due_at": iso(t)}
                             for a, m, t in due]}


def set_scram(store: Store, by: Optional[str], now: dt.datetime) -> int:
    """Set the emergency stop and end every running turn on this host."""
    if by:
        store.participant(by)
    ended = 0
    with store.writing() as s:
        state.set_flag(s, "scram", "on", by, now)
        for w in s.scalars(sa.select(Wake).where(Wake.status.in_(state.IN_FLIGHT))).all():
            if w.host == state.HOST and w.runner_pid and state.pid_alive(w.runner_pid, "poller.runner"):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(w.runner_pid, signal.SIGKILL)
            turns.close_turn(s, store.counter, w, "cut_off",
                             "the emergency stop ended it", now)
            ended += 1
    return ended


def lift_scram(store: Store, now: dt.datetime) -> bool:
    with store.writing() as s:
        lifted = state.clear_flag(s, "scram")
        if lifted:
            # Everything owed or deferred gets looked at again at once.
            s.execute(sa.update(Listener).where(Listener.due_at.is_not(None)).values(due_at=now))
            owed = s.execute(sa.select(Owed.agent_id, Owed.mood_id).distinct()).all()
            for a, m in owed:
                s.execute(sa.update(Listener).where(Listener.agent_id == a, Listener.mood_id == m)
                          .values(due_at=now))
    return lifted
