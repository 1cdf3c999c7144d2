"""``/api/v1``: the command line's verbs over HTTP, each route described once.

Every route is a :class:`Route`: its method and path, who may call it, its
query parameters and body, and a plain function of a :class:`Call` that
returns JSON-ready data.  :func:`poller.web.app.create_app` mounts them and
:mod:`poller.web.openapi` describes the very same list, so the document
cannot name a route that is not served, or miss one that is.

The functions call the store's verbs, so the API refuses what the CLI refuses,
with the same words.  A post is judged by the store's one door for posts
(``Store.admit``, then ``Store.ingest`` through :mod:`poller.web.batch`); a
post too long is answered 413 (:class:`poller.errors.PostTooLong`).
"""

from __future__ import annotations

import datetime as dt

import poller.schedules.api
from poller import errors, observe, settings, text
from poller.kinds import PostKind, WakeKind, WakeStatus, names
from poller.store import access, core, search
from poller.web.auth import Refused
from poller.web.routes import (AGENT, BOOL, INT, MAYBE_INT, MAYBE_TIME, S, SLUG, TIME, Call,
                               Param, Route, body_text, path_id, schema_many, schema_obj, schema_out)

PREFIX = "/api/v1"
MAX_LIMIT = 500


# -- Moods and posts -------------------------------------------------------------------------


def list_moods(c: Call):
    return [m.to_json() for m in c.store.moods(include_archived=bool(c.query.get("archived")))]


def add_mood(c: Call):
    return c.store.add_mood(body_text(c.body, "slug"), body_text(c.body, "title", ""), c.now).to_json()


def show_mood(c: Call):
    return c.store.mood(c.path["slug"]).to_json()


def list_posts(c: Call):
    limit = c.query.get("limit", 50)
    if not 1 <= limit <= MAX_LIMIT:
        raise Refused(400, "bad_request", f"limit must be 1 to {MAX_LIMIT}")
    posts = access.posts_page(c.store, c.path["slug"], after_id=c.query.get("after_id") or 0,
                              before_id=c.query.get("before_id"), limit=limit)
    return [p.to_json() for p in posts]


def add_post(c: Call):
    body = body_text(c.body, "text")
    reply_to = c.body.get("reply_to")  # an integer in range or null (handling.check_body)
    # Judged before the rate limit counts it and before it joins a batch.
    [ready] = c.store.admit([core.NewPost(c.path["slug"], c.who.handle, body, c.now,
                                          reply_to=reply_to)])
    c.door.post_limit.take(c.who.token_id)
    post = c.door.posts.post(ready)
    c.door.posted()
    return post.to_json()


def search_posts(c: Call):
    # Whoever may read (any signed-in person) reads every Mood's posts, archived ones too
    # (as /moods/{slug}/posts does): the search covers the same.
    q = c.query
    hits = search.search(c.store, q["q"], mood=q.get("mood"), sender=q.get("sender"),
                         since=q.get("since"), until=q.get("until"),
                         limit=q.get("limit", search.DEFAULT_LIMIT))
    return [h.to_json() for h in hits]


def add_signin(c: Call):
    c.door.signin_limit.take(c.who.token_id)
    row = c.store.add_signin(c.who.handle, c.path["slug"], c.now, label=body_text(c.body, "label", ""))
    c.door.posted()
    return {"id": row.id, "handle": row.who, "mood": row.mood, "label": row.label,
            "at": text.iso(row.at)}


def add_typing(c: Call):
    c.door.typing_limit.take(c.who.token_id)
    mood = c.store.signal_typing(c.who.handle, c.path["slug"], c.now)
    return {"mood": mood.slug, "handle": c.who.handle, "at": text.iso(c.now)}


# -- Settings --------------------------------------------------------------------------------


def get_settings(c: Call):
    resolved = c.store.resolved(c.now, mood=c.query.get("mood"), agent=c.query.get("agent"))
    return {r.key: {"value": r.value, "slot": r.slot, "until": text.iso(r.until)}
            for r in resolved.values()}


def set_settings(c: Call):
    mood, agent = c.body.get("mood"), c.body.get("agent")  # texts or null (check_body)
    # A person with full trust turns a Mood's dials; everywhere-at-once is an operator's.
    if mood is None and not c.who.operator:
        raise Refused(403, "forbidden", "only operators change settings for every Mood: "
                                        "name a Mood")
    if not (c.who.operator or c.who.trust == "full"):
        raise Refused(403, "forbidden", f"{c.who.handle} has trust {c.who.trust}: changing "
                                        "settings needs trust full")
    key = body_text(c.body, "key")
    if not c.who.operator and key in settings.KEYS and key not in settings.AGENT_SETTABLE:
        # The Mood's dials are its people's; its rules, letter, model, budgets and
        # limits are its operators' (they instruct agents and spend money).
        raise Refused(403, "forbidden", f"only operators change {key!r}; people with trust full "
                                        f"turn the dials: {', '.join(settings.AGENT_SETTABLE)}")
    until = c.body.get("until")
    until_at = text.parse_time(until, "until") if isinstance(until, str) else None
    if until is not None and until_at is None:
        raise Refused(400, "bad_request", "until must be an ISO 8601 time")
    change = c.store.set_setting(key, body_text(c.body, "value"), c.now, mood=mood,
                                 agent=agent, by=c.who.handle, note=body_text(c.body, "note", ""),
                                 until=until_at)
    c.door.posted()
    return {"key": change.key, "old": change.old, "new": change.new,
            "slot": settings.SLOT_NAMES[(mood is not None, agent is not None)],
            "mood": mood, "agent": agent, "until": text.iso(until_at)}


# -- Agents, wakes, why, status, scram ---------------------------------------------------------


def list_agents(c: Call):
    return agent_rows(c.store, c.now)


def agent_rows(store, now: dt.datetime) -> list[dict]:
    """Each agent with its state: idle, at work (since when, where), held, or away."""
    st = observe.status(store, now)
    flight = {}
    for w in st["in_flight"]:
        flight.setdefault(w["agent"], []).append({"mood": w["mood"], "since": w["since"],
                                                  "wake_id": w["id"], "kind": w["kind"],
                                                  "progress": w["progress"]})
    day = access.agents_since(store, now.replace(hour=0, minute=0, second=0, microsecond=0))
    due = {}
    for d in st["next_due"]:
        due.setdefault(d["agent"], d["due_at"])
    out = []
    for a in st["agents"]:
        state = a["state"]
        if state == "idle" and store.resolved(now, agent=a["handle"])["listening"].value == "off":
            state = "away"
        today = day.get(a["handle"], access.AgentDay(0, 0))
        out.append({"handle": a["handle"], "state": state, "at_work": flight.get(a["handle"], []),
                    "held": a["held"], "owed": a["owed"], "next_due": due.get(a["handle"]),
                    "turns_today": today.turns, "tokens_today": today.tokens,
                    "usd_today": today.usd, "away": a["away"]})
    return out


def list_wakes(c: Call):
    q = c.query
    return observe.wakes(c.store, mood=q.get("mood"), agent=q.get("agent"), kind=q.get("kind"),
                         status=q.get("status"), since=q.get("since"), limit=q.get("limit", 50))


def show_wake(c: Call):
    return observe.wake(c.store, path_id(c, "wake_id", "wake"))


def why(c: Call):
    return observe.why(c.store, c.query["mood"], c.query["agent"], c.now)


def status(c: Call):
    return observe.status(c.store, c.now)


def set_scram(c: Call):
    return {"scram": True, "turns_ended": observe.set_scram(c.store, c.who.handle, c.now)}


def lift_scram(c: Call):
    return {"scram": False, "lifted": observe.lift_scram(c.store, c.now)}


def me(c: Call):
    return c.who.to_json()


MOOD = schema_out(id=INT, slug=S, title=S, archived=BOOL, created_at=TIME)
POST = schema_out(id=INT, mood=S, sender=S, sender_kind={"enum": ["person", "agent"]},
            created_at=TIME, kind={"enum": list(names(PostKind))}, text=S,
            reply_to=MAYBE_INT, tokens=INT)
HIT = schema_out(id=INT, mood=S, sender=S, sender_kind={"enum": ["person", "agent"]},
                 created_at=TIME, kind={"enum": list(names(PostKind))}, reply_to=MAYBE_INT,
                 snippet=S, parts=schema_many(schema_out(text=S, match=BOOL)))
WAKE = schema_out(id=INT, agent=S, mood=S, kind={"enum": list(names(WakeKind))},
            tools={"enum": ["full", "look"]}, status={"enum": list(names(WakeStatus))},
            created_at=TIME, started_at=MAYBE_TIME, finished_at=MAYBE_TIME,
            answers=schema_many(INT), dial_source=S, prompt_tokens=INT, reply_post_id=MAYBE_INT,
            error=S)
WAKE_FULL = {**WAKE, "properties": {**WAKE["properties"], "text": S},
             "required": WAKE["required"] + ["text"]}
MAYBE_S = {"type": ["string", "null"]}
# progress: what a Claude Code turn is doing now (the tool, a file's name), or null
AT_WORK = schema_out(mood=S, since=TIME, wake_id=INT, kind=S, progress=MAYBE_S)
HELD = schema_out(mood=S, reason=S)
AWAY = {"type": ["object", "null"], "properties": {
    "activity": S, "label": S, "mood": S, "since": TIME, "back_about": TIME,
    "reachable": BOOL, "called_back": BOOL, "line": S}}
AGENT_STATE = schema_out(handle=S, state={"enum": ["idle", "at work", "holding", "away"]},
                   at_work=schema_many(AT_WORK), held=schema_many(HELD), owed=INT, next_due=MAYBE_TIME,
                   turns_today=INT, tokens_today=INT, usd_today={"type": "number"}, away=AWAY)
SETTINGS = {"type": "object", "additionalProperties": schema_out(
    value={"type": ["string", "integer", "number", "null"]}, slot=S, until=MAYBE_TIME)}
SCRAM = {"type": ["object", "null"], "properties": {"by": {"type": ["string", "null"]},
                                                     "at": TIME}}
STATUS = schema_out(scram=SCRAM, agents=schema_many({"type": "object"}), in_flight=schema_many({"type": "object"}),
              next_due=schema_many({"type": "object"}), quarantined=schema_many({"type": "object"}),
              scheduled=schema_many(schema_out(what={"enum": ["alarm", "checkin"]}, agent=S, mood=S,
                                   at=TIME, local=S)),
              undelivered=schema_many(schema_out(what=S, id=INT, to=S, event=S, status=S,
                                                 error=S)),
              # tools turns wait to be allowed (`mood-poller approve ID`), oldest first
              approvals=schema_many(schema_out(id=INT, wake_id=INT, agent=S, mood=S, tool=S,
                                               input=S, status=S, asked_at=TIME)))
WHY = schema_out(mood=S, agent=S, scram=SCRAM, hold={"type": ["object", "null"]}, owed=INT,
           in_flight=MAYBE_INT, decisions={"type": "object"}, timers={"type": "object"},
           quarantined=schema_many({"type": "object"}), first_cycle_run=BOOL,
           mentions_before_first_cycle=INT, away=AWAY)


ROUTES: tuple[Route, ...] = (
    Route("GET", "/me", me, "The person the token belongs to.",
          returns=schema_out(handle=S, trust={"enum": ["full", "look", "none"]}, operator=BOOL)),
    Route("GET", "/moods", list_moods, "Every Mood.", returns=schema_many(MOOD),
          query=(Param("archived", "integer", "1: include archived Moods."),)),
    Route("POST", "/moods", add_mood, "Create a Mood (operators).", need="operator", status=201,
          body=schema_obj({"slug": S, "title": S}, ("slug",)), errors=(400, 409), returns=MOOD),
    Route("GET", "/moods/{slug}", show_mood, "One Mood.", errors=(404,), returns=MOOD),
    Route("GET", "/moods/{slug}/posts", list_posts,
          "Posts, oldest first: after after_id the oldest, else the newest (before before_id).",
          query=(Param("after_id", "integer", "Only posts after this id."),
                 Param("before_id", "integer", "Only posts before this id."),
                 Param("limit", "integer", f"How many (1-{MAX_LIMIT}, default 50).")),
          errors=(400, 404), returns=schema_many(POST)),
    Route("POST", "/moods/{slug}/posts", add_post,
          "Post as the token's person (trust look or full), as `mood-poller post` does.",
          need="post", status=201, errors=(400, 404, 413, 429),
          body=schema_obj({"text": S, "reply_to": {"type": "integer"}}, ("text",)), returns=POST),
    Route("GET", "/search", search_posts,
          "Posts holding every word of q, best first, in every Mood: an excerpt of each with "
          "the matched words marked \u00ablike this\u00bb (snippet) and as parts to render.",
          query=(Param("q", "string", "The words; every one must be in a post.", required=True),
                 SLUG, Param("sender", "string", "Only posts by this person or agent (handle)."),
                 Param("since", "time", "Only posts made at or after this time."),
                 Param("until", "time", "Only posts made before this time."),
                 Param("limit", "integer", f"How many (1-{search.MAX_LIMIT}, default "
                                           f"{search.DEFAULT_LIMIT}).")),
          errors=(400, 404), returns=schema_many(HIT)),
    Route("POST", "/moods/{slug}/signins", add_signin,
          "Record that the token's person signed in to the Mood (an arrival).", status=201,
          body=schema_obj({"label": S}, ()), errors=(400, 404, 429),
          returns=schema_out(id=INT, handle=S, mood=S, label=S, at=TIME)),
    Route("POST", "/moods/{slug}/typing", add_typing,
          "Signal that the token's person is typing: considers in the Mood wait 15 s after the "
          "newest signal.", errors=(404, 429), returns=schema_out(mood=S, handle=S, at=TIME)),
    Route("GET", "/moods/{slug}/events", None,
          "Server-Sent Events: post (its `html` the post as the web page shows it), "
          "turn_started, turn_ended, working, holds. Resume with "
          "Last-Event-ID (or ?after=) as sent in each event's id.",
          query=(Param("after", "string", "Resume after this event id (POST_ID.WAKE_ID)."),),
          produces="text/event-stream", errors=(404,)),
    Route("GET", "/settings", get_settings,
          "Resolved settings for a Mood and agent, and the slot each came from.",
          query=(SLUG, AGENT), errors=(404,), returns=SETTINGS),
    Route("PUT", "/settings", set_settings,
          "Set a key (trust full for a Mood's dials; operators for every Mood), validated as "
          "`mood-poller set` validates it.", need="post", errors=(400, 404),
          body=schema_obj({"key": S, "value": S, "mood": S, "agent": S, "note": S,
                     "until": {"type": "string", "format": "date-time"}}, ("key", "value")),
          returns=schema_out(key=S, old={}, new={}, slot=S, mood={"type": ["string", "null"]},
                       agent={"type": ["string", "null"]}, until=MAYBE_TIME)),
    Route("GET", "/agents", list_agents,
          "Agents: idle, at work (since, where), holding or away; holds, next due, turns and "
          "tokens today.", returns=schema_many(AGENT_STATE)),
    Route("GET", "/wakes", list_wakes, "Recent wakes, newest first (operators).", need="operator",
          query=(SLUG, AGENT, Param("kind", "string", "Only this kind.", names(WakeKind)),
                 Param("status", "string", "Only this status.", names(WakeStatus)),
                 Param("since", "time", "Only wakes recorded at or after this time."),
                 Param("limit", "integer", "How many (default 50).")), errors=(400, 404),
          returns=schema_many(WAKE)),
    Route("GET", "/wakes/{wake_id}", show_wake,
          "One wake in full: the exact text the agent was shown (operators).", need="operator",
          errors=(404,), returns=WAKE_FULL),
    Route("GET", "/why", why, "Why did (or didn't) an agent wake in a Mood (operators).",
          need="operator", query=(Param("mood", "string", "The Mood.", required=True),
                                  Param("agent", "string", "The agent.", required=True)),
          errors=(400, 404), returns=WHY),
    Route("GET", "/status", status, "Turns in flight, holds, what is due (operators).",
          need="operator", returns=STATUS),
    Route("POST", "/scram", set_scram, "Emergency stop: wake nothing, end running turns "
          "(operators).", need="operator", returns=schema_out(scram=BOOL, turns_ended=INT)),
    Route("DELETE", "/scram", lift_scram, "Lift the emergency stop (operators).",
          need="operator", returns=schema_out(scram=BOOL, lifted=BOOL)),
    *poller.schedules.api.ROUTES,
    Route("GET", "/openapi.json", None, "This document.", need=None,
          returns={"type": "object", "required": ["openapi", "paths"]}),
)


ERROR_STATUS = (
    (errors.PostTooLong, 413, "post_too_long"),
    (errors.NotFound, 404, "not_found"),
    (errors.AlreadyExists, 409, "conflict"),
    (errors.InvalidSetting, 400, "invalid_setting"),
    (errors.UserError, 400, "bad_request"),
    (errors.StoreBusy, 503, "busy"),
    (errors.StoreError, 503, "store_error"),
    (errors.PollerError, 500, "error"),
)


def refusal(exc: errors.PollerError) -> Refused:
    """The library's error as an HTTP refusal, its sentence kept."""
    for cls, status, code in ERROR_STATUS:
        if isinstance(exc, cls):
            return Refused(status, code, str(exc))
    raise AssertionError("unreachable")  # PollerError is in the table
