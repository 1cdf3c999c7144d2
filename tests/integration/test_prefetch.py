"""A batch's wakes read in sets (:mod:`poller.store.prefetch`): the same texts, byte for
byte, as the same wakes gathered one read at a time, and a number of statements that
does not grow with the batch but by the few reads that are each wake's own."""

from __future__ import annotations

import contextlib

import sqlalchemy as sa

from poller import models
from poller.cycle import drafts, evaluate
from poller.store import Store, prefetch, turns
from poller.turns import settling, wakers

# The set cycle's tests' stores of both databases, poller and timeline.
from integration.test_set_cycle import T0, new_store, poller_for, t  # noqa: F401


@contextlib.contextmanager
def one_by_one():
    """Batches weighed as usual, but every read of a wake made on its own."""
    real = prefetch.batch

    @contextlib.contextmanager
    def detached(s, order, owed):
        yield prefetch.Prefetch(order, owed)  # never in s.info: no read finds it

    prefetch.batch = detached
    try:
        yield
    finally:
        prefetch.batch = real


def ids(store: Store) -> dict[str, int]:
    with store.reading() as s:
        return {r.handle: r.id for r in s.execute(sa.select(models.Participant.id,
                                                             models.Participant.handle))}


def mood_ids(store: Store) -> dict[str, int]:
    with store.reading() as s:
        return {r.slug: r.id for r in s.execute(sa.select(models.Mood.id, models.Mood.slug))}


def last_wake(store: Store, agent_id: int, mood_id: int) -> int:
    with store.reading() as s:
        return s.scalar(sa.select(sa.func.max(models.Wake.id)).where(
            models.Wake.agent_id == agent_id, models.Wake.mood_id == mood_id))


def scenario(store: Store) -> list[tuple]:
    """Two rounds of mentions over four Moods and three agents; between them, turns that
    replied, failed and were cut off, a changed setting, a kept session, a refusal,
    context handed on, a check-in agreement: every optional line a wake carries."""
    for i in range(4):
        store.add_mood(f"m{i}", f"m{i}", T0)
    store.add_person("ada", "full", T0)
    store.add_person("bob", "look", T0)
    for a in ("a1", "a2", "a3"):
        store.add_agent(a, T0, command="true")
    store.set_settings({"cooldown": "0", "considers_per_hour": "0", "parallel_turns": "64",
                        "max_wakes_per_hour": "600"}, T0)
    poller, launcher = poller_for(store)
    poller.tick(t(0))
    for i in range(4):
        store.add_post(f"m{i}", "ada", "morning all, see #p-1", t(1))
        store.add_post(f"m{i}", "bob", "@a1 @a2 a question for you both", t(2))
        store.add_post(f"m{i}", "ada", "@a3 and one for you", t(2))
    poller.tick(t(4))
    ends = [wakers.TurnResult("replied", reply="noted"),
            wakers.TurnResult("cut_off", error="it ran out of time", public="it ran out of time"),
            wakers.TurnResult("failed", error="boom", public="it failed"),
            None]  # still running
    for k, wake_id in enumerate(launcher.started):
        end = ends[k % len(ends)]
        if end is not None:
            turns.claim(store, wake_id, t(5), 1)
            settling.settle_outcome(store, wake_id, end, t(6))
    who, moods = ids(store), mood_ids(store)
    store.set_setting("verbosity", "brief", t(7), mood="m1")
    store.set_setting("archive_after", str(7 * 24 * 3600), t(7))
    with store.writing() as s:
        w = last_wake(store, who["a1"], moods["m0"])
        s.add(models.Refusal(wake_id=w, agent_id=who["a1"], mood_id=moods["m0"],
                             block="settings", reason="not yours to set", at=t(7)))
        s.add(models.Handoff(wake_id=w, agent_id=who["a1"], from_mood_id=moods["m0"],
                             to_mood_id=moods["m2"], for_agent_id=None, about="the plan",
                             context="we agreed on Tuesday", at=t(7)))
        s.add(models.Handoff(wake_id=w, agent_id=who["a1"], from_mood_id=moods["m0"],
                             to_mood_id=moods["m1"], for_agent_id=who["a2"], about="for a2",
                             context="only a2 should read this", at=t(7)))
        s.add(models.AgentSession(agent_id=who["a2"], mood_id=moods["m1"], session_id="s-1",
                                  wake_id=last_wake(store, who["a2"], moods["m1"]),
                                  updated_at=t(7)))
        s.add(models.CheckinAgreement(person_id=who["ada"], agent_id=who["a3"],
                                      mood_id=moods["m0"], kind="daily", spec="09:00",
                                      tz="UTC", processed_until=t(7), created_at=t(7),
                                      updated_at=t(7)))
    for i in range(4):
        store.add_post(f"m{i}", "ada", f"@a1 @a2 @a3 round two in m{i}", t(10))
    poller.tick(t(12))
    with store.reading() as s:
        w = models.Wake.__table__
        return [tuple(r) for r in s.execute(
            sa.select(w.c.agent_id, w.c.mood_id, w.c.kind, w.c.tools, w.c.text).order_by(w.c.id))]


def test_wakes_gathered_in_sets_say_byte_for_byte_what_they_say_gathered_one_by_one(new_store):
    in_sets = scenario(new_store())
    with one_by_one():
        alone = scenario(new_store())
    assert in_sets == alone
    texts = "\n".join(r[4] for r in in_sets)
    # The scenario reached the lines the set reads answer.
    for line in ("we agreed on Tuesday", "only a2 should read this", "not yours to set",
                 "brief", "was cut off", "failed before it could reply"):
        assert line in texts, line
    assert len(in_sets) > 15


def mention_batch(store: Store, moods: int) -> int:
    """Statements the gathering of one batch of *moods* x 2 mention wakes runs."""
    for i in range(moods):
        store.add_mood(f"m{i}", f"m{i}", T0)
    store.add_person("ada", "full", T0)
    store.add_agent("a1", T0, command="true")
    store.add_agent("a2", T0, command="true")
    store.set_settings({"cooldown": "0", "considers_per_hour": "0", "parallel_turns": "64",
                        "max_wakes_per_hour": "600"}, T0)
    poller, launcher = poller_for(store)
    poller.tick(t(0))
    for i in range(moods):
        store.add_post(f"m{i}", "ada", "@a1 @a2 hello", t(1))
    count, on = [0], [False]

    def counted(*_args):
        if on[0]:
            count[0] += 1

    real = drafts.gather

    def gather(*args, **kw):
        on[0] = True
        try:
            return real(*args, **kw)
        finally:
            on[0] = False

    sa.event.listen(store.engine, "before_cursor_execute", counted)
    evaluate.drafts.gather = gather
    try:
        poller.tick(t(2))
    finally:
        evaluate.drafts.gather = real
        sa.event.remove(store.engine, "before_cursor_execute", counted)
    assert len(launcher.started) == 2 * moods
    return count[0]


OWN_READS = 1  # what each wake still reads on its own: its catch-up
KINDS_OF_SET_READS = 12  # at most, each once a batch


def test_a_batchs_gathering_runs_a_set_query_per_kind_of_read_not_one_per_wake(new_store):
    small, large = mention_batch(new_store(), 2), mention_batch(new_store(), 10)
    assert large - small <= OWN_READS * (20 - 4), (small, large)
    assert small <= OWN_READS * 4 + KINDS_OF_SET_READS, small
