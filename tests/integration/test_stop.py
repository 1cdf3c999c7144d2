"""Stop one agent in one Mood: ``mood-poller stop`` and a trusted person's "@agent stop".

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import json

import pytest

from support.agents import agent_command, open_gate, wakes_seen
from support.timeline import TimelineCli, at

@pytest.fixture
def room(any_cli, tmp_path):
    c = TimelineCli(any_cli.db_url)
    c("mood", "add", "lobby")
    c("mood", "add", "attic")
    c("person", "add", "ada", "--trust", "full")
    c("person", "add", "lou", "--trust", "look")
    c("set", "cooldown", "0")
    return c


def tick(c, seconds) -> dict:
    return json.loads(c("tick", "--now", at(seconds), "--json").out)


def codes(report, kind="mention") -> dict:
    return {(d["agent"], d["mood"]): d["code"] for d in report["decisions"] if d["kind"] == kind}


def test_stop_ends_the_turn_there_holds_its_mentions_and_lift_answers_them(room, tmp_path):
    gate = tmp_path / "gate"
    room("agent", "add", "helper", "--command", agent_command(tmp_path, "gate", str(gate)))
    room("tick", "--now", at(0))
    room("post", "lobby", "--as", "ada", "--at", at(1), "@helper a long job")
    first = tick(room, 2)
    assert [w["kind"] for w in first["wakes"]] == ["mention"]
    done = json.loads(room("stop", "--agent", "helper", "--mood", "lobby", "--by", "ada",
                           "--json", "--now", at(3)).out)
    assert (done["turns_ended"], done["already"]) == (1, False)
    shown = json.loads(room("wakes", "show", str(first["wakes"][0]["id"]), "--json").out)
    assert shown["status"] == "cut_off" and "stopped in lobby by ada" in shown["error"]
    # a mention while stopped is held, with a note; the attic is untouched
    room("post", "lobby", "--as", "ada", "--at", at(4), "@helper are you there?")
    room("post", "attic", "--as", "ada", "--at", at(4), "@helper up here")
    open_gate(gate)
    second = tick(room, 5)
    assert codes(second)[("helper", "lobby")] == "held:stopped"
    assert [(w["mood"], w["kind"]) for w in second["wakes"]] == [("attic", "mention")]
    posts = room("posts", "lobby").out
    assert "@helper was stopped here by ada" in posts and "is holding 1 mention" in posts
    again = json.loads(room("stop", "--agent", "helper", "--mood", "lobby", "--json").out)
    assert again["already"] is True and again["turns_ended"] == 0
    # lifted: the held mention is answered
    room("stop", "--agent", "helper", "--mood", "lobby", "--lift", "--now", at(6))
    woke = json.loads(room("tick", "--now", at(7), "--wait", "--json").out)
    assert [(w["mood"], w["kind"]) for w in woke["wakes"]] == [("lobby", "mention")]
    lobby = [w for w in wakes_seen(tmp_path) if w["MOOD_SLUG"] == "lobby"]
    assert "are you there?" in lobby[-1]["text"]
    r = room("stop", "--agent", "helper", "--mood", "lobby", "--lift", "--json")
    assert json.loads(r.out)["lifted"] is False


def test_a_trusted_person_stops_and_resumes_an_agent_by_saying_so(room, tmp_path):
    room("agent", "add", "helper", "--command", agent_command(tmp_path, "reply"))
    room("tick", "--now", at(0))
    room("post", "lobby", "--as", "lou", "--at", at(1), "@helper stop")
    refused = tick(room, 2)
    assert "only a person with trust full can stop @helper here" in room("posts", "lobby").out
    assert refused["wakes"] == []  # a refused command is not a question either
    room("post", "lobby", "--as", "ada", "--at", at(3), "@helper stop")
    assert tick(room, 4)["wakes"] == []
    room("post", "lobby", "--as", "ada", "--at", at(5), "@helper what now?")
    assert codes(tick(room, 6))[("helper", "lobby")] == "held:stopped"
    why = json.loads(room("why", "--mood", "lobby", "--agent", "helper", "--json").out)
    assert why["decisions"]["mention"]["code"] == "held:stopped"
    room("post", "lobby", "--as", "ada", "--at", at(7), "@helper resume")
    report = json.loads(room("tick", "--now", at(8), "--wait", "--json").out)
    assert [w["kind"] for w in report["wakes"]] == ["mention"]
    text = wakes_seen(tmp_path)[-1]["text"]
    assert "what now?" in text
    posts = room("posts", "lobby").out
    assert "may take turns here again" in posts


def test_stop_names_what_it_cannot_find_in_one_line(room):
    room("agent", "add", "helper", "--command", "true")
    for args, word in ((("--agent", "nobody", "--mood", "lobby"), "nobody"),
                       (("--agent", "helper", "--mood", "cellar"), "cellar")):
        r = room("stop", *args, ok=False)
        assert r.code != 0 and word in r.err and "Traceback" not in r.err


def test_stop_takes_handle_and_slug_as_why_does_or_as_options(room):
    room("agent", "add", "helper", "--command", "true")
    first = json.loads(room("stop", "helper", "lobby", "--json").out)
    assert (first["agent"], first["mood"], first["already"]) == ("helper", "lobby", False)
    again = json.loads(room("stop", "--agent", "helper", "--mood", "lobby", "--json").out)
    assert again["already"] is True
    lifted = json.loads(room("stop", "helper", "lobby", "--lift", "--json").out)
    assert lifted["lifted"] is True
    clash = room("stop", "helper", "lobby", "--agent", "other", ok=False)
    assert clash.code == 2 and "different values" in clash.err
    missing = room("stop", "helper", ok=False)
    assert missing.code == 2 and "missing SLUG" in missing.err
