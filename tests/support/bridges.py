"""Matrix events as the bridge receives them, for one room."""

from __future__ import annotations


ROOM = "!room:hs.example"


def event(content: dict, etype="m.room.message", sender="@ada:hs.example", **kw) -> dict:
    return {"type": etype, "sender": sender, "event_id": "$e", "room_id": ROOM,
            "content": content, **kw}
