"""Every reason the law (and an organ's rule) can give has a sentence for `why`."""

from __future__ import annotations

import re
from pathlib import Path

from poller import law

LAW = Path(law.__file__)
AWAY = LAW.parent / "away" / "__init__.py"


def reasons_in(path: Path) -> set[str]:
    text = path.read_text()
    found = set(re.findall(r'Decision\(Outcome\.[A-Z]+, "([a-z-]+)"', text))
    found |= set(re.findall(r'_blocked\(f, "([a-z-]+)"', text))
    found |= set(re.findall(r'return "(away[a-z-]*)"', text))
    return found


def test_every_reason_of_the_law_has_a_sentence():
    found = reasons_in(LAW)
    assert {"listening-mentions", "busy", "cooldown", "bot-loop"} <= found  # the scan works
    assert sorted(r for r in found if not law.explain(r)) == []


def test_every_reason_of_the_away_organ_has_a_sentence():
    from poller.cycle import organs

    organs.load()
    found = reasons_in(AWAY)
    assert "away-noted-trust" in found
    assert sorted(r for r in found if not law.explain(r)) == []


def test_an_unknown_reason_has_no_sentence_rather_than_a_wrong_one():
    assert law.explain("no-such-reason") == ""


def test_money_reads_as_dollars_and_cents():
    from poller.text import money

    assert [money(v) for v in (0, 0.0004, 0.005, 0.0312, 1204.5)] == \
        ["$0.00", "<$0.01", "$0.01", "$0.03", "$1,204.50"]
