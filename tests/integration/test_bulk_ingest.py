"""`post --stdin-jsonl`: many posts checked first, then ingested in one transaction, or none."""

from __future__ import annotations

import json


def room(cli):
    cli("mood", "add", "lobby")
    cli("mood", "add", "attic")
    cli("person", "add", "ada")
    cli("person", "add", "bob")
    cli("agent", "add", "bot", "--command", "cat")
    return cli


def lines(*items) -> str:
    return "\n".join(json.dumps(i) for i in items) + "\n"


def test_a_batch_lands_whole_with_defaults_times_and_mentions(any_cli):
    c = room(any_cli)
    out = c("post", "lobby", "--as", "ada", "--stdin-jsonl", "--json", input=lines(
        {"text": "first"},
        {"text": "hey @bot", "as": "bob", "at": "2026-11-30T12:00:00Z"},
        {"text": "upstairs", "mood": "attic"})).out
    ids = json.loads(out)
    assert len(ids) == 3 and ids == sorted(ids)
    lobby = json.loads(c("posts", "lobby", "--json").out)
    assert [(p["sender"], p["text"]) for p in lobby] == [("ada", "first"), ("bob", "hey @bot")]
    assert lobby[1]["created_at"] == "2026-11-30T12:00:00Z"
    assert [p["text"] for p in json.loads(c("posts", "attic", "--json").out)] == ["upstairs"]


def test_one_bad_line_writes_nothing_and_names_the_line(any_cli):
    c = room(any_cli)
    for bad, says in [
        (lines({"text": "ok"}, {"text": ""}), "line 2: empty post"),
        (lines({"text": "ok"}, {"text": "x", "at": "9999-01-01T00:00:00Z"}), "line 2:"),
        ('{"text": "ok"}\nnot json\n', "line 2: not JSON"),
        (lines({"text": "ok"}, {"text": "x", "as": "nobody"}), "nobody"),
        (lines({"text": "ok"}, {"text": "x", "mood": "nowhere"}), "nowhere"),
        (lines({"text": "ok", "extra": 1}), "line 1:"),
        (lines({"text": "a\u0000b"}), "line 1:"),
        ('{"text": ' + "[" * 50_000 + "\n", "line 1: nests"),
        ('{"text": "ok", "mood": "\\udfff"}\n', "line 1:"),
        ('{"text": "ok", "as": "a\\u0000"}\n', "line 1:"),
    ]:
        r = c.fails("post", "lobby", "--as", "ada", "--stdin-jsonl", input=bad)
        assert says in r.err and len(r.err.strip().splitlines()) == 1, (bad, r.err)
    assert json.loads(c("posts", "lobby", "--json").out) == []


def test_stdin_jsonl_and_a_text_do_not_mix(cli):
    c = room(cli)
    assert c.fails("post", "lobby", "hello", "--as", "ada", "--stdin-jsonl", input="").code == 2
    assert c.fails("post", "lobby", "hello").code == 2  # no --as


def test_a_batch_records_what_one_post_at_a_time_records(any_cli):
    # The batch path (one insert, one handle lookup, one insert of mentions) must
    # leave the same rows as the one-at-a-time path, nudging the loop the same way.
    import datetime as dt

    import sqlalchemy as sa

    from poller.store import bell
    from poller.models import Mention, Post
    from poller.store import Store, db

    c = room(any_cli)
    c("agent", "add", "helper", "--command", "cat")
    texts = [("ada", "@bot and @helper, look"), ("bob", "@BOT twice @bot"), ("ada", "@ada myself"),
             ("bob", "@nobody here"), ("ada", "plain"), ("bob", "@helper-- trailing")]
    at = dt.datetime(2026, 11, 30, 12, tzinfo=dt.timezone.utc)
    store = Store(db.make_engine(any_cli.db_url))
    one_by_one = [store.add_post("lobby", who, body, at).id for who, body in texts]
    bell.BELL.sleep(0)
    batched = store.add_posts([("attic", who, body, at) for who, body in texts])
    assert bell.BELL.sleep(0) is True  # the batch's commit rang the loop
    assert batched == sorted(batched) and batched[0] > one_by_one[-1]

    def shape(ids):
        with store.reading() as s:
            posts = s.execute(sa.select(Post.id, Post.sender_id, Post.text, Post.tokens, Post.kind)
                              .where(Post.id.in_(ids)).order_by(Post.id)).all()
            named = s.execute(sa.select(Mention.post_id, Mention.participant_id, Mention.via)
                              .where(Mention.post_id.in_(ids))).all()
        order = {pid: i for i, pid in enumerate(ids)}
        return ([p[1:] for p in posts],
                sorted((order[m.post_id], m.participant_id, m.via) for m in named))

    assert shape(batched) == shape(one_by_one)
    assert len(shape(batched)[1]) == 4  # bot+helper, bot once, nobody for "@ada" or "@nobody", helper
    store.engine.dispose()
