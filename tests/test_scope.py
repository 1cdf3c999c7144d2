"""A poller for some Moods: ``--moods`` / ``--exclude-moods`` split one store between
pollers, and ``status`` says which poller serves which Mood."""

from __future__ import annotations

import json

import pytest

from support.agents import agent_command, wakes_seen
from poller import errors
from poller.scope import Scope
from support.runs import start_run, stop
from support.timeline import TimelineCli, at
from support.waiting import wait_for


@pytest.mark.parametrize("only,without,lobby,attic,described", [
    (None, None, True, True, "all"),
    ("lobby", None, True, False, "lobby"),
    ("attic, lobby", None, True, True, "attic,lobby"),
    (None, "lobby", False, True, "all but lobby"),
])
def test_a_scope_serves_what_it_names_and_reads_back_from_its_description(
        only, without, lobby, attic, described):
    scope = Scope.parse(only, without)
    assert (scope.serves("lobby"), scope.serves("attic")) == (lobby, attic)
    assert scope.describe() == described
    assert Scope.from_description(described) == scope
    name = scope.lease_name("poller")
    assert len(name) <= 32 and (name == "poller") == scope.everything


@pytest.mark.parametrize("only,without,message", [
    ("lobby", "attic", "not both"),
    (" , ", None, "--moods needs at least one"),
    (None, "", "--exclude-moods needs at least one"),
])
def test_a_scope_refuses_what_it_cannot_mean(only, without, message):
    with pytest.raises(errors.UserError, match=message):
        Scope.parse(only, without)


@pytest.fixture
def split(any_cli, tmp_path):
    """The lobby and the attic, ada, and an agent that replies; one cycle run."""
    c = TimelineCli(any_cli.db_url)
    c("mood", "add", "lobby")
    c("mood", "add", "attic")
    c("person", "add", "ada", "--trust", "full")
    c("agent", "add", "helper", "--command", agent_command(tmp_path, "reply"))
    c("tick", "--now", at(0))
    return c


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
