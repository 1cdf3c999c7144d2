"""One bad row never stops the service: it is set aside, shown, and the rest goes on.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import json


from poller.cycle import evaluate
from support.quarantine import at, poison_post, wakes, world

def test_a_post_dated_9999_is_set_aside_and_later_mentions_are_answered(cli, tmp_path):
    c = world(cli, tmp_path)
    bad = poison_post(c.db_url)
    good = int(c("post", "attic", "--as", "ada", "--at", at(2), "@bot are you there?").out)
    c("tick", "--now", at(3), "--wait")
    assert [w["answers"] for w in wakes(c)] == [[good]]
    st = json.loads(c("status", "--json", "--now", at(4)).out)
    (aside,) = st["quarantined"]
    assert (aside["kind"], aside["ref"], aside["mood"]) == ("post", str(bad), "lobby")
    assert "Overflow" in aside["error"]
    assert f"set aside: post {bad} in lobby" in c("status", "--now", at(4)).out
    why = json.loads(c("why", "--mood", "lobby", "--agent", "bot", "--json").out)
    assert [q["ref"] for q in why["quarantined"]] == [str(bad)]
    c("tick", "--now", at(5), "--wait")  # the cursor moved past it: not met again
    assert json.loads(c("status", "--json").out)["quarantined"][0]["count"] == 1


def test_a_listener_whose_evaluation_raises_is_set_aside_and_others_are_served(
        cli, tmp_path, monkeypatch):
    c = world(cli, tmp_path)
    c("post", "lobby", "--as", "ada", "--at", at(1), "@bot lobby question")
    ok = int(c("post", "attic", "--as", "ada", "--at", at(1), "@bot attic question").out)
    real = evaluate.kind_facts

    def broken_in_lobby(ctx, s, kind, l, owed, now):
        if l.mood_id == 1:
            raise ValueError("a value nobody expected")
        return real(ctx, s, kind, l, owed, now)

    monkeypatch.setattr(evaluate, "kind_facts", broken_in_lobby)
    c("tick", "--now", at(2), "--wait")
    assert [w["answers"] for w in wakes(c)] == [[ok]]
    why = json.loads(c("why", "--mood", "lobby", "--agent", "bot", "--json").out)
    (aside,) = why["quarantined"]
    assert aside["kind"] == "listener" and "ValueError: a value nobody expected" in aside["error"]
    # Tried again later (after poller.hold_renew), not every cycle.
    assert why["timers"]["due_at"] == at(2 + 300)
    monkeypatch.setattr(evaluate, "kind_facts", real)
    c("tick", "--now", at(303), "--wait")
    assert len(wakes(c)) == 2
