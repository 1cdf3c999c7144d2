"""A poller for some Moods: ``--moods`` / ``--exclude-moods`` split one store between
pollers, and ``status`` says which poller serves which Mood.

Here, the part run as processes; the rest sits under the same name in the other
layers.
"""

from __future__ import annotations

import json


from support.agents import wakes_seen
from support.runs import start_run, stop
from support.timeline import at
from support.waiting import wait_for
from support.scope import split  # noqa: F401  (fixtures)


def test_two_pollers_split_one_store_and_status_says_which_serves_which(split, tmp_path):
    runs = [start_run(split.db_url, tmp_path, "--moods", "lobby", name="lobby"),
            start_run(split.db_url, tmp_path, "--moods", "attic", name="attic")]
    try:
        def serving():
            st = json.loads(split("status", "--json", "--now", at(1)).out)
            return st if len(st["pollers"]) == 2 else None

        st = wait_for(serving, what="both pollers' first beats")
        by_scope = {p["serves"]: p["holder"] for p in st["pollers"]}
        assert set(by_scope) == {"lobby", "attic"}
        assert st["served_by"] == {"attic": [by_scope["attic"]], "lobby": [by_scope["lobby"]]}
        split("post", "lobby", "--as", "ada", "--at", at(1), "@helper lobby question")
        split("post", "attic", "--as", "ada", "--at", at(1), "@helper attic question")
        wait_for(lambda: len(wakes_seen(tmp_path)) >= 2, what="a turn in each Mood")
        assert sorted(w["MOOD_SLUG"] for w in wakes_seen(tmp_path)) == ["attic", "lobby"]
    finally:
        for proc in runs:
            assert stop(proc) == 0
    text = split("status", "--now", at(1)).out
    assert "no running poller" in text  # both stopped: their beats are gone
