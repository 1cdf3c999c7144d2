"""What every endpoint does with a request: reads its JSON body and query by the
route's description, and runs its work off the event loop with the library's errors
turned into refusals (``{"error": code, "detail": sentence}``)."""

from __future__ import annotations

import json

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from poller import errors
from poller.text import parse_time
from poller.web import api, auth


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
        body = json.loads(raw or b"{}")
    except (ValueError, UnicodeDecodeError) as exc:
        raise auth.Refused(400, "bad_json", f"the body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise auth.Refused(400, "bad_json", "the body must be a JSON object")
    return body


def check_body(route: api.Route, body: dict) -> None:
    known = route.body["properties"]
    unknown = sorted(set(body) - set(known))
    if unknown:
        raise auth.Refused(400, "bad_request", f"unknown field(s): {', '.join(unknown)}")


def parse_query(route: api.Route, params) -> dict:
    out = {}
    for p in route.query:
        raw = params.get(p.name)
        if raw is None or raw == "":
            if p.required:
                raise auth.Refused(400, "bad_request", f"the query needs {p.name}")
            continue
        if p.kind == "integer":
            if not raw.isdigit() or len(raw) > 18:
                raise auth.Refused(400, "bad_request", f"{p.name} must be a whole number")
            out[p.name] = int(raw)
        elif p.kind == "time":
            try:
                out[p.name] = parse_time(raw, p.name)
            except errors.UserError as exc:
                raise auth.Refused(400, "bad_request", str(exc)) from None
        else:
            if p.enum and raw not in p.enum:
                raise auth.Refused(400, "bad_request",
                                   f"{p.name} must be one of {', '.join(p.enum)}")
            out[p.name] = raw
    return out
