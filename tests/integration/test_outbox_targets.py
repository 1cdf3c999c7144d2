"""A batch of posts across Moods gets each Mood's own outbox items, its targets read at once."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from poller import tokens
from poller.models import Mood, OutboxItem
from poller.store import Store, bridges, db, outbox
from poller.store.core import NewPost

T0 = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.timezone.utc)


def test_a_batch_across_moods_gets_each_moods_items_and_no_other(db_url):
    engine = db.make_engine(db_url)
    db.upgrade(engine)
    store = Store(engine, tokens.counter())
    try:
        store.add_mood("plain", "Plain", T0)
        store.add_mood("hooked", "Hooked", T0)
        bridges.add_mood_with_room(store, "matrix", "linked", "Linked", "!room:example.org", T0)
        hook = bridges.add_webhook(store, "hooked", "https://example.org/in", "s3cret", T0)
        other = bridges.add_webhook(store, "linked", "https://example.org/two", "s3cret", T0)
        store.add_person("ann", "full", T0)
        store.add_agent("bot", T0, command="true")
        ids = [p.id for p in store.ingest([
            outbox_post("plain", "ann"), outbox_post("hooked", "ann"), outbox_post("linked", "ann"),
            outbox_post("linked", "bot"), outbox_post("plain", "bot")])]
        with store.reading() as s:
            rows = s.execute(sa.select(OutboxItem.post_id, OutboxItem.bridge, OutboxItem.target)
                             .order_by(OutboxItem.id)).all()
            moods = {m: store_mood_id(s, m) for m in ("plain", "hooked", "linked")}
            where = outbox.targets_of(s, list(moods.values()))
        assert [tuple(r) for r in rows] == [
            (ids[1], "webhook", str(hook.id)),  # a person's post: to webhooks only
            (ids[2], "webhook", str(other.id)),
            (ids[3], "matrix", "!room:example.org"),  # an agent's reply: to the room too
            (ids[3], "webhook", str(other.id)),
        ]
        assert where == {moods["plain"]: [], moods["hooked"]: [("webhook", str(hook.id))],
                         moods["linked"]: [("matrix", "!room:example.org"),
                                           ("webhook", str(other.id))]}
    finally:
        engine.dispose()


def outbox_post(slug: str, sender: str) -> NewPost:
    return NewPost(slug, sender, f"hello from {sender}", T0)


def store_mood_id(s, slug: str) -> int:
    return s.scalar(sa.select(Mood.id).where(Mood.slug == slug))
