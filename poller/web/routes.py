"""What a route of the JSON API is: its declaration, the call it is handed, and the
pieces its schemas are made of.

:mod:`poller.web.api` declares the service's routes with these; an organ declares
its own the same way (:mod:`poller.schedules.api`), and the API serves them all
from one table (``poller.web.api.ROUTES``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Callable, Optional

from poller import errors, text
from poller.store import access
from poller.web.auth import Refused


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # integer | string | time
    help: str
    enum: tuple[str, ...] = ()
    required: bool = False


@dataclass
class Call:
    """One API request, as a route's function sees it."""

    door: Any  # poller.web.app.Door
    who: Optional[access.Identity]
    path: dict[str, str]
    query: dict[str, Any]
    body: dict[str, Any]
    now: dt.datetime

    @property
    def store(self):
        return self.door.store


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # under PREFIX
    run: Optional[Callable[[Call], Any]]  # None: served by its own endpoint (the stream)
    summary: str
    need: Optional[str] = "read"  # read | post | operator | None (anyone)
    query: tuple[Param, ...] = ()
    body: Optional[dict] = None  # the JSON schema of the body
    status: int = 200
    errors: tuple[int, ...] = ()
    produces: str = "application/json"
    returns: Optional[dict] = None  # the JSON schema of a successful answer


def body_text(body: dict, name: str, default: Optional[str] = None) -> str:
    value = body.get(name, default)
    if value is None:
        raise Refused(400, "bad_request", f"the body needs {name!r}")
    if not isinstance(value, str):
        raise Refused(400, "bad_request", f"{name!r} must be a string")
    return value


def path_id(c: Call, name: str, what: str) -> int:
    """The id in the path's *name*, or 404: no row has an id that is not a whole number
    the store can hold."""
    raw = c.path[name]
    try:
        return text.parse_whole(raw, what, lowest=1)
    except errors.UserError:
        raise Refused(404, "not_found", f"no {what} {raw[:40]!r}") from None


def checked_value(name: str, value: Any, schema: dict) -> None:
    """Refuse (400) a body's *value* that is not what its *schema* says, or that the store
    could not hold: an integer past 63 bits, a text with NUL or a lone surrogate.  Null
    stands for absent; what is required is each route's to say."""
    kind = schema.get("type")
    if value is None:
        return
    if kind == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            raise Refused(400, "bad_request", f"{name!r} must be an integer")
        if not -text.MAX_ID <= value <= text.MAX_ID:
            raise Refused(400, "bad_request", f"{name!r} is out of range: give a whole number "
                                              f"from {-text.MAX_ID} to {text.MAX_ID}")
    elif kind == "string":
        if not isinstance(value, str):
            raise Refused(400, "bad_request", f"{name!r} must be a string")
        checked_text(value, repr(name))


def checked_text(value: str, what: str) -> str:
    """*value* if the store may keep it (:func:`poller.text.check_text`), else 400."""
    try:
        return text.check_text(value, what)
    except errors.UserError as exc:
        raise Refused(400, "bad_request", str(exc)) from None


def schema_obj(props: dict, required: tuple[str, ...]) -> dict:
    return {"type": "object", "properties": props, "required": list(required),
            "additionalProperties": False}


S = {"type": "string"}
INT = {"type": "integer"}
BOOL = {"type": "boolean"}
TIME = {"type": "string", "format": "date-time"}
MAYBE_TIME = {"type": ["string", "null"], "format": "date-time"}
MAYBE_INT = {"type": ["integer", "null"]}


def schema_out(**props) -> dict:
    """An answer's schema: every property present (nothing more is promised)."""
    return {"type": "object", "properties": props, "required": list(props)}


def schema_many(item: dict) -> dict:
    return {"type": "array", "items": item}



SLUG = Param("mood", "string", "Only this Mood (its slug).")
AGENT = Param("agent", "string", "Only this agent (its handle).")
