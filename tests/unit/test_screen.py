"""The screen before a consider: a real OpenAI-compatible endpoint on loopback says
whether the new posts need the agent; "no" skips the wake, anything else lets it through.

Here, the pure part (no database, no process); the rest sits under the same name
in the other layers.
"""

from __future__ import annotations

import os

import pytest

from poller import screen
from support.timeline import TimelineCli
from support.screen import endpoint  # noqa: F401  (fixtures)

@pytest.mark.parametrize("answer,needed,reason", [
    ("no: just small talk", False, "just small talk"),
    ("No: nothing for the agent", False, "nothing for the agent"),
    ("**no**: bold", False, "bold"),
    ("yes: a question about the build", True, "a question about the build"),
    ("maybe", True, "unclear answer: maybe"),
    ("", True, "unclear answer: "),
])
def test_anything_but_a_clear_no_is_a_yes(answer, needed, reason):
    assert screen.parse(answer) == (needed, reason)


def test_a_screen_needs_both_url_and_model(tmp_path, sqlite_url):
    config = tmp_path / "half.toml"
    config.write_text('[screen]\nurl = "http://127.0.0.1:9"\n')
    r = TimelineCli(sqlite_url, config=str(config))("tick", ok=False)
    assert r.code != 0 and "screen.url and screen.model" in r.err and "Traceback" not in r.err
    assert os.environ.get("MOOD_POLLER_SCREEN_API_KEY") is None


