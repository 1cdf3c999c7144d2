"""Where the tests run: the repository they test, and what a test does when a real
component it needs (PostgreSQL, MediaWiki, Synapse, Chromium...) is missing here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def unavailable(reason: str) -> None:
    """Skip a test whose real component is missing here; in CI, fail instead:
    CI must run every test, and .ci/run installs what they need."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must not skip: .ci/run installs what the tests need)")
    pytest.skip(reason)
