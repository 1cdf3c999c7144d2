"""Keeping the poller's secrets to itself: process hardening and masking for output.

``undumpable()`` marks the calling process non-dumpable (Linux
``prctl(PR_SET_DUMPABLE, 0)``): its ``/proc/<pid>/environ``, ``mem`` and
``fd/`` become unreadable to other processes of the same Unix user, agents
included.  The poller (``run``, ``tick``) and every runner call it first.

``mask_url`` and ``mask_text`` hide credentials in anything printed, logged
or posted: the password of a URL's userinfo, and the value of every query
parameter (or ``name=value`` pair in free text) whose name looks like a
credential (pass, pwd, key, token, secret, auth, credential; any case).

This module imports nothing from the project and nothing heavy.
"""

from __future__ import annotations

import re
import sys

MASK = "***"
WEB_SCHEMES = ("http:", "https:", "ws:", "wss:")
PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4

SECRET_NAME = re.compile(r"pass|pwd|key|token|secret|auth|credential", re.IGNORECASE)
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*:)//")
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]+")
# name=value (a conninfo string, a command line) or "Name: value" (a header) in free
# text; a value runs to the next blank, quote, '&' or ';', a header's to the line's end.
_PAIR_IN_TEXT = re.compile(
    r"(?<![A-Za-z0-9_.\-])(?P<name>[A-Za-z0-9_.\-]*(?:" + SECRET_NAME.pattern + r")[A-Za-z0-9_.\-]*)"
    r"(?:=(?P<value>[^\s&;'\"]+)|(?P<colon>:[ \t]+)(?P<line>[^\r\n'\"]+))", re.IGNORECASE)


def undumpable() -> bool:
    """Make this process non-dumpable; True if that took effect (Linux only).

    Other processes of the same user (an agent among them) can then no longer
    read its environment, memory or open files through ``/proc``.  The flag
    is not inherited across ``exec``: each long-lived process sets its own.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def is_dumpable() -> bool | None:
    """This process's dumpable flag (None where it cannot be read)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1
    except (OSError, AttributeError):
        return None


def _mask_params(part: str) -> str:
    """``a=1&password=x`` -> ``a=1&password=***`` (names matched case-insensitively)."""
    out = []
    for item in part.split("&"):
        name, eq, value = item.partition("=")
        if eq and value and SECRET_NAME.search(name):
            item = f"{name}={MASK}"
        out.append(item)
    return "&".join(out)


def _split_userinfo(rest: str) -> tuple[str | None, str]:
    """(userinfo, the rest after its '@') of what follows ``scheme://``.

    The userinfo ends at the last '@' whose user part holds no '/', '?' or
    '#': a password may contain any of those (SQLAlchemy URLs allow it), and
    masking too much is better than showing part of a password.
    """
    at = rest.rfind("@")
    while at >= 0:
        info = rest[:at]
        user = info.split(":", 1)[0]
        if not any(c in user for c in "/?#"):
            return info, rest[at + 1:]
        at = rest.rfind("@", 0, at)
    return None, rest


def mask_url(url: str | None, *, keep_user: bool | None = None) -> str:
    """*url* with its userinfo password and credential-like parameters masked.

    ``postgresql://mood:pw@db/moods?sslpassword=x`` ->
    ``postgresql://mood:***@db/moods?sslpassword=***``.  The user name is
    kept, except in HTTP(S) and WebSocket URLs (whose user part is often a
    token itself) or with ``keep_user=False``.  Text that is no URL gets
    :func:`mask_text`.
    """
    if not url:
        return url or ""
    m = _SCHEME.match(url)
    if m is None:
        return mask_text(url)
    head, rest = url[:m.end()], url[m.end():]
    if keep_user is None:
        keep_user = m.group(1).lower() not in WEB_SCHEMES
    info, rest = _split_userinfo(rest)
    if info is not None:
        user, colon, _password = info.partition(":")
        if not keep_user:
            info = MASK
        elif colon:
            info = f"{user}:{MASK}"
        head += info + "@"
    fragment = ""
    if "#" in rest:
        rest, fragment = rest.split("#", 1)
        fragment = "#" + _mask_params(fragment)
    if "?" in rest:
        path, query = rest.split("?", 1)
        rest = path + "?" + _mask_params(query)
    return head + rest + fragment


def mask_text(text: str | None) -> str:
    """Free text (an error message, a command line) with credentials masked.

    URLs in it get :func:`mask_url`; every ``name=value`` (or ``name: value``)
    whose name looks like a credential has its value masked.
    """
    if not text:
        return text or ""
    text = _URL_IN_TEXT.sub(lambda m: mask_url(m.group(0)), text)

    def pair(m: re.Match) -> str:
        name = m.group("name")
        if m.group("colon"):
            return f"{name}{m.group('colon')}{MASK}"
        return m.group(0) if m.group("value") == MASK else f"{name}={MASK}"

    return _PAIR_IN_TEXT.sub(pair, text)


def shown_url(url: str) -> str:
    """*url* as it may be shown: a password in it is masked."""
    return re.sub(r"^(https?://[^/@:]*):[^/@]*@", r"\1:***@", url or "", flags=re.I)
