"""One bad row never stops the service: it is set aside, shown, and the rest goes on."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys

import sqlalchemy as sa

from support.agents import agent_command
from poller.cycle import evaluate
from support.waiting import wait_for

T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


def at(seconds: float) -> str:
    return (T0 + dt.timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def world(cli, tmp_path):
    cli("mood", "add", "lobby")
    cli("mood", "add", "attic")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "bot", "--command", agent_command(tmp_path, "reply"))
    cli("set", "cooldown", "0")
    cli("tick", "--now", at(0))
    return cli


def poison_post(db_url: str, text: str = "@bot from the far future") -> int:
    """A row written past the product's checks (an old version, a hand edit)."""
    engine = sa.create_engine(db_url)
    with engine.begin() as c:
        mood = c.exec_driver_sql("SELECT id FROM moods WHERE slug = 'lobby'").scalar()
        ada = c.exec_driver_sql("SELECT id FROM participants WHERE handle = 'ada'").scalar()
        c.exec_driver_sql(
            "INSERT INTO posts (mood_id, sender_id, created_at, text, kind, tokens) "
            "VALUES (?, ?, '9999-12-31 23:59:00.000000', ?, 'post', 5)", (mood, ada, text))
        pid = c.exec_driver_sql("SELECT max(id) FROM posts").scalar()
    engine.dispose()
    return pid


def wakes(cli):
    return sorted(json.loads(cli("wakes", "--json").out), key=lambda w: w["id"])


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


def test_run_survives_the_poison_post_and_keeps_serving(cli, tmp_path):
    c = world(cli, tmp_path)
    poison_post(c.db_url)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOOD_")}
    log = open(tmp_path / "run.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "poller", "--db", c.db_url, "run",
                             "--interval", "0.2"], stdout=log, stderr=log, env=env,
                            start_new_session=True)
    try:
        p = int(c("post", "lobby", "--as", "ada", "@bot still there?").out)
        wait_for(lambda: any(w["answers"] == [p] and w["status"] == "replied" for w in wakes(c)),
                 what="the mention after the poison post to be answered")
        assert proc.poll() is None  # still running
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(120)
    assert proc.returncode == 0


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
