"""Approvals from the room: a turn asks to use a tool, the people of the Mood answer.

:func:`request` posts the notice, then waits: for a decision recorded by any way
of answering: ``@agent approve`` / ``@agent deny [reason]`` posts in the Mood (read
by the poller's scan, :mod:`poller.toolserver.organ`), ``mood-poller approve``/``deny``,
the page's buttons, a reaction over the Matrix bridge, all through
:func:`poller.store.capabilities.decide`.  The wait ends at ``approval_timeout`` (denied as timed
out) or when the turn's capability stops being valid (its turn ended).  While it
waits the turn's progress reads ``waiting for approval: TOOL``.

The notice shows a short rendering of the tool's input (:func:`shown`), with
credentials and the values of the poller's secret-looking environment variables
masked: never a secret from the environment.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from poller import secure
from poller.store import capabilities, turns
from poller.store.capabilities import ApprovalInfo, Capability
from poller.store.core import Store

log = logging.getLogger("poller.approvals")

SHOWN_CHARS = 300
POLL_S = 0.5
SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|KEY|CREDENTIAL|AUTH|COOKIE|_DB$|DSN)",
                         re.IGNORECASE)
# What the tool's input is shown by, for the tools people know.
SHOWN_FIELD = {"Bash": "command", "Edit": "file_path", "MultiEdit": "file_path",
               "Write": "file_path", "Read": "file_path", "NotebookEdit": "notebook_path",
               "WebFetch": "url", "WebSearch": "query", "Glob": "pattern", "Grep": "pattern"}


def _environment_secrets() -> list[str]:
    return sorted((v for k, v in os.environ.items() if SECRET_NAME.search(k) and len(v) >= 6),
                  key=len, reverse=True)


def shown(tool: str, tool_input: Any, limit: int = SHOWN_CHARS) -> str:
    """A short, one-line, masked rendering of a tool's input, as the notice shows it."""
    field = SHOWN_FIELD.get(tool)
    if isinstance(tool_input, dict) and field and isinstance(tool_input.get(field), str):
        raw = tool_input[field]
    else:
        try:
            raw = json.dumps(tool_input, ensure_ascii=False, sort_keys=True, default=str)
        except (TypeError, ValueError):
            raw = repr(tool_input)
    for secret in _environment_secrets():
        raw = raw.replace(secret, secure.MASK)
    flat = " ".join(secure.mask_text(raw).split()).replace("`", "'")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _seconds(n: int) -> str:
    return f"{n // 60} min" if n >= 120 and n % 60 == 0 else f"{n} s"


def notice(cap: Capability, tool: str, input_shown: str, timeout_s: int) -> str:
    """The notice posted in the Mood (``{id}`` becomes the request's id)."""
    return (f"@{cap.agent} asks to use {tool}: `{input_shown}`. Approval #{{id}}: a person "
            f"with trust full answers `@{cap.agent} approve` or `@{cap.agent} deny` (with a "
            f"reason if you like) here, with the buttons on the Mood's page, or "
            f"`mood-poller approve {{id}}`; without an answer within {_seconds(timeout_s)} "
            f"it is denied.")


ANSWER = re.compile(r"^\s*@(?P<who>[^\s:,]+)[:,]?\s+(?P<verb>approve|deny)\b(?:\s+#?(?P<id>\d+)\b)?"
                    r"\s*(?P<reason>.*)$", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class Answer:
    """``@agent approve`` / ``@agent deny [reason]`` read from a post."""

    approve: bool
    approval_id: Optional[int]
    reason: str


def parse_answer(body: str, agent: str) -> Optional[Answer]:
    """The answer a post gives *agent*, or None when it gives none."""
    m = ANSWER.match(body or "")
    if m is None or m.group("who").lower() != agent.lower():
        return None
    ident = m.group("id")
    return Answer(m.group("verb").lower() == "approve", int(ident) if ident else None,
                  " ".join(m.group("reason").split())[:300])


def outcome(a: ApprovalInfo, tool_input: Any) -> dict:
    """What the permission prompt tool answers Claude Code with."""
    if a.status == "approved":
        return {"behavior": "allow", "updatedInput": tool_input if isinstance(tool_input, dict)
                else {}}
    why = {"denied": f"denied by {a.decided_by or 'an operator'}"
                     + (f": {a.reason}" if a.reason else ""),
           "timed_out": "nobody answered the request in time",
           "ended": "the turn ended before anyone answered"}.get(a.status, a.status)
    return {"behavior": "deny", "message": f"Using {a.tool} was not approved: {why}."}


def request(store: Store, cap: Capability, secret: str, tool: str, tool_input: Any, *,
            clock: Callable[[], dt.datetime], timeout_s: Optional[int] = None,
            poll: float = POLL_S, sleep: Callable[[float], None] = time.sleep) -> ApprovalInfo:
    """Ask the room whether the turn may use *tool* with *tool_input*; wait for the answer."""
    from poller import settings

    if timeout_s is None:
        timeout_s = settings.values(store.resolved(clock(), mood=cap.mood,
                                                   agent=cap.agent))["approval_timeout"]
    input_shown = shown(tool, tool_input)
    asked = capabilities.ask(store, cap, tool[:200], input_shown,
                             notice(cap, tool, input_shown, timeout_s), clock())
    log.info("turn %s: %s asks to use %s (approval %s)", cap.wake_id, cap.agent, tool, asked.id,
             extra={"action": "approval_asked", "wake_id": cap.wake_id, "approval_id": asked.id,
                    "tool": tool})
    doing = f"waiting for approval: {tool}"[:200]
    turns.record_progress(store, cap.wake_id, doing)
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            current = capabilities.approval(store, asked.id)
            if current.status != "pending":
                return _logged(current)
            still, _why = capabilities.find(store, secret, clock())
            if still is None:  # the turn ended (or was stopped) while it waited
                capabilities.revoke(store, cap.wake_id, clock())
                return _logged(capabilities.approval(store, asked.id))
            if time.monotonic() >= deadline:
                return _logged(capabilities.time_out(store, asked.id, clock()))
            sleep(poll)
    finally:
        turns.record_progress(store, cap.wake_id, "")


def _logged(a: ApprovalInfo) -> ApprovalInfo:
    log.info("approval %s of %s: %s%s", a.id, a.tool, a.status,
             f" by {a.decided_by}" if a.decided_by else "",
             extra={"action": "approval_decided", "wake_id": a.wake_id, "approval_id": a.id,
                    "status": a.status, "via": a.via})
    return a
