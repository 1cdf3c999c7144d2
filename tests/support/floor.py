"""Ticks, posts and wakes for the floor tests, all posted by ada."""

from __future__ import annotations

import json

from support.timeline import at


def tick(cli, seconds, *extra) -> dict:
    return json.loads(cli("tick", "--now", at(seconds), "--wait", "--json", *extra).out)


def post(cli, seconds, text, mood="lobby"):
    return int(cli("post", mood, "--as", "ada", "--at", at(seconds), text).out)


def wakes(cli) -> list[dict]:
    return sorted(json.loads(cli("wakes", "--json", "--limit", "100").out), key=lambda w: w["id"])
