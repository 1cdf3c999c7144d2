"""Answers for operators: which wakes happened, why (or why not), what is running.

Also the emergency stop, which both records itself and ends running turns.
The reads are :mod:`poller.store.ops` verbs; this module shapes them.
"""

from __future__ import annotations

import datetime as dt
from typing import Optional

from poller import errors, law, settings
from poller.away import presence
from poller.cycle.recover import stop_turn
from poller.store import Store, absences, cycle, ops
from poller.store.core import resolve_in
from poller.text import iso


def _wake_json(w: ops.WakeRecord, full: bool = False) -> dict:
    out = {"id": w.id, "agent": w.agent, "mood": w.mood, "kind": w.kind, "tools": w.tools,
           "status": w.status, "created_at": iso(w.created_at), "started_at": iso(w.started_at),
           "finished_at": iso(w.finished_at), "answers": list(w.answers),
           "dial_source": w.dial_source, "prompt_tokens": w.prompt_tokens,
           "reply_post_id": w.reply_post_id, "error": w.error}
    if full:
        out["text"] = w.text
    return out


def wakes(store: Store, mood: Optional[str] = None, agent: Optional[str] = None,
          kind: Optional[str] = None, limit: int = 50, status: Optional[str] = None,
          since: Optional[dt.datetime] = None) -> list[dict]:
    if limit < 1:
        raise errors.UserError("--limit must be at least 1")
    mood_id = store.mood(mood).id if mood else None
    agent_id = store.agent(agent).id if agent else None
    with store.reading() as s:
        return [_wake_json(w) for w in ops.wakes(s, mood_id, agent_id, kind, limit,
                                                 status=status, since=since)]


def wake(store: Store, wake_id: int) -> dict:
    with store.reading() as s:
        w = ops.wake(s, wake_id)
        u = ops.usage(s, wake_id) if w is not None else None
    if w is None:
        raise errors.NotFound(f"no wake {wake_id}")
    from poller.store import capabilities

    asked = capabilities.approvals_of(store, wake_id)
    return _wake_json(w, full=True) | {"usage": None if u is None else {
        "tokens_in": u.tokens_in, "tokens_out": u.tokens_out, "cost_usd": u.cost_usd},
        "progress": w.progress, "approvals": [a.to_json() for a in asked]}


def _scram(s) -> Optional[dict]:
    f = ops.scram(s)
    return None if f is None else {"by": f.by, "at": iso(f.at)}


def why(store: Store, slug: str, handle: str, now: dt.datetime) -> dict:
    mood = store.mood(slug)
    agent = store.agent(handle)
    with store.reading() as s:
        decisions = {}
        for kind, d in ops.latest_decisions(s, agent.id, mood.id).items():
            decisions[kind] = {"outcome": d.outcome, "reason": d.reason,
                               "code": law.Decision(d.outcome, d.reason, d.next_due).code,
                               "sentence": law.explain(d.reason), "at": iso(d.at), "last_at": iso(d.last_at), "count": d.count,
                               "next_due": iso(d.next_due), "wake_id": d.wake_id,
                               **({"detail": d.detail} if d.detail else {})}
            if d.wake_id is not None:
                # "woke" is half the answer: how did the turn it started end?
                w = ops.wake(s, d.wake_id)
                decisions[kind]["turn"] = {"status": w.status, "error": w.error}
        l = ops.listener(s, agent.id, mood.id)
        owed = len(cycle.owed_posts(s, agent.id, mood.id))
        left = cycle.left_unanswered(s, agent.id, mood.id, l.followup_of if l is not None else 0)
        flight = cycle.in_flight_here(s, agent.id, mood.id)
        scram = _scram(s)
        aside = [_aside_json(q) for q in ops.quarantined(s, agent.id, mood.id)]
        history = cycle.history_before(s)
        before = cycle.mentions_before(s, agent.id, mood.id, history) if history else 0
        floor = _floor(s, mood.id, decisions, now)
        untrusted = ops.untrusted_mentions(s, agent.id, mood.id)
        out = _away(s, now).get(agent.id)
    hold = None
    if l is not None and l.hold_reason and owed:
        hold = {"reason": l.hold_reason, "since": iso(l.hold_since), "owed": owed}
    timers = {}
    if l is not None:
        timers = {"due_at": iso(l.due_at), "consider_due_at": iso(l.consider_due_at),
                  "quiet_due_at": iso(l.quiet_due_at), "cooldown_until": iso(l.cooldown_until),
                  "quiet_backoff": l.quiet_backoff or None}
    return {"mood": slug, "agent": agent.handle, "scram": scram, "hold": hold,
            "owed": owed, "left_unanswered": sorted(p for ps in left.values() for p in ps),
            "in_flight": flight.id if flight else None,
            "decisions": decisions, "timers": timers, "quarantined": aside,
            "first_cycle_run": history is not None, "mentions_before_first_cycle": before,
            "floor": floor, "away": out, "untrusted_mentions": untrusted}


FLOOR_TAKEN = "floor-taken-by-"


def _floor(s, mood_id: int, decisions: dict, now: dt.datetime) -> Optional[dict]:
    """When the floor went to someone else: who holds it, and the initiative order of the
    Mood's agents with each one's score, as it stands now (``law.initiative``)."""
    holder = next((d["reason"].removeprefix(FLOOR_TAKEN) for d in decisions.values()
                   if d["outcome"] == "defer" and d["reason"].startswith(FLOOR_TAKEN)), None)
    if holder is None:
        return None
    cache = cycle.SettingsCache()
    cache.refresh(s)
    contenders = []
    for c in ops.floor_contenders(s, mood_id):
        values = cache.values(mood_id, c.agent_id, now)
        contenders.append(law.Contender(c.agent_id, c.handle, values["initiative_speed"],
                                        values["heat"], c.last_spoke, c.load))
    order = [{"agent": x.handle, "score": x.score, "readiness_h": x.readiness_h,
              "speed": x.speed, "heat": x.heat, "load": x.load}
             for x in law.initiative(contenders, now)]
    return {"holder": holder, "order": order}


def _aside_json(q: ops.QuarantineRecord) -> dict:
    return {"kind": q.kind, "ref": q.ref, "mood": q.mood, "error": q.error, "at": iso(q.at),
            "last_at": iso(q.last_at), "count": q.count}


def _away_json(s, a: absences.Absence, slugs: dict, now: dt.datetime) -> dict:
    zone = settings.values(resolve_in(s, None, a.agent_id, now))["timezone"]
    return {"activity": a.activity, "label": a.label, "mood": slugs.get(a.mood_id),
            "since": iso(a.departed_at), "back_about": iso(a.due_at), "reachable": a.reachable,
            "called_back": a.cut_short_by is not None,
            "line": presence(a.label, a.due_at, zone)}


def away(store: Store, now: dt.datetime) -> dict[int, dict]:
    """The agents out on an activity, by id: what, since when, back about when."""
    with store.reading() as s:
        return _away(s, now)


def away_lines(store: Store, now: dt.datetime) -> dict[str, str]:
    """Each agent out on an activity, by handle: the line its presence shows."""
    with store.reading() as s:
        handles, _ = ops.names(s)
        return {handles[i]: a["line"] for i, a in _away(s, now).items() if i in handles}


def _away(s, now: dt.datetime) -> dict[int, dict]:
    out = absences.everyone_out(s)
    if not out:
        return {}
    _, slugs = ops.names(s)
    return {a.agent_id: _away_json(s, a, slugs, now) for a in out}


def activities(store: Store, agent: Optional[str] = None, limit: int = 50) -> list[dict]:
    """Absences, newest first: who, what, from where, from when to when, how it ended."""
    if limit < 1:
        raise errors.UserError("--limit must be at least 1")
    agent_id = store.agent(agent).id if agent else None
    with store.reading() as s:
        rows = absences.history(s, agent_id, limit)
        handles, slugs = ops.names(s)
    return [{"id": a.id, "agent": handles.get(a.agent_id), "activity": a.activity,
             "label": a.label, "note": a.note, "mood": slugs.get(a.mood_id),
             "reachable": a.reachable, "departed_at": iso(a.departed_at),
             "due_at": iso(a.due_at), "returned_at": iso(a.returned_at), "status": a.status,
             "cut_short": a.cut_short_by is not None,
             "cut_short_by": handles.get(a.cut_short_by) if a.cut_short_by else None,
             "missed_pings": a.missed, "fresh_eyes": a.fresh_eyes} for a in rows]


def status(store: Store, now: dt.datetime) -> dict:
    with store.reading() as s:
        o = ops.overview(s)
        states = ops.agent_states(s)
        scram = _scram(s)
        aside = [_aside_json(q) for q in ops.quarantined(s)]
        pollers = _pollers(s, now)
        out = _away(s, now)
        scheduled = _scheduled(s)
        undelivered = _undelivered(s)
        spent = ops.spent_since(s, now - dt.timedelta(hours=24))
    agents = []
    for agent_id, handle in o.agents.items():
        at_work = [w.mood for w in o.in_flight if w.agent == handle]
        holds = [{"mood": h.mood, "reason": h.reason} for h in o.holds if h.agent_id == agent_id]
        st = "at work" if at_work else ("away" if agent_id in out else
                                        "holding" if holds else "idle")
        state = states.get(agent_id)
        last, said = (state.last_turn, state.last_decision) if state else (None, None)
        agents.append({
            "handle": handle, "state": st, "at_work": at_work, "held": holds,
            "owed": o.owed.get(agent_id, 0),
            "left_unanswered": o.unanswered.get(agent_id, 0),
            "load": len(at_work),  # its turns in flight, anywhere
            "next_ready": [{"mood": d.mood, "at": iso(d.due_at)}
                           for d in (state.next_ready if state else [])],
            "last_turn": None if last is None else {
                "id": last.id, "mood": last.mood, "kind": last.kind, "status": last.status,
                "at": iso(last.finished_at)},
            "why": None if said is None else {
                **said, "at": iso(said["at"]),
                "code": law.Decision(said["outcome"], said["reason"]).code},
            "away": out.get(agent_id),
            "spent_24h": _spent_json(spent.get(agent_id)),
        })
    return {"scram": scram, "agents": sorted(agents, key=lambda a: a["handle"].lower()),
            "in_flight": [{"id": w.id, "agent": w.agent, "mood": w.mood, "kind": w.kind,
                           "status": w.status, "since": iso(w.started_at or w.created_at),
                           "progress": w.progress}
                          for w in o.in_flight],
            "next_due": [{"agent": d.agent, "mood": d.mood, "due_at": iso(d.due_at)}
                         for d in o.due],
            "quarantined": aside, "scheduled": scheduled, "undelivered": undelivered,
            "approvals": _approvals(store), **pollers}


def _approvals(store: Store) -> list[dict]:
    """The tools turns wait to be allowed, oldest first (``mood-poller approve ID``)."""
    from poller.store import capabilities

    return [a.to_json() for a in capabilities.pending_in(store)]


def _spent_json(u: Optional[ops.Usage]) -> dict:
    """Tokens in and out and US dollars of an agent's turns (zeros for none)."""
    return {"tokens_in": u.tokens_in if u else 0, "tokens_out": u.tokens_out if u else 0,
            "usd": round(u.cost_usd, 6) if u else 0.0}


def _scheduled(s) -> list[dict]:
    """The next alarms and check-in deadlines (or grace ends), soonest first."""
    from poller.schedules import timing
    from poller.store import schedules

    found = schedules.upcoming(s)
    names = schedules.handles(s, {r[1] for r in found})
    places = schedules.slugs(s, {r[2] for r in found})
    return [{"what": what, "agent": names[a], "mood": places[m], "at": iso(at),
             "local": timing.shown(at, tz)} for what, a, m, at, tz in found]


def _undelivered(s) -> list[dict]:
    """What will not go out unless an operator acts: mail that failed (or may have been
    sent), bridge items that failed; the newest, with why."""
    from poller.store import outbox, schedules

    mail = [{"what": "mail", "id": m.id, "to": m.recipient, "event": m.purpose,
             "status": m.state, "error": m.error} for m in schedules.mail_given_up(s)]
    items = [{"what": i.bridge, "id": i.id, "to": i.target, "event": i.event,
              "status": i.status, "error": i.last_error}
             for i in outbox.listed(s, failed=True, limit=20)]
    return mail + items


STALE_INTERVALS = 3  # a poller that has not cycled for this many intervals is not counted


def _pollers(s, now: dt.datetime) -> dict:
    """The running pollers (a beat within a few intervals) and which serves each Mood."""
    from poller.scope import Scope
    from poller.store import access, cycle

    live = [b for b in access.beats(s)
            if (now - b.at).total_seconds() <= STALE_INTERVALS * max(b.interval, 1.0) + b.took]
    scopes = [(b.holder, Scope.from_description(b.scope)) for b in live]
    return {"pollers": [{"holder": b.holder, "serves": b.scope, "at": iso(b.at)} for b in live],
            "served_by": {slug: [h for h, scope in scopes if scope.serves(slug)]
                          for slug in sorted(cycle.mood_slugs(s).values())}}


def set_scram(store: Store, by: Optional[str], now: dt.datetime) -> int:
    """Set the emergency stop and end every running turn (this host's runners are killed)."""
    if by:
        store.participant(by)
    ended = 0
    with store.writing() as s:
        cycle.set_flag(s, "scram", "on", by, now)
        for w in ops.in_flight(s):
            stop_turn(store.counter, s, w, "the emergency stop ended it", now)
            ended += 1
    return ended


def stop_agent(store: Store, handle: str, slug: str, by: Optional[str],
               now: dt.datetime) -> dict:
    """Stop one agent in one Mood: end its turn there and hold its wakes there until lifted."""
    agent, mood = store.agent(handle), store.mood(slug)
    who = store.participant(by).handle if by else ""
    with store.writing() as s:
        new, running = ops.stop_pair(s, agent.id, mood.id, who, now)
        for w in running:
            stop_turn(store.counter, s, w, f"stopped in {slug}" + (f" by {who}" if who else ""), now)
        if new:
            body = stopped_note(agent.handle, who)
            cycle.add_system_post(s, mood.id, agent.id, body, now, store.counter.count(body))
    return {"agent": agent.handle, "mood": slug, "stopped": True, "already": not new,
            "turns_ended": len(running)}


def lift_stop(store: Store, handle: str, slug: str, now: dt.datetime) -> bool:
    agent, mood = store.agent(handle), store.mood(slug)
    with store.writing() as s:
        lifted = ops.lift_pair(s, agent.id, mood.id, now)
        if lifted:
            body = resumed_note(agent.handle)
            cycle.add_system_post(s, mood.id, agent.id, body, now, store.counter.count(body))
    return lifted


def stopped_note(handle: str, by: str) -> str:
    who = f" by {by}" if by else ""
    return (f"@{handle} was stopped here{who}: it starts no turn here until the stop is lifted; "
            f"mentions of it wait and are answered then.")


def resumed_note(handle: str) -> str:
    return f"@{handle} may take turns here again."


def lift_scram(store: Store, now: dt.datetime) -> bool:
    with store.writing() as s:
        lifted = cycle.clear_flag(s, "scram")
        if lifted:
            ops.wake_everything_owed(s, now)
    return lifted


