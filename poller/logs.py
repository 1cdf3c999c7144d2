"""Log lines: one per decision and per turn, for people or for machines.

Every record the loop writes carries an ``action`` (``decision``,
``turn_started``, ``turn_settled``...) and its fields in ``extra``; the
human format prints the message, the JSON format prints everything.
Logging is configured once for the whole process, every logger included
(``wiki_rules``, libraries), with RFC 3339 timestamps carrying their offset.
A poller hands its choice to the runner processes it starts
(``MOOD_POLLER_LOG``), so their turn lines come out the same way.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import sys

FIELDS = ("action", "agent", "mood", "kind", "outcome", "reason", "code", "wake_id", "status",
          "pid", "tools", "duration_s", "prompt_tokens", "error", "ref")
LOG_ENV = "MOOD_POLLER_LOG"  # "json" or "text", with ",verbose" or ",quiet"

_current = ("text", False, False)


def rfc3339(record: logging.LogRecord) -> str:
    at = dt.datetime.fromtimestamp(record.created, dt.timezone.utc)
    return at.isoformat(timespec="milliseconds")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {"at": rfc3339(record), "level": record.levelname.lower(),
               "logger": record.name, "message": record.getMessage()}
        for name in FIELDS:
            if hasattr(record, name):
                out[name] = getattr(record, name)
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    def formatTime(self, record: logging.LogRecord, datefmt=None) -> str:  # noqa: N802
        return rfc3339(record)


def setup(json_lines: bool = False, verbose: bool = False, quiet: bool = False) -> None:
    """Configure every logger of the process: one handler on stderr, one format.

    The level of the service's own loggers: *verbose* everything (repeated
    decisions too), *quiet* warnings and errors only, else one line per
    decision and per turn.
    """
    global _current
    quiet = quiet and not verbose
    _current = ("json" if json_lines else "text", verbose, quiet)
    level = logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO
    # What logging.config.dictConfig would do with one handler and two loggers, without
    # importing logging.config (and logging.handlers, socket, pickle) into every command.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if json_lines
                         else TextFormatter("%(asctime)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    configured = ("poller", "wiki_rules")
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and name.startswith(tuple(f"{c}." for c in configured)):
            logger.setLevel(logging.NOTSET)  # a child logs at its parent's level
            logger.handlers = []
            logger.propagate = True
    for name in configured:
        logger = logging.getLogger(name)
        logger.handlers = []
        logger.setLevel(level)
        logger.propagate = True
        logger.disabled = False


def spec() -> str:
    """This process's log choice, for the runner processes it starts."""
    kind, verbose, quiet = _current
    return f"{kind},verbose" if verbose else f"{kind},quiet" if quiet else kind


def setup_from_env() -> None:
    raw = os.environ.get(LOG_ENV, "text")
    setup(json_lines=raw.startswith("json"), verbose=raw.endswith(",verbose"),
          quiet=raw.endswith(",quiet"))
