"""The schedules' routes in the JSON API: alarms (operators) and a person's check-in."""

from __future__ import annotations

from poller.schedules import agreements, alarms
from poller.web.auth import Refused
from poller.web.routes import (AGENT, BOOL, INT, MAYBE_TIME, S, SLUG, Call, Route, body_text,
                               path_id, schema_many, schema_obj, schema_out)


def list_alarms(c: Call):
    return alarms.listing(c.store, c.query.get("agent"), c.query.get("mood"))


def add_alarm(c: Call):
    given = [k for k in ("at", "daily", "cron") if k in c.body]
    if len(given) != 1:
        raise Refused(400, "bad_request", "the body needs exactly one of 'at', 'daily' or 'cron'")
    cutoff = c.body.get("lateness_cutoff_minutes", alarms.DEFAULT_CUTOFF_MINUTES)
    if not isinstance(cutoff, int) or isinstance(cutoff, bool):
        raise Refused(400, "bad_request", "'lateness_cutoff_minutes' must be an integer")
    view, warnings = alarms.add_named(
        c.store, agent=body_text(c.body, "agent"), mood=body_text(c.body, "mood"), now=c.now,
        kind=given[0], when=body_text(c.body, given[0]), tz=body_text(c.body, "tz"),
        note=body_text(c.body, "note", ""), set_by=c.who.handle, cutoff=cutoff)
    return dict(view, warnings=warnings)


def remove_alarm(c: Call):
    return alarms.remove(c.store, path_id(c, "alarm_id", "alarm"), c.now)


def my_checkin(c: Call):
    return agreements.status(c.store, c.who.handle, c.now)


def checkin_done(c: Call):
    """The "I'm here" button: a dated check-in for the deadline the person names."""
    return agreements.done(c.store, c.who.handle, body_text(c.body, "for"), c.now)


def checkin_accept(c: Call):
    view = agreements.accept(c.store, body_text(c.body, "code"), c.now)
    return {"person": view["person"], "consented": True}


ALARM = schema_out(id=INT, agent=S, mood=S, kind={"enum": ["at", "daily", "cron"]}, spec=S, tz=S,
             note=S, set_by=S, lateness_cutoff_minutes=INT, next={"type": ["string", "null"]},
             next_at=MAYBE_TIME, fired=INT, removed_at=MAYBE_TIME)


ROUTES: tuple[Route, ...] = (
    Route("GET", "/alarms", list_alarms, "Alarms and when each is next due (operators).",
          need="operator", query=(SLUG, AGENT), errors=(404,), returns=schema_many(ALARM)),
    Route("POST", "/alarms", add_alarm, "Add an alarm: one of at, daily, cron, with an IANA tz "
          "(operators); warnings name DST gaps and repeats.", need="operator", status=201,
          body=schema_obj({"agent": S, "mood": S, "at": S, "daily": S, "cron": S, "tz": S, "note": S,
                     "lateness_cutoff_minutes": INT}, ("agent", "mood", "tz")),
          errors=(400, 404), returns=ALARM),
    Route("DELETE", "/alarms/{alarm_id}", remove_alarm, "Remove an alarm (operators).",
          need="operator", errors=(404,), returns=ALARM),
    Route("GET", "/checkin", my_checkin, "The token's person's check-in agreement (not an "
          "emergency service).", errors=(404,), returns={"type": "object"}),
    Route("POST", "/checkin/done", checkin_done, "I'm here: a dated check-in for the deadline "
          "named (the next one or the latest passed).", errors=(400, 404),
          body=schema_obj({"for": S}, ("for",)), returns={"type": "object"}),
    Route("POST", "/checkin/accept", checkin_accept, "A contact agrees, with the single-use "
          "code from their invitation.", need=None, errors=(400,),
          body=schema_obj({"code": S}, ("code",)), returns=schema_out(person=S, consented=BOOL)),
)
