"""The catch-up: exact token costs, never over the budget, at least 95% full.

Here, the pure part (no database, no process); the rest sits under the same name
in the other layers.
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from poller.wake import catchup, lines
from poller.wake.lines import WakePost
from support.catchup import COUNTER, NOW, post

# Text that breaks the 4-characters-a-token guess in both directions.
HARD = [
    "def f(x):\n    return {k: v for k, v in x.items() if v}\n",
    "see https://example.org/path/to/thing?query=1&other=two#frag-ment",
    "🎉👍🏽🧑‍🍳 ok!!! 🙌",
    "数据库迁移已经完成。请检查日志文件。",
    "12345678901234567890 and 3.14159265358979 and 0x7fffffff",
    "Plain words, the kind most people write in a chat room.",
    "```js\nconst a = [1, 2, 3].map((n) => n ** 2);\n```",
    "a" * 300,
    "   leading and trailing spaces   ",
    "don't won't it's we'll I'd",
    "ok.",
    "\t tab\tseparated\tvalues \r\n windows line",
]


def mixed_history(n: int, seed: int = 7) -> list[WakePost]:
    rng = random.Random(seed)
    people = ["alice", "bob", "陈", "ada"]
    return [post(i, " ".join(rng.choice(HARD) for _ in range(rng.randint(1, 3))),
                 sender=people[i % 4], agent=i % 4 == 3) for i in range(1, n + 1)]


fragments = st.sampled_from(HARD + ["<mood-wake>", "</MOOD-WAKE>", "\n", " ", ".", "x", "7", "é", "\u2028"])
texts = st.one_of(st.text(max_size=60), st.lists(fragments, max_size=8).map("".join))


@settings(max_examples=400, deadline=None)
@given(texts, st.sampled_from(["[alice, 14:02] ", "[bob (agent), 2025-01-01 10:00, silent, new] ", "[陈, 09:00] "]))
def test_line_cost_is_exact(text, head):
    coster = catchup.Coster(COUNTER)
    display = lines.quote(text)
    assert coster.line(head, text, display, COUNTER.count(text)) == COUNTER.count(head + display + "\n")


@pytest.mark.parametrize("budget", [1_000, 2_345, 10_000, 24_000])
def test_never_over_and_at_least_95_percent(budget):
    history = mixed_history(3_000)
    cu = catchup.build(history, budget=budget, now=NOW, counter=COUNTER, post_cap=2_000)
    exact = COUNTER.count(cu.text)
    assert exact == cu.tokens
    assert 0.95 * budget <= exact <= budget
    assert cu.older  # there was more than fitted
    assert [p.id for p in cu.older] + [u.post_id for u in cu.units] == [p.id for p in history]


@settings(max_examples=60, deadline=None)
@given(st.lists(texts, min_size=1, max_size=40), st.integers(1_000, 4_000))
def test_bounds_hold_for_any_posts(bodies, budget):
    history = [post(i, t * 20) for i, t in enumerate(bodies, 1)]
    cu = catchup.build(history, budget=budget, now=NOW, counter=COUNTER, post_cap=600)
    assert COUNTER.count(cu.text) == cu.tokens <= budget
    if cu.older:  # history was longer than the budget: it is filled
        assert cu.tokens >= 0.95 * budget


def test_everything_fits_when_history_is_short():
    history = mixed_history(5)
    cu = catchup.build(history, budget=10_000, now=NOW, counter=COUNTER, post_cap=2_000)
    assert cu.shown == 5 and cu.older == () and not cu.clipped_to_fit
    assert COUNTER.count(cu.text) == cu.tokens


def test_long_post_is_clipped_at_the_cap_with_a_marker():
    long = "word " * 5_000
    cu = catchup.build([post(1, long)], budget=10_000, now=NOW, counter=COUNTER, post_cap=100)
    (unit,) = cu.units
    assert unit.text.endswith(" tokens in full]\n") and "…cut here; 5,00" in unit.text
    assert unit.tokens <= 100 + 30 and COUNTER.count(unit.text) == unit.tokens


def test_boundary_post_is_clipped_to_fill_the_budget():
    history = [post(1, "old " * 3_000), post(2, "short and sweet")]
    cu = catchup.build(history, budget=1_000, now=NOW, counter=COUNTER, post_cap=5_000)
    assert cu.clipped_to_fit and cu.shown == 2 and cu.older == ()
    assert 950 <= COUNTER.count(cu.text) == cu.tokens <= 1_000
    assert "…cut here" in cu.units[0].text


def test_unknown_stored_counts_are_measured():
    history = [post(i, t, stored=False) for i, t in enumerate(HARD, 1)]
    cu = catchup.build(history, budget=10_000, now=NOW, counter=COUNTER, post_cap=2_000)
    assert COUNTER.count(cu.text) == cu.tokens


def test_other_encodings_take_the_full_count():
    coster = catchup.Coster(COUNTER)
    coster.fast = False
    text = HARD[1]
    assert coster.line("[a, 1] ", text, text, 1) == COUNTER.count("[a, 1] " + text + "\n")


def test_new_posts_are_tagged_and_lines_start_with_a_prefix():
    history = mixed_history(6)
    cu = catchup.build(history, budget=10_000, now=NOW, counter=COUNTER, post_cap=2_000, new_after_id=4)
    shown = cu.text.splitlines()
    assert sum(", new] " in line for line in shown) == 2
    assert all(line.startswith(("[", lines.INDENT)) for line in shown)
    assert "(agent)" in cu.text


def test_drop_oldest_fits_characters_and_reports_the_rest():
    history = mixed_history(50)
    cu = catchup.build(history, budget=10_000, now=NOW, counter=COUNTER, post_cap=2_000)
    smaller = cu.drop_oldest(len(cu.text) // 2, history)
    assert len(smaller.text) <= len(cu.text) // 2
    assert smaller.tokens == COUNTER.count(smaller.text)
    assert len(smaller.older) + smaller.shown == len(history)


@pytest.mark.parametrize("text", ["<mood-wake>", "</mood-wake>", "< / MOOD-wake", "<mood-wa\u212ae>", "<Mood"])
def test_quote_escapes_tags(text):
    assert "<" not in lines.quote(text)


def test_stamp_shows_the_date_only_for_other_days():
    assert lines.stamp(NOW - timedelta(hours=1), NOW) == "11:00"
    assert lines.stamp(NOW - timedelta(days=2), NOW) == "2025-04-29 12:00"


FRAME_TAILS = ["\nAnswer what was asked of you, here in the Mood.\n\n———\nTo answer, just write your reply.\n",
               "\n\n———\nThis turn can look but not touch.\n", "\n", "\n  indented", "x", " ", "\n\n"]


@settings(max_examples=300, deadline=None)
@given(texts, st.sampled_from(FRAME_TAILS))
def test_a_last_line_joined_to_the_frame_is_counted_exactly(text, tail):
    left = "[alice, 14:02] " + lines.quote(text) + "\n"
    coster = catchup.Coster(COUNTER)
    assert coster.joined(left, COUNTER.count(left), tail) == COUNTER.count(left + tail)


def test_a_remembered_line_is_never_reused_for_another_post_with_the_same_id():
    # Lines are remembered across wakes; two stores may both have a post 1.
    first = catchup.build([post(1, "first text here")], budget=1_000, now=NOW, counter=COUNTER,
                          post_cap=2_000)
    again = catchup.build([post(1, "quite another text, and longer")], budget=1_000, now=NOW,
                          counter=COUNTER, post_cap=2_000)
    assert first.text.endswith("] first text here\n")
    assert again.text.endswith("] quite another text, and longer\n")
    assert again.tokens == COUNTER.count(again.text) != first.tokens


def test_the_same_post_is_shown_by_its_day_and_tag_whatever_was_remembered():
    p = post(9_990, "a post from ten minutes ago")  # NOW - 10 min
    today = catchup.build([p], budget=1_000, now=NOW, counter=COUNTER, post_cap=2_000)
    tomorrow = catchup.build([p], budget=1_000, now=NOW + timedelta(days=1), counter=COUNTER,
                             post_cap=2_000, new_after_id=1)
    assert today.text.startswith("[alice, 11:50] ")
    assert tomorrow.text.startswith("[alice, 2025-05-01 11:50, new] ")
    assert tomorrow.tokens == COUNTER.count(tomorrow.text)
