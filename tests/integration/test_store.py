"""The store's verbs on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from poller import errors, tokens
from poller.store import db
from poller.store import Store

T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


@pytest.fixture
def store(db_url):
    engine = db.make_engine(db_url)
    db.upgrade(engine)
    yield Store(engine)
    engine.dispose()


def test_post_counts_tokens_exactly_and_records_mentions(store):
    store.add_mood("lobby", "", T0)
    store.add_person("Ada", "full", T0)
    store.add_agent("Bot", T0, command="cat")
    store.add_agent("helper", T0, command="cat")
    text = "hey @bot and @HELPER, see ada@bot.example and @nobody <|endoftext|> 你好"
    p = store.add_post("lobby", "ada", text, T0)
    assert p.tokens == tokens.counter().count(text) > 0
    assert p.sender == "Ada"  # the handle as registered, whatever case was typed
    with store.reading() as s:
        rows = s.execute(sa.text("SELECT participant_id, via FROM mentions WHERE post_id = :p"),
                         {"p": p.id}).all()
    ids = {store.participant("bot").id, store.participant("helper").id}
    assert {r[0] for r in rows} == ids
    assert {r[1] for r in rows} == {"at"}


def test_reply_to_an_agents_post_is_a_mention_and_self_mentions_are_not(store):
    store.add_mood("lobby", "", T0)
    store.add_person("ada", "look", T0)
    store.add_agent("bot", T0, command="cat")
    agent_post = store.add_post("lobby", "bot", "hello, @bot here", T0)
    reply = store.add_post("lobby", "ada", "thanks", T0, reply_to=agent_post.id)
    with store.reading() as s:
        mine = s.execute(sa.text("SELECT count(*) FROM mentions WHERE post_id = :p"),
                         {"p": agent_post.id}).scalar()
        via = s.execute(sa.text("SELECT via FROM mentions WHERE post_id = :p"),
                        {"p": reply.id}).scalar()
    assert mine == 0
    assert via == "reply"


def test_reply_to_a_post_of_another_mood_is_refused(store):
    store.add_mood("a", "", T0)
    store.add_mood("b", "", T0)
    store.add_person("ada", "look", T0)
    p = store.add_post("a", "ada", "one", T0)
    with pytest.raises(errors.NotFound):
        store.add_post("b", "ada", "two", T0, reply_to=p.id)
    assert store.posts("b") == []


def test_handles_are_unique_whatever_their_case(store):
    store.add_person("Ada", "look", T0)
    with pytest.raises(errors.AlreadyExists):
        store.add_agent("ADA", T0, command="cat")
    assert [p.handle for p in store.people()] == ["Ada"]
    assert store.agents() == []


def test_posts_newest_last_with_limit_and_after(store):
    store.add_mood("m", "", T0)
    store.add_person("p", "look", T0)
    ids = store.add_posts([("m", "p", f"post {i}", T0 + dt.timedelta(seconds=i)) for i in range(5)])
    assert [p.id for p in store.posts("m", limit=3)] == ids[-3:]
    assert [p.id for p in store.posts("m", limit=10, after_id=ids[1])] == ids[2:]


def test_settings_most_specific_newest_wins(store):
    store.add_mood("m", "", T0)
    store.add_mood("other", "", T0)
    store.add_agent("bot", T0, command="cat")
    store.set_setting("discretion", "reserved", T0)
    store.set_setting("discretion", "chatty", T0, agent="bot")
    r = store.resolved(T0, mood="m", agent="bot")
    assert (r["discretion"].value, r["discretion"].slot) == ("chatty", "agent")
    store.set_setting("discretion", "normal", T0, mood="m")
    r = store.resolved(T0, mood="m", agent="bot")
    assert (r["discretion"].value, r["discretion"].slot) == ("normal", "mood")
    store.set_setting("discretion", "reserved", T0, mood="m", agent="bot")
    store.set_setting("discretion", "chatty", T0, mood="m", agent="bot")
    r = store.resolved(T0, mood="m", agent="bot")
    assert (r["discretion"].value, r["discretion"].slot) == ("chatty", "mood+agent")
    assert store.resolved(T0, mood="other", agent="bot")["discretion"].value == "chatty"
    assert store.resolved(T0, mood="other")["discretion"].slot == "global"
    assert store.resolved(T0)["idle_after"].value == 3000


def test_listening_until_lapses_back_to_the_earlier_value(store):
    store.add_mood("m", "", T0)
    store.set_setting("listening", "mentions", T0, mood="m")
    later = T0 + dt.timedelta(hours=1)
    store.set_setting("listening", "off", T0, mood="m", until=later)
    assert store.resolved(T0, mood="m")["listening"].value == "off"
    assert store.resolved(later, mood="m")["listening"].value == "mentions"


def test_invalid_settings_write_nothing(store):
    store.add_mood("m", "", T0)
    for key, value in [("nope", "1"), ("idle_after", "-1"), ("consider_after", "soon"),
                       ("catch_up_tokens", "500"), ("discretion", "loud")]:
        with pytest.raises(errors.InvalidSetting):
            store.set_setting(key, value, T0, mood="m")
    with pytest.raises(errors.InvalidSetting):
        store.set_settings({"discretion": "chatty", "verbosity": "huge"}, T0, mood="m")
    with store.reading() as s:
        assert s.execute(sa.text("SELECT count(*) FROM settings")).scalar() == 0


def test_sqlite_runs_in_wal_mode_with_a_busy_timeout(sqlite_url):
    engine = db.make_engine(sqlite_url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 5000


def test_times_come_back_aware_utc(store):
    store.add_mood("m", "", T0)
    store.add_person("p", "look", T0)
    cet = dt.timezone(dt.timedelta(hours=1))
    store.add_post("m", "p", "hi", T0.astimezone(cet))
    (post,) = store.posts("m")
    assert post.created_at == T0 and post.created_at.tzinfo is not None
