"""Reading back what the poller processes did: every wake so far, oldest first."""

from __future__ import annotations

import json


def wakes(cli) -> list[dict]:
    return sorted(json.loads(cli("wakes", "--json", "--limit", "1000").out), key=lambda w: w["id"])
