"""The set-based cycle: a batch of due pairs is decided on facts read in a few set
queries, and decides exactly what weighing the pairs one at a time decides; a
pair that breaks is set aside while the rest of its batch is decided; two
pollers sharing PostgreSQL never wake an agent twice for one mention."""

from __future__ import annotations

import datetime as dt
import re
import shutil
import threading

import sys

import pytest
import sqlalchemy as sa

from poller import config as config_mod, models, tokens
from poller.cycle import drafts, evaluate, loop
from poller.turns import settling, wakers
from poller.store import Store, db, facts, turns
from support.machine import REPO

sys.path.insert(0, str(REPO / "bench"))
from _common import ListLauncher  # noqa: E402  (a launcher that only notes the turns started)

T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


def t(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


@pytest.fixture(params=["sqlite", "postgresql"])
def new_store(request, tmp_path):
    """Makes fresh, initialised stores of one kind of database (several per test)."""
    made = []

    def make() -> Store:
        if request.param == "sqlite":
            path = tmp_path / f"moods{len(made)}.db"
            shutil.copyfile(request.getfixturevalue("migrated_sqlite"), path)
            url = f"sqlite:///{path}"
        else:
            server = request.getfixturevalue("pg_server")
            url = server.new_database(template=request.getfixturevalue("migrated_pg"))
        store = Store(db.make_engine(url), tokens.counter())
        made.append(store)
        return store

    yield make
    for store in made:
        store.engine.dispose()


def poller_for(store: Store) -> tuple[loop.Poller, ListLauncher]:
    launcher = ListLauncher()
    cfg = config_mod.load(db_url=store.engine.url.render_as_string(hide_password=False))
    return loop.Poller(store, cfg, launcher=launcher), launcher


def mixed_world(store: Store) -> None:
    """Six Moods, two agents, caps that bite, and every kind of wake due at once."""
    for i in range(6):
        store.add_mood(f"m{i}", f"m{i}", T0)
    store.add_person("ada", "full", T0)
    store.add_person("bob", "look", T0)
    store.add_agent("a1", T0, command="true")
    store.add_agent("a2", T0, command="true")
    store.set_settings({"cooldown": "0", "consider_after": "5"}, T0)
    store.set_setting("parallel_turns", "2", T0, agent="a1")
    store.set_setting("max_wakes_per_hour", "3", T0, agent="a2")
    store.set_setting("listening", "mentions", T0, mood="m1")
    store.archive_mood("m2")


def mixed_posts(store: Store) -> None:
    for i in range(6):
        store.add_post(f"m{i}", "ada", "morning all", t(1))
    for i in range(5):
        store.add_post(f"m{i}", "bob", "@a1 a question for you", t(2))
        store.add_post(f"m{i}", "ada", "@a2 and one for you", t(2))
    for _ in range(4):  # only an agent asks, again and again: a bot chain
        store.add_post("m5", "a2", "@a1 over to you", t(3))
    store.add_signin("bob", "m3", t(3))
    store.add_signin("bob", "m5", t(3))


def snapshot(store: Store) -> dict:
    with store.reading() as s:
        d, w, wp, l = (models.DecisionRow.__table__, models.Wake.__table__,
                       models.WakeAnswer.__table__, models.Listener.__table__)
        return {
            "decisions": sorted(tuple(r) for r in s.execute(sa.select(
                d.c.agent_id, d.c.mood_id, d.c.kind, d.c.outcome, d.c.reason, d.c.next_due,
                d.c.count, d.c.wake_id.is_(None)))),
            "wakes": sorted(tuple(r) for r in s.execute(sa.select(
                w.c.agent_id, w.c.mood_id, w.c.kind, w.c.tools, w.c.status, w.c.text))),
            "answers": sorted(tuple(r) for r in s.execute(sa.select(wp.c.agent_id, wp.c.post_id))),
            "listeners": sorted(tuple(r) for r in s.execute(sa.select(l))),
            "posts": sorted(tuple(r) for r in s.execute(sa.select(
                models.Post.mood_id, models.Post.kind, models.Post.text))),
        }


def run_mixed(store: Store, batch: int, monkeypatch) -> tuple[dict, list]:
    monkeypatch.setattr(loop, "DUE_BATCH", batch)
    mixed_world(store)
    poller, launcher = poller_for(store)
    poller.tick(t(0))
    mixed_posts(store)
    reports = []
    for k, now in enumerate((t(4), t(20), t(40), t(4000))):
        launcher.started.clear()
        report = poller.tick(now)
        # The batch's fingerprint of each wake (poller.cycle.evaluate) is the one read back when
        # it is recorded (cycle.fingerprint): none is dropped as changed meanwhile.
        assert report.abandoned == 0 and report.quarantined == 0
        reports.append(sorted(report.decisions))
        for wake_id in launcher.started[: 1 + k % 2]:  # some turns end, some are still running
            turns.claim(store, wake_id, now, 1)
            settling.settle_outcome(store, wake_id, wakers.TurnResult("replied", reply="noted"), now)
        if k == 0:  # chatter after the mentions' wakes: a consider for each agent
            store.add_post("m1", "ada", "thanks, both", t(10))
            store.add_post("m3", "bob", "thanks, both", t(10))
    return snapshot(store), reports


def test_a_batch_decides_exactly_what_one_pair_at_a_time_decides(new_store, monkeypatch):
    one_by_one, told_one = run_mixed(new_store(), 1, monkeypatch)
    batched, told_batch = run_mixed(new_store(), 500, monkeypatch)
    assert batched == one_by_one
    assert told_batch == told_one
    reasons = {r[4] for r in batched["decisions"]}
    # The batch met every rule the world was built to reach.
    assert {"woke", "no-free-slot", "hourly-cap", "listening-mentions", "archived",
            "bot-loop"} <= reasons, reasons
    assert any(w[2] == "arrival" for w in batched["wakes"])


def mentions_only(store: Store) -> loop.Poller:
    """The mixed world listening to mentions only, its poller past the first cycle."""
    mixed_world(store)
    store.set_setting("listening", "mentions", T0)
    poller, _ = poller_for(store)
    poller.tick(t(0))
    return poller


def test_a_repeated_decision_only_moves_its_time_and_count(new_store):
    store = new_store()
    poller = mentions_only(store)
    for k in range(3):
        store.add_post("m0", "ada", "chatter", t(100 * k + 1))
        poller.tick(t(100 * k + 2))
        poller.tick(t(100 * k + 50))
    with store.reading() as s:
        rows = s.execute(sa.select(models.DecisionRow.agent_id, models.DecisionRow.kind,
                                   models.DecisionRow.reason, models.DecisionRow.count,
                                   models.DecisionRow.at, models.DecisionRow.last_at)
                         .where(models.DecisionRow.mood_id == 1)).all()
    assert sorted((r.kind, r.reason, r.count) for r in rows) == [
        ("consider", "listening-mentions", 3)] * 2
    assert {(r.at, r.last_at) for r in rows} == {(t(50), t(250))}


def both_named_in(store: Store, moods) -> loop.Poller:
    """The mixed world with caps that do not bite, past its first cycle, and a post naming
    both agents in each of *moods* (m0, m1...)."""
    mixed_world(store)
    store.set_setting("parallel_turns", "64", T0, agent="a1")
    store.set_setting("max_wakes_per_hour", "600", T0, agent="a2")
    poller, _ = poller_for(store)
    poller.tick(t(0))
    for i in moods:
        store.add_post(f"m{i}", "ada", "@a1 @a2 hello", t(1))
    return poller


def test_one_broken_pair_is_set_aside_and_the_rest_of_its_batch_is_decided(
        new_store, monkeypatch):
    store = new_store()
    poller = both_named_in(store, range(6))
    real = evaluate.kind_facts

    def broken_in_m3(ctx, s, kind, l, owed, now):
        if l.mood_id == 4 and l.agent_id == 3:
            raise ValueError("a value nobody expected")
        return real(ctx, s, kind, l, owed, now)

    monkeypatch.setattr(evaluate, "kind_facts", broken_in_m3)
    report = poller.tick(t(2))
    assert report.quarantined == 1
    woke = {(w.agent, w.mood) for w in report.wakes}
    assert ("a1", "m3") not in woke and ("a1", "m0") in woke and ("a2", "m3") in woke
    with store.reading() as s:
        aside = s.execute(sa.select(models.Quarantine.ref, models.Quarantine.error)).all()
        l = s.get(models.Listener, (3, 4))
        decided = s.scalar(sa.select(sa.func.count()).select_from(models.DecisionRow).where(
            models.DecisionRow.agent_id == 3, models.DecisionRow.mood_id == 4))
    assert [r.ref for r in aside] == ["3:4"] and "ValueError" in aside[0].error
    assert decided == 0 and l.due_at == t(2 + 300)  # untouched, and tried again later


def test_a_statement_the_database_refuses_sets_aside_only_its_pair(new_store, monkeypatch):
    store = new_store()
    mixed_world(store)
    poller, _ = poller_for(store)
    poller.tick(t(0))
    for i in (0, 3, 4):
        store.add_post(f"m{i}", "ada", "@a1 hello", t(1))
    real = evaluate.kind_facts

    def refused_in_m3(ctx, s, kind, l, owed, now):
        if l.mood_id == 4:  # a duplicate key: on PostgreSQL the transaction is unusable after it
            s.execute(sa.text("INSERT INTO cursors (name, value, at) VALUES ('posts', 0, :at)"),
                      {"at": dt.datetime(2026, 1, 1)})
        return real(ctx, s, kind, l, owed, now)

    monkeypatch.setattr(evaluate, "kind_facts", refused_in_m3)
    report = poller.tick(t(2))
    assert report.quarantined == 1
    assert sorted(w.mood for w in report.wakes) == ["m0", "m4"]


def test_two_pollers_on_postgresql_never_wake_twice_for_one_mention(pg_server, migrated_pg):
    url = pg_server.new_database(template=migrated_pg)
    store = Store(db.make_engine(url), tokens.counter())
    for i in range(30):
        store.add_mood(f"m{i}", f"m{i}", T0)
    store.add_person("ada", "full", T0)
    for name in ("a1", "a2", "a3"):
        store.add_agent(name, T0, command="true")
    store.set_settings({"cooldown": "0", "max_wakes_per_hour": "600", "parallel_turns": "64"}, T0)
    pollers = [poller_for(Store(db.make_engine(url), tokens.counter())) for _ in range(2)]
    pollers[0][0].tick(t(0))
    mentions = []
    failures: list[BaseException] = []
    for r in range(4):
        for i in range(30):
            mentions.append(store.add_post(f"m{i}", "ada", "@a1 @a2 @a3 round", t(10 * r + 1)).id)
        barrier = threading.Barrier(2)

        def cycle(p, now):
            try:
                barrier.wait()
                p.tick(now)
            except BaseException as exc:  # noqa: BLE001 - reported below
                failures.append(exc)

        threads = [threading.Thread(target=cycle, args=(p, t(10 * r + 2))) for p, _ in pollers]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        for p, launcher in pollers:  # the turns end before the next round
            for wake_id in launcher.started:
                turns.claim(p.store, wake_id, t(10 * r + 3), 1)
                settling.settle_outcome(p.store, wake_id, wakers.TurnResult("replied", reply="ok"),
                                     t(10 * r + 3))
            launcher.started.clear()
    for p, _ in pollers:  # anything a lost race left due is answered now, once
        p.tick(t(100))
    assert not failures
    with store.reading() as s:
        answered = s.execute(sa.select(models.WakeAnswer.agent_id, models.WakeAnswer.post_id)).all()
        overlaps = s.scalar(sa.text(
            "SELECT count(*) FROM wakes a JOIN wakes b ON a.agent_id = b.agent_id "
            "AND a.mood_id = b.mood_id AND a.id < b.id AND b.created_at < a.finished_at"))
        aside = s.scalar(sa.select(sa.func.count()).select_from(models.Quarantine))
    assert len(answered) == len(set(answered)) == 3 * len(mentions)
    assert overlaps == 0 and aside == 0
    for p, _ in pollers:
        p.store.engine.dispose()
    store.engine.dispose()


def test_every_due_pair_is_decided_once_in_batches_no_larger_than_the_cap(new_store, monkeypatch):
    store = new_store()
    poller = mentions_only(store)
    for i in range(6):
        store.add_post(f"m{i}", "ada", "chatter", t(1))
    poller.tick(t(2))  # read: every listener arms a consider
    monkeypatch.setattr(loop, "DUE_BATCH", 5)
    sizes, real = [], evaluate.evaluate

    def counted(ctx, s, pairs, now):
        sizes.append(len(pairs))
        return real(ctx, s, pairs, now)

    monkeypatch.setattr(evaluate, "evaluate", counted)
    report = poller.tick(t(60))
    assert report.due == 12 and sorted(sizes) == [2, 5, 5]
    assert len(report.decisions) == 12  # each pair once: skipped, listening=mentions


def test_listener_times_written_to_the_driver_are_stored_as_sqlalchemy_stores_them(new_store):
    """The listeners' executemany bypasses SQLAlchemy's conversion: a time written that
    way must compare and read back exactly as one SQLAlchemy wrote."""
    store = new_store()
    mixed_world(store)
    poller, _ = poller_for(store)
    poller.tick(t(0))
    odd = dt.datetime(2026, 11, 30, 13, 0, 0, 5, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    with store.writing() as s:
        facts.save(s, facts.listeners(s, {(3, 1), (4, 1)}).values())  # new: inserted
    with store.writing() as s:
        rows = facts.listeners(s, {(3, 1), (4, 1)})
        rows[(3, 1)].due_at, rows[(4, 1)].due_at = odd, t(7)  # updated through the driver
        rows[(3, 1)].quiet_due_at = t(9)
        facts.save(s, rows.values())
    with store.reading() as s:
        got = {(l.agent_id, l.mood_id): (l.due_at, l.quiet_due_at)
               for l in s.scalars(sa.select(models.Listener))}
        due = s.scalars(sa.select(models.Listener.agent_id).where(
            models.Listener.due_at <= t(0) + dt.timedelta(microseconds=5))).all()
    assert got[(3, 1)] == (t(0) + dt.timedelta(microseconds=5), t(9))
    assert got[(4, 1)] == (t(7), None)
    assert due == [3]


def test_settings_are_resolved_once_for_all_pairs_the_same_rows_apply_to():
    from poller import settings as settings_mod
    from poller.store.cycle import SettingsCache

    cache = SettingsCache()
    rows = [settings_mod.Row(1, None, None, "listening", "mentions"),
            settings_mod.Row(2, 7, 3, "listening", "off", t(60))]
    cache._rows, cache._max = rows, 2
    cache._slots = {(None, None): [rows[0]], (7, 3): [rows[1]]}
    a, b = cache.values(1, 3, t(0)), cache.values(2, 4, t(0))
    assert a is b and a["listening"] == "mentions"  # one result shared, not one a pair
    assert cache.values(7, 3, t(0))["listening"] == "off"
    assert cache.values(7, 3, t(61))["listening"] == "mentions"  # the until lapsed


TEXT_READ = re.compile(r"SELECT posts\.(?:id, posts\.)?text\s+FROM posts\s+WHERE posts\.id\b")


def test_the_scan_reads_what_a_batch_of_mentions_says_in_one_statement(new_store):
    """Every reader of posts (stop and resume, slash commands, approvals) asks what a post
    naming an agent says; the scan reads a batch's texts once and each reader still acts."""
    store = new_store()
    store.add_mood("lobby", "lobby", T0)
    store.add_person("ada", "full", T0)
    store.add_agent("a1", T0, command="true")
    store.add_agent("a2", T0, command="true")
    store.set_settings({"cooldown": "0"}, T0)
    poller, launcher = poller_for(store)
    poller.tick(t(0))
    store.add_posts([("lobby", "ada", "@a1 stop", t(1)),
                     ("lobby", "ada", "@a2 what do you think?", t(1)),
                     ("lobby", "ada", "@a1 @a2 and the two of you?", t(1))])
    reads = []

    def seen(_conn, _cursor, statement, *_args):
        if TEXT_READ.search(statement):
            reads.append(statement)

    sa.event.listen(store.engine, "before_cursor_execute", seen)
    try:
        poller.tick(t(2))
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", seen)
    assert len(reads) == 1 and " IN " in reads[0]
    with store.reading() as s:
        woke = s.execute(sa.select(models.Participant.handle, models.Wake.kind)
                         .join(models.Wake, models.Wake.agent_id == models.Participant.id)).all()
        stopped = s.scalar(sa.select(models.Listener.stopped_by)
                           .join(models.Participant,
                                 models.Participant.id == models.Listener.agent_id)
                           .where(models.Participant.handle == "a1"))
    assert woke == [("a2", "mention")] and stopped == "ada"


def test_a_batch_recorded_at_once_writes_what_recording_one_wake_at_a_time_writes(
        new_store, monkeypatch):
    at_once, told_at_once = run_mixed(new_store(), 500, monkeypatch)

    def refused(*_args, **_kw):
        raise RuntimeError("recorded one by one instead")

    monkeypatch.setattr(drafts, "record_set", refused)  # the loop falls back to one by one
    one_by_one, told_one = run_mixed(new_store(), 500, monkeypatch)
    assert at_once == one_by_one and told_at_once == told_one
    assert len(at_once["wakes"]) >= 8 and at_once["answers"]


def _record_statements(store: Store, poller: loop.Poller, monkeypatch) -> list[int]:
    """The statements each recording of a batch sends (``Poller._record``)."""
    counts, on = [], []
    sa.event.listen(store.engine, "before_cursor_execute", lambda *a: on and on.append(1))
    real = loop.Poller._record

    def counted(self, composed, now, report):
        on.append(1)
        try:
            return real(self, composed, now, report)
        finally:
            counts.append(len(on) - 1)
            on.clear()

    monkeypatch.setattr(loop.Poller, "_record", counted)
    return counts


@pytest.mark.parametrize("moods", [3, 24])
def test_a_batch_of_wakes_is_recorded_in_the_same_few_statements_however_many(
        new_store, monkeypatch, moods):
    store = new_store()
    for i in range(moods):
        store.add_mood(f"m{i}", f"m{i}", T0)
    store.add_person("ada", "full", T0)
    store.add_agent("a1", T0, command="true")
    store.add_agent("a2", T0, command="true")
    store.set_settings({"cooldown": "0", "parallel_turns": "64",
                        "max_wakes_per_hour": "600"}, T0)
    poller, _ = poller_for(store)
    poller.tick(t(0))
    store.add_posts([(f"m{i}", "ada", "@a1 @a2 a question for you both", t(1))
                     for i in range(moods)])
    counts = _record_statements(store, poller, monkeypatch)
    report = poller.tick(t(2))
    assert len(report.wakes) == 2 * moods and report.abandoned == 0
    # The flag, the listeners, the agents, the Moods (PostgreSQL), what is owed, the load,
    # the floor; the wakes, their posts, what they paid, their turns, their decisions, the
    # listeners; a savepoint, BEGIN and COMMIT on SQLite: never one a wake.
    assert counts == [counts[0]] and counts[0] <= 18, counts
    with store.reading() as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(models.Owed)) == 0
        answered = s.execute(sa.select(models.WakeAnswer.agent_id, models.WakeAnswer.post_id)).all()
    assert len(answered) == 2 * moods


def test_a_wake_that_breaks_its_recording_is_set_aside_and_the_rest_of_its_batch_stands(
        new_store, monkeypatch):
    store = new_store()
    poller = both_named_in(store, (0, 3, 4))
    real = drafts.after_wake

    def broken_in_m3(ctx, s, l, draft, now):
        if draft.mood.slug == "m3" and draft.agent.handle == "a1":
            raise ValueError("a value nobody expected")
        return real(ctx, s, l, draft, now)

    monkeypatch.setattr(drafts, "after_wake", broken_in_m3)
    report = poller.tick(t(2))
    assert report.quarantined == 1
    woke = sorted((w.agent, w.mood) for w in report.wakes)
    # a1's wakes after the broken one were decided on a load that counted it: they are
    # looked at again next cycle, as when a wake is dropped for any change meanwhile.
    assert {("a2", "m0"), ("a2", "m3"), ("a2", "m4")} <= set(woke)
    assert len(woke) + report.abandoned == 5
    woke += [(w.agent, w.mood) for w in poller.tick(t(3)).wakes]
    assert sorted(woke) == [("a1", "m0"), ("a1", "m4"), ("a2", "m0"), ("a2", "m3"), ("a2", "m4")]
    with store.reading() as s:
        aside = s.scalars(sa.select(models.Quarantine.ref)).all()
        owed = s.execute(sa.select(models.Owed.agent_id, models.Owed.mood_id)).all()
    assert aside == ["3:4"] and owed == [(3, 4)]  # its mention is still owed: not lost
