"""The web pages: signing in, the Moods, a Mood's conversation, and the operators' views.

Server-rendered Jinja (autoescaped; a post's markdown rendered and sanitized by
:mod:`poller.markup`, one way for a page load and a live update alike) with a
little plain JavaScript from ``static/`` for the live parts (the Mood page's
stream and post box, the sign-in link).  Every form carries a CSRF token
bound to the session (or, before signing in, to a pre-sign-in cookie).
"""

from __future__ import annotations

import re
import secrets
from typing import Optional
from urllib.parse import quote

import python_multipart
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from poller import errors, observe, text
from poller.kinds import WakeKind, WakeStatus, names
from poller.store import access, capabilities, history, visits
from poller.store import ops as store_ops
from poller.web import api, auth, charts, operating, view
from poller.web.handling import check_texts, guarded, parse_query

# Starlette parses forms with python-multipart; importing it here fails at start, not at
# the first form, when it is missing.
FORM_PARSER = python_multipart.__name__
POSTS_SHOWN = 100


render = view.render  # (the operators' pages render through view as well)


# "(see `mood-poller mood list`)": a hint for the command line, not for the page's reader.
COMMAND_HINT = re.compile(r"\s*\((?:see |run )?`mood-poller [^`]*`[^)]*\)")


def refused(request: Request, exc: auth.Refused) -> Response:
    if exc.status == 401 and request.method == "GET":
        return RedirectResponse(f"/signin?next={quote(request.url.path)}", status_code=303)
    page = render(request, "refused.html", status=exc.status, refusal=exc,
                  detail=COMMAND_HINT.sub("", exc.detail))
    page.headers.update(exc.headers)  # Allow, WWW-Authenticate, Retry-After: as the API's
    return page


def routes(door) -> list[Route]:
    def page(need: str, build, methods=("GET",)):
        async def endpoint(request: Request) -> Response:
            form = await request.form(max_files=0) if request.method == "POST" else {}
            check_texts(request, form)

            def work():
                caller = door.caller(request)
                request.state.caller = caller
                who = auth.require(caller, need)
                if request.method == "POST":
                    door.keys.check_csrf(caller.session, form.get("csrf")
                                         or request.headers.get("x-csrf-token"))
                return build(request, door, who, form)

            return await guarded(work)

        return endpoint

    return [
        Route("/signin", signin_page, methods=["GET"]),
        Route("/signin", _signin(door), methods=["POST"]),
        Route("/signout", page("read", signout, ("POST",)), methods=["POST"]),
        Route("/", page("read", moods_page)),
        Route("/m/{slug}", page("read", mood_page)),
        Route("/checkin/done", page("read", checkin_form, ("POST",)), methods=["POST"]),
        Route("/m/{slug}/posts", page("post", post_form), methods=["POST"]),
        Route("/m/{slug}/here", page("read", here_form, ("POST",)), methods=["POST"]),
        Route("/m/{slug}/approvals/{approval_id}", page("read", approval_form, ("POST",)),
              methods=["POST"]),
        Route("/search", page("read", search_page)),
        Route("/ops/agents", page("operator", agents_page)),
        Route("/ops/wakes", page("operator", wakes_page)),
        Route("/ops/wakes/{wake_id}", page("operator", wake_page)),
        Route("/ops/why", page("operator", why_page)),
        Route("/ops/dials", page("operator", dials_page)),
        Route("/ops/scram", page("operator", scram_form), methods=["POST"]),
        *operating.routes(page),
    ]


# -- Signing in and out --------------------------------------------------------------------------


async def signin_page(request: Request) -> Response:
    request.state.caller = None
    # Always a fresh one: a value the client brought could be one an attacker planted,
    # to know the form's CSRF token (a sign-in forged into the attacker's account).
    pre = secrets.token_urlsafe(24)
    response = render(request, "signin.html", binding=pre,
                      next=_local(request.query_params.get("next")), error=None)
    response.set_cookie(auth.PRE_COOKIE, pre, httponly=True, samesite="strict", path="/signin",
                        secure=request.app.state.door.options.secure_cookie)
    return response


def _signin(door):
    async def endpoint(request: Request) -> Response:
        form = await request.form(max_files=0)
        request.state.caller = None
        door.keys.check_csrf(request.cookies.get(auth.PRE_COOKIE, ""), form.get("csrf"))
        token = str(form.get("token") or "").strip()

        def work():
            who = access.identify(door.store, token)
            return (who, access.open_session(door.store, who, door.clock())) if who else None

        opened = await guarded(work)
        if opened is None:
            return render(request, "signin.html", status=401, next=_local(form.get("next")),
                          error="That token is unknown or was revoked.")
        response = RedirectResponse(_local(form.get("next")), status_code=303)
        response.set_cookie(auth.COOKIE, opened[1], max_age=int(access.SESSION_TTL.total_seconds()),
                            httponly=True, samesite="strict", path="/",
                            secure=door.options.secure_cookie)
        response.delete_cookie(auth.PRE_COOKIE, path="/signin")
        return response

    return endpoint


def signout(request, door, who, form) -> Response:
    access.close_session(door.store, request.state.caller.session)
    response = RedirectResponse("/signin", status_code=303)
    response.delete_cookie(auth.COOKIE, path="/")
    return response


def _local(target) -> str:
    """Only a path on this site is followed after signing in (never //elsewhere)."""
    target = str(target or "/")
    return target if target.startswith("/") and not target.startswith("//") and "\\" not in target else "/"


# -- People's pages ---------------------------------------------------------------------------------


def moods_page(request, door, who, form) -> Response:
    card = checkin_card(door, who)
    if card and request.query_params.get("for"):
        # After a submit the button keeps the deadline it named (pressing again changes
        # nothing); Refresh (the page without ?for=) moves it to what the status shows.
        card.update(target=request.query_params["for"][:80], kept=True)
    return render(request, "moods.html", moods=visits.moods_for(door.store, who.person_id,
                                                                 door.clock()),
                  checkin=card, unread_cap=visits.UNREAD_CAP)


def checkin_card(door, who) -> Optional[dict]:
    """The person's check-in agreement as the card shows it, with the one deadline its
    I'm here button names: the newest missed one, else the next.  None without one."""
    from poller.schedules import agreements
    from poller import errors

    try:
        view = agreements.status(door.store, who.handle, door.clock())
    except errors.NotFound:
        return None
    streak = view["streak"] if view["streak"] and view["streak"]["open"] else None
    missed = (view["missed_unprocessed"] or [None])[-1] or (streak or {}).get("last_due")
    return dict(view, target=missed or view["next_deadline"], missed=missed)


def checkin_form(request, door, who, form) -> Response:
    """I'm here: a dated check-in for exactly the deadline the button named."""
    from poller.schedules import agreements

    named = str(form.get("for") or "")
    agreements.done(door.store, who.handle, named, door.clock())
    return RedirectResponse(f"/?for={quote(named)}", status_code=303)


def mood_page(request, door, who, form) -> Response:
    """The conversation, live; with ``?before=ID`` an earlier page of it (not live)."""
    slug = request.path_params["slug"]
    before = request.query_params.get("before", "")
    try:
        before_id = text.parse_whole(before, "before", lowest=1) if before else None
    except errors.UserError:
        raise auth.Refused(400, "bad_request", "before must be a post id") from None
    mood = door.store.mood(slug)  # looking is not arriving: "I'm here" signs in (here_form)
    heads = access.heads(door.store)
    posts = access.posts_page(door.store, slug, limit=POSTS_SHOWN, before_id=before_id)
    earlier = posts[0].id if len(posts) == POSTS_SHOWN else None
    handles = {a.id: a.handle for a in door.store.agents()}
    away = [(handles[a], out["line"]) for a, out in observe.away(door.store, door.clock()).items()
            if a in handles]
    if not before and posts:  # read up to here (the stream moves it on as posts come)
        visits.mark(door.store, who.person_id, mood.id, posts[-1].id, door.clock())
    asked = capabilities.by_notices(door.store, [p.id for p in posts if p.kind == "system"])
    strip = history.mood_days(door.store, slug, door.clock())
    activity = charts.bars([d.day for d in strip], [d.posts for d in strip], "posts a day",
                           css="activity")
    return render(request, "mood.html", mood=mood, activity=activity,
                  posts=[view.page_post(p.to_json(), asked.get(p.id)) for p in posts],
                  after=f"{posts[-1].id if posts else 0}.{heads.wake_id}", earlier=earlier,
                  live=not before, away=sorted(away))


def here_form(request, door, who, form) -> Response:
    """"I'm here": the person signs in to the Mood, an arrival the agents may greet (a page
    view is not one, so browsing costs no turns); sign-ins are rate-limited as the API's."""
    slug = request.path_params["slug"]
    door.store.mood(slug)
    door.signin_limit.take(who.token_id)
    door.store.add_signin(who.handle, slug, door.clock(), label="web")
    door.posted()
    return RedirectResponse(f"/m/{slug}", status_code=303)


def approval_form(request, door, who, form) -> Response:
    """Approve or Deny on an approval notice: decided as ``mood-poller approve`` decides,
    by the person who pressed it; refused in one line when they may not or it is over."""
    slug = request.path_params["slug"]
    try:
        approval_id = text.parse_whole(request.path_params["approval_id"], "approval id", lowest=1)
        asked = capabilities.approval(door.store, approval_id)
    except errors.PollerError:
        asked = None
    if asked is None or asked.mood != slug:
        raise auth.Refused(404, "not_found", f"no approval {request.path_params['approval_id'][:40]!r} "
                                             f"in #{slug}")
    answer = str(form.get("answer") or "")
    if answer not in ("approve", "deny"):
        raise auth.Refused(400, "bad_request", "answer must be approve or deny")
    try:
        capabilities.decide(door.store, asked.id, answer == "approve", door.clock(),
                            person_id=who.person_id, via="page",
                            reason=str(form.get("reason") or "") if answer == "deny" else "")
    except errors.NotFound:
        raise
    except errors.UserError as exc:
        status = 409 if view.may_decide(who) else 403
        raise auth.Refused(status, "conflict" if status == 409 else "forbidden", str(exc)) from None
    door.posted()
    return RedirectResponse(f"/m/{slug}#post-{asked.notice_post_id}", status_code=303)


def post_form(request, door, who, form) -> Response:
    slug = request.path_params["slug"]
    call = api.Call(door, who, {"slug": slug}, {}, {"text": str(form.get("text") or "")},
                    door.clock())
    post = api.add_post(call)
    if "application/json" in request.headers.get("accept", ""):  # the page's own post box
        return JSONResponse(dict(post, html=view.post_item(post, call.now)), status_code=201)
    return RedirectResponse(f"/m/{slug}", status_code=303)


def search_page(request, door, who, form) -> Response:
    """The search box's answers (``GET /api/v1/search``'s, for the same query), each a link
    to the post in its Mood; with no words, the form alone."""
    asked = request.query_params
    query, hits = {}, None
    if asked.get("q", "").strip():
        route = next(r for r in api.ROUTES if r.path == "/search")
        query = parse_query(route, asked)
        hits = api.search_posts(api.Call(door, who, {}, query, {}, door.clock()))
    since = query.get("since")
    return render(request, "search.html", q=asked.get("q", ""), query=query, hits=hits,
                  since=since.date().isoformat() if since else "", moods=door.store.moods())


# -- Operators' pages -----------------------------------------------------------------------------


def agents_page(request, door, who, form) -> Response:
    now = door.clock()
    st = observe.status(door.store, now)
    with door.store.reading() as s:
        stops = store_ops.stops(s)
    rows = api.agent_rows(door.store, now)
    return render(request, "agents.html", agents=rows, overview=st,
                  states={a["handle"]: a for a in st["agents"]}, stops=stops,
                  pictures=agent_pictures(door.store, [a["handle"] for a in rows], now),
                  kinds=operating.KINDS, kind_names=operating.KIND_NAMES,
                  **operating.said(request))


def agent_pictures(store, handles: list[str], now) -> dict:
    """Each agent's last two weeks, drawn: turns, tokens and dollars a day."""
    per = history.agent_days(store, now)
    days = history.days_ending(now, 14)
    out = {}
    for handle in handles:
        line = per.get(handle) or [history.Day(d) for d in days]
        out[handle] = [
            (f"{what} a day, most {shown(max(values))}",
             charts.bars(days, values, f"{handle}'s {what} a day", shown, css=what))
            for what, values, shown in (
                ("turns", [d.turns for d in line], str),
                ("tokens", [d.tokens for d in line], lambda v: f"{int(v):,}"),
                ("dollars", [d.usd for d in line], text.money))]
    return out


def wakes_page(request, door, who, form) -> Response:
    route = next(r for r in api.ROUTES if r.path == "/wakes")
    query = parse_query(route, request.query_params)
    rows = api.list_wakes(api.Call(door, who, {}, query, {}, door.clock()))
    return render(request, "wakes.html", wakes=rows, query=query, kinds=names(WakeKind),
                  statuses=names(WakeStatus), moods=door.store.moods(),
                  agents=door.store.agents())


def wake_page(request, door, who, form) -> Response:
    w = api.show_wake(api.Call(door, who, dict(request.path_params), {}, {}, door.clock()))
    return render(request, "wake.html", wake=w)


def why_page(request, door, who, form) -> Response:
    mood, agent = request.query_params.get("mood"), request.query_params.get("agent")
    answer = observe.why(door.store, mood, agent, door.clock()) if mood and agent else None
    return render(request, "why.html", answer=answer, mood=mood, agent=agent,
                  moods=door.store.moods(), agents=door.store.agents())


def dials_page(request, door, who, form) -> Response:
    from wiki_rules import report

    dials = report.as_dict(door.dials.status(door.clock()))
    # No wiki is the default set-up, not a fault: said as a note; the rest are warnings.
    notes = [w for w in dials["warnings"] if w == report.NO_WIKI_WARNING]
    return render(request, "dials.html", dials=dials, notes=notes,
                  warnings=[w for w in dials["warnings"] if w not in notes])


def scram_form(request, door, who, form) -> Response:
    now = door.clock()
    if form.get("action") == "lift":
        observe.lift_scram(door.store, now)
    elif form.get("confirm") == "stop":
        observe.set_scram(door.store, who.handle, now)
    else:
        raise auth.Refused(400, "unconfirmed", "tick the box to confirm the emergency stop")
    door.posted()
    return RedirectResponse("/ops/agents", status_code=303)
