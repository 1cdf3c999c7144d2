"""Settling retries lost races and never leaves a turn running."""

from __future__ import annotations

import sqlalchemy.exc

from types import SimpleNamespace

from poller.turns import kept, runner, wakers

STORE = SimpleNamespace(engine=SimpleNamespace(url="sqlite:////nowhere/moods.db"))


def test_settle_retries_a_lost_race_then_records(monkeypatch):
    calls = []

    def flaky(store, wake_id, outcome, now, prices=None):
        calls.append(outcome.status)
        if len(calls) < 3:
            raise sqlalchemy.exc.OperationalError("UPDATE", {}, Exception("deadlock detected"))
        return "replied"

    monkeypatch.setattr(runner.settling, "settle_outcome", flaky)
    monkeypatch.setattr(runner.time, "sleep", lambda s: None)
    assert runner.settle_with_retries(STORE, 1, wakers.TurnResult("replied", "hi"), lambda: None) == "replied"
    assert calls == ["replied"] * 3
    assert list(kept.waiting(STORE.engine.url)) == []  # kept while it waited, dropped once settled


def test_a_store_still_down_leaves_the_finished_reply_kept_for_recovery(monkeypatch):
    def down(store, wake_id, outcome, now, prices=None):
        raise sqlalchemy.exc.OperationalError("BEGIN", {}, Exception("connection refused"))

    monkeypatch.setattr(runner.settling, "settle_outcome", down)
    monkeypatch.setattr(runner.time, "sleep", lambda s: None)
    outcome = wakers.TurnResult("replied", "the answer")
    assert runner.settle_with_retries(STORE, 5, outcome, lambda: None, patience=0) == ""
    assert list(kept.waiting(STORE.engine.url)) == [5]
    assert kept.kept(STORE.engine.url, 5) == outcome


def test_a_reply_that_cannot_be_recorded_closes_the_turn_as_failed(monkeypatch):
    seen = []

    def broken(store, wake_id, outcome, now, prices=None):
        seen.append(outcome)
        if outcome.status == "replied":
            raise ValueError("a bug while applying blocks")
        return outcome.status

    monkeypatch.setattr(runner.settling, "settle_outcome", broken)
    assert runner.settle_with_retries(STORE, 1, wakers.TurnResult("replied", "hi"), lambda: None) == "failed"
    assert "could not be recorded: ValueError" in seen[-1].error


def test_claim_waits_out_a_busy_database_instead_of_dying(monkeypatch):
    calls = []

    def busy_then_free(store, wake_id, now, pid):
        calls.append(wake_id)
        if len(calls) < 3:
            raise sqlalchemy.exc.OperationalError("BEGIN IMMEDIATE", {}, Exception("database is locked"))
        return "claimed"

    monkeypatch.setattr(runner.turns, "claim", busy_then_free)
    assert runner.claim_with_retries(None, 7, lambda: None) == "claimed"
    assert calls == [7, 7, 7]
