"""What the exit-code tests share: the codes (75 temporary, 78 configuration), a port
nothing listens on, and the check that an error is one line."""

from __future__ import annotations

import socket

import pytest


EX_TEMPFAIL = 75


EX_CONFIG = 78


@pytest.fixture
def closed_port():
    """A 127.0.0.1 port that refuses connections: bound, never listening, held for the test."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


def one_line(r) -> str:
    lines = [line for line in r.err.splitlines() if line.strip()]
    assert len(lines) == 1, r.err
    assert "Traceback" not in r.err
    return lines[0]
