"""The cycle's seams: turns in process or as runners, the recheck before a wake is
recorded, one ingest path for replies, one clock, SQL only in the store, and the
dial wording read (and cached) outside every write transaction.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
import sqlalchemy as sa

from support.agents import agent_command, wakes_seen
from poller import config as config_mod, tokens
from poller.cycle import drafts, loop
from poller.turns import launch
from poller.store import db
from poller.store import Store
from support.machine import REPO
from support.cycle import T0, at, lobby

def wakes(cli) -> list[dict]:
    return sorted(json.loads(cli("wakes", "--json").out), key=lambda w: w["id"])


def posts(cli, mood="lobby") -> list[dict]:
    return json.loads(cli("posts", mood, "--limit", "200", "--json").out)


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_a_mention_is_answered_once_whichever_way_turns_are_launched(any_cli, tmp_path,
                                                                     monkeypatch, mode):
    monkeypatch.setenv("MOOD_POLLER_LAUNCH", mode)
    c = lobby(any_cli, agent_command(tmp_path, "reply"))
    p = int(c("post", "lobby", "--as", "ada", "--at", at(1), "@bot hello").out)
    out = c("tick", "--now", at(2), "--wait").out
    assert "woke bot in lobby: mention" in out
    for s in (3, 4, 100):
        c("tick", "--now", at(s), "--wait")
    (w,) = wakes(c)
    assert (w["status"], w["answers"]) == ("replied", [p])
    assert posts(c)[-1]["text"] == "bot answering mention"
    assert len(wakes_seen(tmp_path)) == 1


def test_tick_in_thread_mode_waits_for_its_turns_without_being_asked(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("MOOD_POLLER_LAUNCH", "thread")
    c = lobby(cli, agent_command(tmp_path, "slow", "0.5"))
    c("post", "lobby", "--as", "ada", "--at", at(1), "@bot take your time")
    c("tick", "--now", at(2))  # no --wait: the turn lives in this process, so tick waits
    (w,) = wakes(c)
    assert w["status"] == "replied"


def test_a_reply_holding_a_nul_byte_is_refused_alike_on_both_databases(any_cli, tmp_path):
    script = tmp_path / "nul_agent.py"
    script.write_text("import sys\nsys.stdin.read()\nsys.stdout.write('before\\x00after')\n")
    c = lobby(any_cli, f"python3 {script}")
    c("post", "lobby", "--as", "ada", "--at", at(1), "@bot say something odd")
    c("tick", "--now", at(2), "--wait")
    (w,) = wakes(c)
    assert w["status"] == "failed"
    assert "NUL" in w["error"] and "could not be posted" in w["error"]
    last = posts(c)[-1]
    assert last["kind"] == "system" and "\x00" not in last["text"]
    assert not [p for p in posts(c) if "before" in p["text"]]


def test_a_person_and_an_agent_meet_the_same_ingest_rules(cli, tmp_path):
    c = lobby(cli, agent_command(tmp_path, "reply"))
    assert "NUL" in c.fails("post", "lobby", "--as", "ada", "a\x00b").err


# -- the recheck between deciding and recording ----------------------------------------


def _poller(url: str) -> loop.Poller:
    cfg = config_mod.load(db_url=url)  # the environment's settings (its sandbox) included
    store = Store(db.make_engine(url), tokens.counter(cfg.encoding))
    return loop.Poller(store, cfg, launcher=launch.ThreadLauncher(store, cfg))


def test_a_wake_is_dropped_if_the_listener_changed_while_it_was_composed(any_cli, tmp_path,
                                                                        monkeypatch):
    """Another poller wakes the agent while this one composes: nothing is recorded twice."""
    c = lobby(any_cli, agent_command(tmp_path, "reply"))
    p = int(c("post", "lobby", "--as", "ada", "--at", at(1), "@bot once only").out)
    first, second = _poller(c.db_url), _poller(c.db_url)
    # On SQLite a second poller would wait for the lease; sharing it stands in for
    # whatever else may move the listener meanwhile (a turn settling, a restart).
    second.holder = first.holder
    real = drafts.compose_text
    raced = []

    def compose_while_another_poller_records(ctx, d):
        wake = real(ctx, d)
        if not raced:  # the other poller, in between, does the whole cycle
            raced.append(None)
            raced[0] = second.tick(T0 + dt.timedelta(seconds=2))
        return wake

    monkeypatch.setattr(drafts, "compose_text", compose_while_another_poller_records)
    report = first.tick(T0 + dt.timedelta(seconds=2))
    first.wait(120)
    second.wait(120)
    assert report.wakes == [] and report.abandoned == 1
    assert [w.kind for w in raced[0].wakes] == ["mention"]
    (w,) = wakes(c)
    assert w["answers"] == [p] and w["status"] == "replied"
    for p_ in (first, second):
        p_.store.engine.dispose()


def test_composing_runs_outside_any_write_transaction(cli, tmp_path, monkeypatch):
    """While a wake is composed (an LLM summary may take seconds) others can write."""
    c = lobby(cli, agent_command(tmp_path, "reply"))
    c("post", "lobby", "--as", "ada", "--at", at(1), "@bot hello")
    poller = _poller(c.db_url)
    real = drafts.compose_text
    wrote = []

    def compose_and_write_meanwhile(ctx, d):
        # A writer with no patience: it would fail at once if the lock were held.
        eng = sa.create_engine(c.db_url, connect_args={"timeout": 0})
        with eng.begin() as conn:
            conn.exec_driver_sql("UPDATE moods SET title = 'written meanwhile'")
        eng.dispose()
        wrote.append(True)
        return real(ctx, d)

    monkeypatch.setattr(drafts, "compose_text", compose_and_write_meanwhile)
    report = poller.tick(T0 + dt.timedelta(seconds=2))
    poller.wait(120)
    poller.store.engine.dispose()
    assert wrote and [w.kind for w in report.wakes] == ["mention"]
    assert json.loads(c("mood", "list", "--json").out)[0]["title"] == "written meanwhile"


# -- one clock ------------------------------------------------------------------------------


def test_every_command_reads_one_clock(cli, monkeypatch):
    cli("--now", "2031-01-02T03:04:05Z", "mood", "add", "lobby")
    assert json.loads(cli("mood", "list", "--json").out)[0]["created_at"] == "2031-01-02T03:04:05Z"
    monkeypatch.setenv("MOOD_POLLER_NOW", "2031-01-02T03:05:00Z")
    cli("person", "add", "ada")
    p = json.loads(cli("person", "list", "--json").out)[0]
    assert p["created_at"] == "2031-01-02T03:05:00Z"
    cli("post", "lobby", "--as", "ada", "hi", "--now", "2031-01-02T03:06:00Z")
    assert posts(cli)[-1]["created_at"] == "2031-01-02T03:06:00Z"
    assert "invalid --now" in cli.fails("scram", "--lift", "--now", "yesterday").err


# -- SQL only in the store --------------------------------------------------------------


def test_sql_lives_only_in_the_store():
    pattern = re.compile(r"sa\.select|session\.execute|\.execute\(|sa\.update|sa\.delete")
    offenders = []
    for path in sorted([*(REPO / "poller").rglob("*.py"), *(REPO / "wiki_rules").rglob("*.py")]):
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith(("poller/store/", "poller/migrations/")):
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{rel}:{n}: {line.strip()}")
    assert offenders == []


# -- turn results for operators ---------------------------------------------------------------


def test_why_and_the_log_say_how_a_woken_turn_ended(cli, tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("MOOD_POLLER_LAUNCH", "process")
    c = lobby(cli, "no-such-command-xyz")
    c("post", "lobby", "--as", "ada", "--at", at(1), "@bot are you there?")
    c("tick", "--now", at(2), "--wait", "--log-json")
    runner_err = capfd.readouterr().err  # the runner process writes to the inherited stderr
    why = json.loads(c("why", "--mood", "lobby", "--agent", "bot", "--json").out)
    turn = why["decisions"]["mention"]["turn"]
    assert turn["status"] == "failed" and "127" in turn["error"]
    line = [x for x in c("why", "--mood", "lobby", "--agent", "bot").out.splitlines()
            if x.startswith("mention")][0]
    assert "woke -> failed (" in line and "127" in line
    # The runner process logged the turn's end as one JSON line, with what an operator needs.
    ended = [json.loads(x) for x in runner_err.splitlines()
             if x.startswith("{") and '"turn_settled"' in x]
    assert len(ended) == 1
    e = ended[0]
    assert (e["agent"], e["mood"], e["kind"], e["status"]) == ("bot", "lobby", "mention", "failed")
    assert e["prompt_tokens"] > 0 and e["duration_s"] >= 0 and "127" in e["error"]
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$", e["at"])
