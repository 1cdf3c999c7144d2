"""Log lines: one per decision and per turn, for people or for machines.

Every record the loop writes carries an ``action`` (``decision``,
``turn_started``, ``turn_settled``...) and its fields in ``extra``; the
human format prints the message, the JSON format prints everything.
"""

from __future__ import annotations

import json
import logging
import sys

FIELDS = ("action", "agent", "mood", "kind", "outcome", "reason", "code", "wake_id", "status", "pid")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {"at": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"), "level": record.levelname.lower(),
               "logger": record.name, "message": record.getMessage()}
        for name in FIELDS:
            if hasattr(record, name):
                out[name] = getattr(record, name)
        return json.dumps(out, ensure_ascii=False, default=str)


def setup(json_lines: bool = False, verbose: bool = False) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if json_lines:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%H:%M:%S"))
    root = logging.getLogger("poller")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    root.propagate = False
