"""Claude Code stream-json events as the runner reads them."""

from __future__ import annotations


def event(kind: str, **fields) -> dict:
    return {"type": kind, "session_id": "s-1", **fields}
