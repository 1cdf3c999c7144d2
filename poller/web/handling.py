"""What every endpoint does with a request: reads its JSON body and query by the
route's description, and runs its work off the event loop with the library's errors
turned into refusals (``{"error": code, "detail": sentence}``)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from poller import errors, text
from poller.web import api, auth
from poller.web.routes import checked_text, checked_value


async def guarded(work):
    """Run *work* off the event loop, the library's errors turned into refusals."""
    try:
        return await run_in_threadpool(work)
    except errors.PollerError as exc:
        raise api.refusal(exc) from None
    except Exception as exc:
        from poller.cli import database_error

        mapped = database_error(exc)
        if mapped is None:
            raise
        raise api.refusal(mapped) from None


async def read_json(request: Request) -> dict:
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise auth.Refused(415, "unsupported_media_type", "send the body as application/json")
    raw = await request.body()
    try:
        body = text.parse_json(raw or b"{}")
    except errors.UserError as exc:
        raise auth.Refused(400, "bad_json", str(exc)) from None
    if not isinstance(body, dict):
        raise auth.Refused(400, "bad_json", "the body must be a JSON object")
    return body


def check_texts(request: Request, form=None) -> None:
    """Refuse (400) a request whose path, query or form holds text the store could not
    keep or look up (a NUL, a lone surrogate), before anything reads it."""
    for source in (request.path_params, request.query_params, form or {}):
        for name, value in source.items():
            if isinstance(value, str):
                checked_text(value, name)


def check_body(route: api.Route, body: dict) -> None:
    known = route.body["properties"]
    unknown = sorted(set(body) - set(known))
    if unknown:
        raise auth.Refused(400, "bad_request", f"unknown field(s): {', '.join(unknown)}")
    for name, value in body.items():
        checked_value(name, value, known[name])


def parse_query(route: api.Route, params) -> dict:
    out = {}
    for p in route.query:
        raw = params.get(p.name)
        if raw is None or raw == "":
            if p.required:
                raise auth.Refused(400, "bad_request", f"the query needs {p.name}")
            continue
        checked_text(raw, p.name)
        if p.kind in ("integer", "time"):
            parse = text.parse_whole if p.kind == "integer" else text.parse_time
            try:
                out[p.name] = parse(raw, p.name)
            except errors.UserError as exc:
                raise auth.Refused(400, "bad_request", str(exc)) from None
        else:
            if p.enum and raw not in p.enum:
                raise auth.Refused(400, "bad_request",
                                   f"{p.name} must be one of {', '.join(p.enum)}")
            out[p.name] = raw
    return out
