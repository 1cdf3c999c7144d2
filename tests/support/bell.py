"""The process's commit bell as a fixture, silent at the start and end of a test."""

from __future__ import annotations

import pytest

from poller.store.bell import BELL


@pytest.fixture
def bell():
    """The process's bell, silent at the start of the test."""
    BELL.sleep(0)
    yield BELL
    BELL.sleep(0)
