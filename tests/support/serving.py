"""The front door served for real in the test process (``served``, a fixture)."""

from __future__ import annotations

import pytest

from support import webserver


@pytest.fixture
def served(cli):
    s = webserver.start(cli.db_url, poller_interval=1.0)
    s.cli = cli
    yield s
    s.stop()
