"""A poller for some Moods: ``--moods`` / ``--exclude-moods`` split one store between
pollers, and ``status`` says which poller serves which Mood.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import json


from support.timeline import at
from support.scope import split  # noqa: F401  (fixtures)


def test_a_scoped_tick_wakes_only_in_the_moods_it_serves(split):
    split("post", "lobby", "--as", "ada", "--at", at(1), "@helper in the lobby")
    split("post", "attic", "--as", "ada", "--at", at(1), "@helper in the attic")
    first = json.loads(split("tick", "--now", at(2), "--wait", "--json",
                             "--exclude-moods", "lobby").out)
    assert [(w["mood"], w["kind"]) for w in first["wakes"]] == [("attic", "mention")]
    assert all(d["mood"] == "attic" for d in first["decisions"])
    why = json.loads(split("why", "--mood", "lobby", "--agent", "helper", "--json").out)
    assert why["decisions"].get("mention") is None  # nobody weighed the lobby yet
    second = json.loads(split("tick", "--now", at(3), "--wait", "--json",
                              "--moods", "lobby").out)
    assert [(w["mood"], w["kind"]) for w in second["wakes"]] == [("lobby", "mention")]


def test_a_scope_naming_an_unknown_mood_is_refused_in_one_line(split):
    r = split("tick", "--moods", "lobby,cellar", ok=False)
    assert r.code != 0 and "no such Mood: cellar" in r.err and "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) == 1
    r = split("run", "--moods", "lobby", "--exclude-moods", "attic", ok=False)
    assert r.code != 0 and "not both" in r.err


