"""The operators' work from the page: Moods and their settings, people and their tokens,
agents of every waker, stops lifted.

Every form posts here with the session's CSRF token (checked by :mod:`poller.web.pages`
before anything is read) and is served to operators only.  Each does what the command
line does, through the same verbs (the store's, and :mod:`poller.cli.people`'s checks for
an agent), so the page refuses what a command refuses, with the same words.  A form
that worked sends the operator back to the page with one line saying what was done
(and any note, e.g. a command not found on this machine); a token is shown once, on
the answer to the form that made it.
"""

from __future__ import annotations

from typing import Optional
from urllib.parse import urlencode

import click
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from poller import errors, observe, settings, text
from poller.cli import people
from poller.secure import mask_text, mask_url
from poller.store import access
from poller.store import ops as store_ops
from poller.web import auth
from poller.web.view import render

TRUSTS = ("full", "look", "none")
# The waker kinds the page adds and the form fields each takes (the flags of `agent add`).
KINDS = people.FORM_FIELDS
KIND_NAMES = people.FORM_NAMES
LONG_TEXT = ("rules", "letter", "persona")


def routes(page) -> list[Route]:
    """The operators' forms and pages; *page* wraps a view as :func:`pages.routes` does."""
    def form(path: str, build) -> Route:
        return Route(path, page("operator", build, ("POST",)), methods=["POST"])

    return [
        Route("/ops/moods", page("operator", moods_page)),
        form("/ops/moods", add_mood),
        Route("/ops/moods/{slug}", page("operator", mood_settings_page)),
        form("/ops/moods/{slug}/settings", set_mood_setting),
        form("/ops/stops/lift", lift_stop),
        Route("/ops/people", page("operator", people_page)),
        form("/ops/people", add_person),
        form("/ops/people/{handle}", set_person),
        form("/ops/people/{handle}/token", mint_token),
        form("/ops/people/{handle}/revoke", revoke_tokens),
        form("/ops/agents", add_agent),
        Route("/ops/agents/{handle}", page("operator", agent_page)),
        form("/ops/agents/{handle}", set_agent),
        form("/ops/agents/{handle}/remove", remove_agent),
    ]


def said(request) -> dict:
    """What the form before said it did (``?done=``, ``?note=``), for the page to show."""
    q = request.query_params
    return {"done": q.get("done", "")[:500], "notes": [n[:500] for n in q.getlist("note")][:5]}


def _render(request, name: str, **context) -> Response:
    return render(request, name, **said(request), **context)


def _back(path: str, done: str, notes: Optional[list[str]] = None) -> Response:
    """To *path* (a page here), saying *done* and the *notes* there."""
    query = urlencode([("done", done)] + [("note", n) for n in notes or []])
    return RedirectResponse(f"{path}?{query}", status_code=303)


def _field(form, name: str) -> Optional[str]:
    """A form's text field, stripped; None when empty or absent."""
    value = str(form.get(name) or "").strip()
    return value or None


def _noted(work):
    """Run *work* (which may note things, as the command line does on stderr): its result
    and the notes; a usage fault of the command line's checks is the form's 400."""
    notes: list[str] = []
    token = people.NOTES.set(notes)
    try:
        return work(), notes
    except click.UsageError as exc:
        raise auth.Refused(400, "bad_request", exc.format_message()) from None
    finally:
        people.NOTES.reset(token)


# -- Moods -------------------------------------------------------------------------------------


def moods_page(request, door, who, form) -> Response:
    return _render(request, "ops_moods.html", moods=door.store.moods())


def add_mood(request, door, who, form) -> Response:
    slug = str(form.get("slug") or "").strip()
    title = str(form.get("title") or "").strip()
    if not slug:
        raise auth.Refused(400, "bad_request", "give the Mood's slug")
    m = door.store.add_mood(slug, title, door.clock())
    door.posted()
    return _back(f"/ops/moods/{m.slug}", f"added Mood {m.slug}")


def mood_settings_page(request, door, who, form) -> Response:
    slug = request.path_params["slug"]
    mood = door.store.mood(slug)
    now = door.clock()
    resolved = door.store.resolved(now, mood=slug)
    rows = []
    for key, spec in settings.KEYS.items():
        r = resolved[key]
        shown_range = getattr(spec.parse, "range", "")
        choices = shown_range.split(" | ") if " | " in shown_range and ";" not in shown_range \
            else []
        rows.append({"key": key, "help": spec.help, "value": r.value, "slot": r.slot,
                     "until": r.until, "range": shown_range, "choices": choices,
                     "long": key in LONG_TEXT})
    with door.store.reading() as s:
        stops = [st for st in store_ops.stops(s) if st.mood == mood.slug]
    return _render(request, "ops_mood.html", mood=mood, rows=rows, stops=stops)


def set_mood_setting(request, door, who, form) -> Response:
    """One of a Mood's settings (as ``PUT /api/v1/settings`` with the Mood named, by an
    operator): its dials, listening (until a time, if given), rules, budgets."""
    slug = request.path_params["slug"]
    key = str(form.get("key") or "")
    until_raw = _field(form, "until")
    until = None
    if until_raw:
        try:
            until = text.parse_time(until_raw, "until")
        except errors.UserError as exc:
            raise auth.Refused(400, "bad_request", str(exc)) from None
    change = door.store.set_setting(key, str(form.get("value") or ""), door.clock(), mood=slug,
                                    by=who.handle, until=until)
    door.posted()
    ends = f" until {text.when(until)}" if until else ""
    return _back(f"/ops/moods/{slug}", f"{change.key} in {slug}: {change.old} -> {change.new}{ends}")


def lift_stop(request, door, who, form) -> Response:
    """Lift an agent's stop in a Mood (``stop --lift``): it may take turns there again."""
    handle, slug = str(form.get("agent") or ""), str(form.get("mood") or "")
    lifted = observe.lift_stop(door.store, handle, slug, door.clock())
    if not lifted:
        raise auth.Refused(409, "conflict", f"{handle} was not stopped in {slug}")
    door.posted()
    back = str(form.get("back") or "")
    return _back(back if back in ("/ops/agents", f"/ops/moods/{slug}") else "/ops/agents",
                 f"{handle} may take turns in {slug} again; what was owed is answered now")


# -- People ------------------------------------------------------------------------------------


def people_page(request, door, who, form) -> Response:
    operators = access.operators(door.store)
    rows = [{"handle": p.handle, "trust": p.trust, "operator": p.id in operators}
            for p in door.store.people()]
    return _render(request, "ops_people.html", people=rows, trusts=TRUSTS)


def _trust(form) -> str:
    trust = str(form.get("trust") or "")
    if trust not in TRUSTS:
        raise auth.Refused(400, "bad_request", f"trust must be one of {', '.join(TRUSTS)}")
    return trust


def add_person(request, door, who, form) -> Response:
    handle, trust = str(form.get("handle") or "").strip(), _trust(form)
    if not handle:
        raise auth.Refused(400, "bad_request", "give the person's handle")
    operator = form.get("operator") == "on"
    p = door.store.add_person(handle, trust, door.clock())
    if operator:
        access.set_operator(door.store, p.handle, True)
    return _back("/ops/people", f"added person {p.handle} (trust {p.trust}"
                                f"{', operator' if operator else ''})")


def set_person(request, door, who, form) -> Response:
    handle = request.path_params["handle"]
    trust, operator = _trust(form), form.get("operator") == "on"
    if handle.lower() == who.handle.lower() and not operator:
        raise auth.Refused(409, "conflict", "you cannot take your own operator role from the "
                                            "page (another operator can)")
    access.set_operator(door.store, handle, operator)
    p = door.store.set_trust(handle, trust)
    return _back("/ops/people", f"{p.handle} now has trust {p.trust} and is "
                                f"{'' if operator else 'not '}an operator")


def mint_token(request, door, who, form) -> Response:
    """A new token for the person, shown on this answer only (only its hash is kept)."""
    handle = request.path_params["handle"]
    token, _ = access.new_token(door.store, handle, door.clock())
    response = render(request, "ops_token.html", handle=handle, token=token)
    response.headers["Cache-Control"] = "no-store"
    return response


def revoke_tokens(request, door, who, form) -> Response:
    handle = request.path_params["handle"]
    n = access.revoke_tokens(door.store, handle, door.clock())
    return _back("/ops/people", f"revoked {n} token(s) of {handle}")


# -- Agents ------------------------------------------------------------------------------------


def _timeout(form, for_change: bool = False):
    raw = _field(form, "timeout")
    if raw is None:
        return None
    if for_change and raw.lower() == "default":
        return "default"
    try:
        value = float(raw)
    except ValueError:
        raise auth.Refused(400, "bad_request", f"timeout must be a number of seconds, got "
                                               f"{raw[:40]!r}") from None
    if not value > 0:
        raise auth.Refused(400, "bad_request", "timeout must be more than 0 seconds")
    return value


def _headers(form) -> tuple[str, ...]:
    return tuple(line.strip() for line in str(form.get("headers") or "").splitlines()
                 if line.strip())


def _kind(form) -> str:
    kind = str(form.get("kind") or "")
    if kind not in KINDS:
        raise auth.Refused(400, "bad_request", f"kind must be one of {', '.join(KINDS)}")
    return kind


def _given(form, kind: str) -> dict:
    """The form's fields for the waker *kind*, as the command line's flags (None: not given)."""
    given = {name: _field(form, name) for name in KINDS[kind]
             if name not in ("timeout", "headers")}
    if "headers" in KINDS[kind]:
        given["headers"] = _headers(form)
    return given


def add_agent(request, door, who, form) -> Response:
    kind = _kind(form)
    handle = str(form.get("handle") or "").strip()
    if not handle:
        raise auth.Refused(400, "bad_request", "give the agent's handle")
    given = _given(form, kind)
    target = given.pop("command", None) or given.pop("url", None)
    waker = people.naming_flags(kind, target)
    if kind == people.MODEL_WAKER and not given.get("model"):
        raise auth.Refused(400, "bad_request", "give the model as PROVIDER:MODEL "
                                               "(e.g. openai:gpt-4o-mini)")
    a, notes = _noted(lambda: people.add_agent(door.store, door.clock(), handle,
                                               timeout=_timeout(form), **waker, **given))
    door.posted()
    return _back("/ops/agents", f"added agent {a.handle} ({a.waker})", notes)


def agent_page(request, door, who, form) -> Response:
    a = door.store.agent(request.path_params["handle"])
    kind = a.waker if a.waker in KINDS else None
    options = a.options or {}
    current = {"command": mask_text(a.command) if a.command else "",
               "url": mask_url(a.url, keep_user=False) if a.url else "",
               "workdir": a.workdir or "", "timeout": f"{a.timeout:g}" if a.timeout else "default",
               "headers": ", ".join(options.get("headers") or {}),
               "claude_bin": options.get("bin", ""),
               **{k: options.get(k) or "" for k in ("session_dir", "model", "permission_mode",
                                                      "base_url", "api_key_env")}}
    return _render(request, "ops_agent.html", agent=a, kind=kind,
                   names=KINDS.get(kind, ("timeout",)), current=current,
                   kind_name=KIND_NAMES.get(kind, a.waker))


def set_agent(request, door, who, form) -> Response:
    """Change the fields given (an empty field stays as it is; timeout ``default`` goes
    back to the configured default), as ``agent set`` does."""
    handle = request.path_params["handle"]
    kind = door.store.agent(handle).waker
    given = _given(form, kind) if kind in KINDS else {}
    change, notes = _noted(lambda: people.set_agent(door.store, handle,
                                                    timeout=_timeout(form, for_change=True),
                                                    **given))
    changed = change.changed()
    door.posted()
    said = (f"changed agent {change.after.handle}: "
            + "; ".join(f"{people.OPTION_NAMES.get(w, w)}: {people.what_changed(change, w)}"
                        for w in changed)) if changed else \
        f"agent {change.after.handle}: nothing changed"
    return _back(f"/ops/agents/{change.after.handle}", said, notes)


def remove_agent(request, door, who, form) -> Response:
    from poller.cycle.recover import end_turn

    store, now = door.store, door.clock()

    def end(s, wake) -> None:
        end_turn(store.counter, s, wake, people.ENDED_BY_REMOVAL, now, follow_up=False)

    r = store.retire_agent(request.path_params["handle"], now, force=form.get("force") == "on",
                           end_turn=end)
    door.posted()
    ended = (f"; ended {len(r.ended)} turn(s) (wake {', '.join(map(str, r.ended))})"
             if r.ended else "")
    return _back("/ops/agents", f"removed agent {r.who.handle}{ended} (its history is kept; "
                                "the handle is free)")
