"""Logging is configured once for the whole process: one handler on stderr, one format,
the service's loggers at the level the flags choose."""

from __future__ import annotations

import json
import logging
import sys

import pytest

from poller import logs


@pytest.fixture
def restore_logging():
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    yield
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])
    for name in ("poller", "wiki_rules", "poller.cycle"):
        logging.getLogger(name).setLevel(logging.NOTSET)


def test_setup_puts_one_handler_on_stderr_and_sets_the_levels(restore_logging, capsys):
    child = logging.getLogger("poller.cycle")
    child.setLevel(logging.ERROR)
    child.addHandler(logging.NullHandler())
    logs.setup(json_lines=True, verbose=False, quiet=False)
    logs.setup(json_lines=True, verbose=False, quiet=False)  # again: still one handler
    root = logging.getLogger()
    assert len(root.handlers) == 1 and root.handlers[0].stream is sys.stderr
    assert root.level == logging.WARNING
    assert logging.getLogger("poller").level == logging.INFO
    assert logging.getLogger("wiki_rules").level == logging.INFO
    assert child.level == logging.NOTSET and child.handlers == [] and child.propagate
    child.info("decided", extra={"action": "decision", "agent": "a"})
    logging.getLogger("somelib").info("not shown")
    line = json.loads(capsys.readouterr().err.strip())
    assert line["message"] == "decided" and line["action"] == "decision" and line["agent"] == "a"
    assert line["logger"] == "poller.cycle" and line["at"].endswith("+00:00")
    assert logs.spec() == "json"


def test_quiet_and_verbose_levels_and_the_text_format(restore_logging, capsys):
    logs.setup(quiet=True)
    assert logging.getLogger("poller").level == logging.WARNING and logs.spec() == "text,quiet"
    logging.getLogger("poller").info("hidden")
    logs.setup(verbose=True)
    assert logging.getLogger("wiki_rules").level == logging.DEBUG and logs.spec() == "text,verbose"
    logging.getLogger("poller").debug("shown")
    err = capsys.readouterr().err
    assert "hidden" not in err and " DEBUG shown" in err
