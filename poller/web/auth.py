"""Who is asking, and may they: tokens, sessions, CSRF, the posting rate limit.

The API takes ``Authorization: Bearer <token>``; the pages take the session
cookie that signing in with a token sets (HttpOnly, SameSite=Strict).  A
request that changes something with the cookie must carry the session's CSRF
token (a form field or the ``X-CSRF-Token`` header); a bearer token is never
sent by a browser on its own, so it needs none.
"""

from __future__ import annotations

import collections
import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional

from poller.store import access

COOKIE = "mp_session"
PRE_COOKIE = "mp_pre"  # before signing in: binds the sign-in form's CSRF token


class Refused(Exception):
    """A request refused: an HTTP status, a machine-readable code, a sentence."""

    def __init__(self, status: int, code: str, detail: str, headers: Optional[dict] = None):
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail
        self.headers = headers or {}


@dataclass(frozen=True)
class Caller:
    """The person behind a request, and how they proved it."""

    who: access.Identity
    via: str  # "bearer" | "cookie"
    session: str = ""  # the cookie's secret, when via == "cookie"


def bearer(header: str) -> Optional[str]:
    scheme, _, token = (header or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


class Keys:
    """The process's key for CSRF tokens: a token is bound to one session (or one
    pre-sign-in cookie) and means nothing to another."""

    def __init__(self, key: Optional[bytes] = None):
        self.key = key or secrets.token_bytes(32)

    def csrf(self, binding: str) -> str:
        return hmac.new(self.key, binding.encode(), hashlib.sha256).hexdigest()

    def check_csrf(self, binding: str, given: Optional[str]) -> None:
        if not binding or not given or not hmac.compare_digest(self.csrf(binding), given):
            raise Refused(403, "csrf", "the form's CSRF token is missing or wrong: reload the "
                                       "page and try again")


def require(caller: Optional[Caller], need: str) -> access.Identity:
    """The caller's identity if it may do what *need* names, else :class:`Refused`.

    *need*: ``read`` (any signed-in person), ``post`` (trust look or full),
    ``operator`` (the operator role).
    """
    if caller is None:
        raise Refused(401, "unauthorized", "sign in: send 'Authorization: Bearer <token>' "
                      "(`mood-poller person token HANDLE` makes one)",
                      {"WWW-Authenticate": 'Bearer realm="mood-poller"'})
    who = caller.who
    if need == "post" and not who.may_post:
        raise Refused(403, "forbidden", f"{who.handle} has trust {who.trust}: only people "
                                        "with trust look or full may post")
    if need == "operator" and not who.operator:
        raise Refused(403, "forbidden", f"{who.handle} is not an operator "
                                        "(`mood-poller person set HANDLE --operator`)")
    return who


class RateLimit:
    """At most *limit* events per *window* seconds per key (a sliding window)."""

    def __init__(self, limit: int, window: float = 60.0,
                 clock: Callable[[], float] = time.monotonic, what: str = "posts"):
        self.limit, self.window, self.clock, self.what = limit, window, clock, what
        self._seen: dict[object, collections.deque] = {}
        self._lock = threading.Lock()

    def take(self, key: object) -> None:
        """Count one event for *key*, or refuse it (429) if the window is full."""
        retry = self._count(key)
        if retry:
            raise Refused(429, "rate_limited",
                          f"at most {self.limit} {self.what} per {self.window:g} s; try again "
                          f"in {retry} s", {"Retry-After": str(retry)})

    def allow(self, key: object) -> bool:
        """Count one event for *key* if the window has room: whether it had."""
        return not self._count(key)

    def _count(self, key: object) -> int:
        """0 if the event was counted, else the seconds until the window has room."""
        if self.limit <= 0:
            return 0
        now = self.clock()
        with self._lock:
            seen = self._seen.setdefault(key, collections.deque())
            while seen and seen[0] <= now - self.window:
                seen.popleft()
            if len(seen) >= self.limit:
                return max(1, int(seen[0] + self.window - now) + 1)
            seen.append(now)
            return 0
