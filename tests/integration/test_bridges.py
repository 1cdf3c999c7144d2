"""The bridge interface without a chat: ingest once by external id, the outbox written
with what it carries, delivered in order with backoff, and Matrix's pure mapping.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json

import pytest

from support.cli import Cli
from support.webserver import store_for

from poller import errors
from poller.bridges import delivery
from poller.store import bridges, outbox
from poller.store.bridges import Incoming
from support.bridges import ROOM

T0 = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.timezone.utc)
@pytest.fixture
def store(db_url):
    cli = Cli(db_url)
    cli("init", "--answer-from-now", "--now", "2026-03-02T08:00:00Z")
    cli("agent", "add", "helper", "--command", "cat")
    cli("person", "add", "ada", "--trust", "full", "--matrix", "@ada:hs.example")
    cli("mood", "add", "lobby", "--matrix-room", ROOM)
    s = store_for(db_url)
    s.cli = cli
    return s


def msg(eid: str, body: str, sender="@ada:hs.example", **kw) -> Incoming:
    return Incoming(eid, ROOM, sender, sender[1:].split(":")[0], body, **kw)


def test_the_same_event_twice_is_one_post(store):
    first = bridges.ingest(store, "matrix", msg("$1", "hello", mentions=("helper",)), T0)
    again = bridges.ingest(store, "matrix", msg("$1", "hello", mentions=("helper",)), T0)
    assert first is not None and again is None
    assert [p.text for p in store.posts("lobby")] == ["hello"]


def test_an_unknown_sender_becomes_a_person_with_the_default_trust(store):
    bridges.ingest(store, "matrix", msg("$1", "hi", sender="@zed:hs.example"), T0, "look")
    bridges.ingest(store, "matrix", msg("$2", "hi", sender="@ada:elsewhere.example"), T0)
    people = {p.handle: p.trust for p in store.people()}
    assert people["zed"] == "look" and people["ada-2"] == "none" and people["ada"] == "full"


def test_mentions_are_what_the_chat_says_and_legacy_rooms_read_names(store):
    from poller.models import Mention
    import sqlalchemy as sa

    said = bridges.ingest(store, "matrix", msg("$1", "@helper look", mentions=()), T0)
    bare = bridges.ingest(store, "matrix", msg("$2", "helper look"), T0)
    named = bridges.ingest(store, "matrix", msg("$3", "look", mentions=("helper",)), T0)
    with store.reading() as s:
        mentioned = set(s.scalars(sa.select(Mention.post_id)))
    assert mentioned == {named}  # m.mentions rules; the text alone names nobody
    store.cli("mood", "link", "lobby", "--matrix-room", ROOM, "--legacy-mentions")
    legacy = bridges.ingest(store, "matrix", msg("$4", "helper, look"), T0)
    with store.reading() as s:
        assert legacy in set(s.scalars(sa.select(Mention.post_id)))
    assert said and bare


def test_a_reply_to_the_agents_message_is_a_reply_ping(store):
    from poller.models import Mention
    import sqlalchemy as sa

    with store.writing() as s:
        from poller.store.core import insert_post

        agent_id = store.agent("helper").id
        mood_id = store.mood("lobby").id
        post = insert_post(s, store.counter, mood_id, agent_id, "I am here", T0)
    item = [i for i in outbox.items(store) if i.post_id == post.id][0]
    bridges.record_sent(store, "matrix", item.id, "$agent", T0)
    answer = bridges.ingest(store, "matrix", msg("$5", "thanks", mentions=(), reply_to="$agent"),
                            T0)
    with store.reading() as s:
        via = s.scalar(sa.select(Mention.via).where(Mention.post_id == answer))
    assert via == "reply"


def test_edits_change_the_text_only_for_their_sender_and_redactions_remove_it(store):
    pid = bridges.ingest(store, "matrix", msg("$1", "draft", mentions=()), T0)
    assert bridges.edit(store, "matrix", "$e1", "$1", "@zed:hs.example", "forged", T0) is None
    assert bridges.edit(store, "matrix", "$e2", "$1", "@ada:hs.example", "final", T0) == pid
    assert bridges.edit(store, "matrix", "$e2", "$1", "@ada:hs.example", "again", T0) is None
    assert store.posts("lobby")[-1].text == "final"
    assert bridges.redact(store, "matrix", "$r1", "$1", T0) == pid
    assert store.posts("lobby")[-1].text == bridges.REMOVED


def test_what_was_said_before_the_room_was_linked_is_history(store):
    linked = store.mood("lobby").created_at
    old = msg("$old", "helper: from last year", mentions=("helper",),
              at=linked - dt.timedelta(days=365))
    assert bridges.ingest(store, "matrix", old, T0) is None
    new = msg("$new", "helper: now", mentions=("helper",), at=linked + dt.timedelta(seconds=1))
    assert bridges.ingest(store, "matrix", new, T0) is not None


def test_a_join_is_a_sign_in_once(store):
    assert bridges.join(store, "matrix", "$j", ROOM, "@bo:hs.example", "bo", T0) is not None
    assert bridges.join(store, "matrix", "$j", ROOM, "@bo:hs.example", "bo", T0) is None
    assert bridges.join(store, "matrix", "$k", "!other:hs.example", "@bo:hs.example", "bo",
                        T0) is None


def test_the_outbox_item_commits_with_its_post_or_not_at_all(store):
    from poller.store.core import insert_post

    agent_id, mood_id = store.agent("helper").id, store.mood("lobby").id
    with pytest.raises(RuntimeError):
        with store.writing() as s:
            insert_post(s, store.counter, mood_id, agent_id, "never", T0)
            raise RuntimeError("the turn's settling failed")
    assert outbox.items(store) == []
    with store.writing() as s:
        insert_post(s, store.counter, mood_id, agent_id, "kept", T0)
    (item,) = outbox.items(store)
    assert (item.bridge, item.target, item.event, item.status) == ("matrix", ROOM, "reply",
                                                                   "pending")
    # A person's post from the chat is not sent back to it.
    bridges.ingest(store, "matrix", msg("$1", "hello", mentions=()), T0)
    assert len(outbox.items(store)) == 1


class FlakySender:
    name = "matrix"

    def __init__(self, store, fail_first: int):
        self.store, self.fail, self.sent_ids = store, fail_first, []

    async def send(self, item):
        if self.fail:
            self.fail -= 1
            raise ConnectionError("the homeserver is down")
        return f"${item.id}"

    def sent(self, item, external_id):
        self.sent_ids.append(item.id)
        outbox.mark_sent(self.store, item.id, external_id, T0)


def test_delivery_keeps_order_per_target_and_backs_off(store):
    from poller.store.core import insert_post

    agent_id, mood_id = store.agent("helper").id, store.mood("lobby").id
    with store.writing() as s:
        for n in range(3):
            insert_post(s, store.counter, mood_id, agent_id, f"reply {n}", T0)
    sender = FlakySender(store, fail_first=2)
    clock = lambda: now[0]  # noqa: E731
    now = [T0]
    assert asyncio.run(delivery.deliver_due(store, sender, clock)) == 0
    first = outbox.items(store)[0]
    assert first.attempts == 1 and first.next_at == T0 + outbox.backoff(1)
    assert asyncio.run(delivery.deliver_due(store, sender, clock)) == 0  # not due yet: waits
    assert outbox.items(store)[0].attempts == 1
    now[0] = T0 + dt.timedelta(minutes=1)
    assert asyncio.run(delivery.deliver_due(store, sender, clock)) == 0
    now[0] = T0 + dt.timedelta(minutes=2)
    assert asyncio.run(delivery.deliver_due(store, sender, clock)) == 3
    ids = [i.id for i in outbox.items(store)]
    assert sender.sent_ids == ids and {i.status for i in outbox.items(store)} == {"sent"}
    assert asyncio.run(delivery.deliver_due(store, sender, clock)) == 0  # never twice


def test_outbox_commands(store):
    cli = store.cli
    assert "0 pending, 0 sent, 0 failed" in cli("outbox").out
    assert cli.fails("outbox", "retry", "99").err.startswith("mood-poller: no outbox item 99")
    assert json.loads(cli("outbox", "--failed", "--json").out) == []


# -- The Matrix mapping (pure) ------------------------------------------------------------


@pytest.mark.parametrize("args, problem", [
    (("mood", "add", "den", "--matrix-room", "lobby"), "not a Matrix room id"),
    (("person", "add", "--matrix", "ada"), "not a Matrix user id"),
    (("person", "add", "--matrix", "@ada:hs.example"), "already someone's"),
    (("mood", "add", "den", "--matrix-room", ROOM), "linked to another Mood"),
    (("person", "add"), "HANDLE"),
])
def test_bad_links_are_refused_whole(store, args, problem):
    before = (store.moods(), store.people())
    r = store.cli.fails(*args)
    assert problem in r.err
    assert (store.moods(), store.people()) == before


def test_a_silence_shows_nothing_in_the_chat_and_notes_are_notices(store, tmp_path):
    from poller.kinds import PostKind
    from poller.store import cycle
    from poller.store.core import insert_post

    made = json.loads(store.cli("mood", "webhook", "add", "lobby", "http://127.0.0.1:9/h",
                                "--json").out)
    agent_id, mood_id = store.agent("helper").id, store.mood("lobby").id
    with store.writing() as s:
        insert_post(s, store.counter, mood_id, agent_id, "no need", T0, kind=PostKind.SILENT)
        cycle.add_system_post(s, mood_id, agent_id, "@helper is held: busy", T0, 5)
    got = sorted((i.bridge, i.event) for i in outbox.items(store))
    assert got == [("matrix", "notice"), ("matrix", "silent"), ("webhook", "notice"),
                   ("webhook", "silent")]
    assert made["secret"] not in store.cli("mood", "webhook", "list").out


# -- Events that cannot be taken in -------------------------------------------------------

POISON = [
    {"msgtype": "m.text", "body": "x", "m.relates_to": "just a string"},
    {"msgtype": "m.text", "body": "x", "m.relates_to": {"m.in_reply_to": "s"}},
    {"msgtype": "m.text", "body": "* x", "m.new_content": "s",
     "m.relates_to": {"rel_type": "m.replace", "event_id": "$1"}},
    {"msgtype": "m.text", "body": "x", "m.mentions": {"user_ids": 5}},
    {"msgtype": "m.text", "body": "a\x00b", "m.mentions": {}},  # PostgreSQL takes no NUL
    {"msgtype": "m.text", "body": "x" * 70_000},  # longer than a post may be
]


@pytest.mark.parametrize("n", range(len(POISON)))
def test_a_poison_event_is_recorded_as_refused_and_the_rest_of_its_batch_goes_in(store, n):
    from poller import observe
    from poller.bridges import matrix, matrix_service
    from support.bridges import event

    cfg = matrix.MatrixConfig(homeserver="http://127.0.0.1:1", server_name="hs.example",
                              as_token="a", hs_token="h")
    good = event({"msgtype": "m.text", "body": "helper: still there?",
                  "m.mentions": {"user_ids": ["@mood_helper:hs.example"]}}, event_id="$good")
    batch = [event(POISON[n], event_id="$bad"), {"type": 5}, good]
    matrix_service.take_in(store, cfg, lambda: T0, batch)
    matrix_service.take_in(store, cfg, lambda: T0, batch)  # the homeserver sent it again
    assert [p.text for p in store.posts("lobby")] == ["helper: still there?"]
    aside = observe.status(store, T0)["quarantined"]
    assert sorted((q["kind"], q["mood"] or "", q["count"]) for q in aside) == [
        ("matrix-event", "", 2), ("matrix-event", "lobby", 2)]
    bad = [q for q in aside if q["ref"] == "$bad"][0]
    assert bad["error"] and "Traceback" not in bad["error"]
    assert "$bad" in store.cli("status").out


def test_a_reply_pings_the_people_it_answers_and_nobody_else(store):
    from poller.bridges import matrix

    store.cli("person", "add", "bob", "--trust", "full", "--matrix", "@bob:hs.example")
    bridges.ingest(store, "matrix", msg("$1", "helper: a question", mentions=("helper",)), T0)
    bridges.ingest(store, "matrix", msg("$2", "helper: and mine", sender="@bob:hs.example",
                                        mentions=("helper",)), T0 + dt.timedelta(seconds=1))
    store.cli("tick", "--now", "2026-03-02T09:00:05Z", "--wait")
    (w,) = json.loads(store.cli("wakes", "--json").out)
    target = bridges.reply_target(store, "matrix", w["id"])
    assert target.askers == ("@ada:hs.example", "@bob:hs.example")
    sent = matrix.content("reply", "Here is the answer, @carol.", target)
    assert sent["m.mentions"] == {"user_ids": ["@ada:hs.example", "@bob:hs.example"]}
    assert matrix.content("reply", "no one asked", None)["m.mentions"] == {}


def test_a_stranger_who_names_an_agent_is_told_once_a_day_that_it_answers_only_people_added(
        store):
    from poller.kinds import PostKind

    def notices() -> list[str]:
        with store.reading() as s:
            from poller.models import Post
            import sqlalchemy as sa

            return list(s.scalars(sa.select(Post.text).where(Post.kind == PostKind.SYSTEM)
                                  .order_by(Post.id)))

    eve = "@eve:hs.example"
    bridges.ingest(store, "matrix", msg("$e1", "helper: hi?", sender=eve, mentions=("helper",)),
                   T0)
    assert notices() == ["eve: @helper answers only people the operators of this room have "
                         "added; ask one of them to add you."]
    bridges.ingest(store, "matrix", msg("$e2", "helper: hello??", sender=eve,
                                        mentions=("helper",)), T0 + dt.timedelta(hours=2))
    bridges.ingest(store, "matrix", msg("$a1", "helper: hi", mentions=("helper",)),
                   T0 + dt.timedelta(hours=3))  # ada is trusted: no notice for her
    assert len(notices()) == 1  # once a day per person
    bridges.ingest(store, "matrix", msg("$e3", "helper: again", sender=eve,
                                        mentions=("helper",)), T0 + dt.timedelta(hours=25))
    assert len(notices()) == 2
    items = [i for i in outbox.items(store) if i.bridge == "matrix" and i.event == "notice"]
    assert len(items) == 2  # each shown in the room as a notice
