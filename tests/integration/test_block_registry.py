"""The registry of reply blocks: built-in kinds known everywhere, a new kind by one declaration."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from poller.kinds import Tools
from poller.turns import blocks

BUILT_IN = ["alarm", "checkin", "contact", "settings", "handoff", "away"]


def test_a_process_that_imports_only_the_parser_knows_every_built_in_kind():
    # A runner started on its own (python -m poller.turns.runner) parses with
    # whatever it imported: the registry loads the organs' declarations itself.
    code = ("from poller.turns import blocks\n"
            "print(' '.join(k.name for k in blocks.kinds()))\n"
            "p = blocks.parse('bye\\n```away\\nactivity: walk\\n```', tools='look')\n"
            "print(p.text, p.away.activity)\n"
            "print(blocks.output_for('command').settle.__module__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout.splitlines()
    assert out == [" ".join(BUILT_IN), "bye walk", "poller.control.replies"]


@dataclasses.dataclass(frozen=True)
class Mark:
    word: str


def mark_block(body: list[str]) -> Mark:
    head = blocks.keyed(body, "mark", ("word",))
    if not head.get("word"):
        raise blocks.Refuse("a mark block needs word:")
    return Mark(head["word"])


@pytest.fixture
def mark_kind(monkeypatch):
    blocks.kinds()  # the built-ins first, so the test kind is only added to them
    kind = blocks.Kind("mark", mark_block, lambda *args: "", rank=70, tools=Tools.FULL)
    monkeypatch.setitem(blocks._KINDS, "mark", kind)
    return kind


def test_a_declared_kind_is_taken_out_of_the_reply_and_read(mark_kind):
    p = blocks.parse("hi\n```mark\nword: seen\n```\n```python\nx = 1\n```", tools="full")
    assert p.mark == Mark("seen") and p.get("mark") == Mark("seen")
    assert p.text == "hi\n```python\nx = 1\n```"
    assert p.found == ("mark",) and p.refused == ()


def test_a_declared_kind_is_refused_whole_by_its_parser_and_its_tier(mark_kind):
    bad = blocks.parse("```mark\nword:\n```", tools="full")
    assert bad.mark is None
    assert bad.refused == (blocks.BlockRefusal("mark", "a mark block needs word:"),)
    look = blocks.parse("```mark\nword: seen\n```", tools="look")
    assert look.refused == (blocks.BlockRefusal(
        "mark", "a mark block is only honoured on a full-tool turn; this turn was look-only"),)


def test_an_undeclared_fence_is_plain_text_and_no_attribute():
    reply = "```mark\nword: seen\n```"
    p = blocks.parse(reply, tools="full")
    assert p.text == reply and p.refused == ()
    with pytest.raises(AttributeError):
        p.mark


def test_settling_runs_hooks_and_kinds_in_rank_order():
    names = [step.name for step in blocks.steps()]
    # A judgment's reply calls the absence back before an away block could start
    # one; a missed notice is confirmed after a checkin block has counted.
    assert names == ["called-back", "alarm", "checkin", "contact", "notice-confirmed",
                     "settings", "handoff", "away"]
