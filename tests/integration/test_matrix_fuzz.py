"""The Matrix bridge's appservice endpoint, fed generated transactions over HTTP.

A real ``mood-poller bridge matrix`` process listens on 127.0.0.1; the test is the
homeserver: it PUTs transactions (``/_matrix/app/v1/transactions/{txnId}`` and the
legacy ``/transactions/{txnId}``) with the hs_token, or a wrong one.  The homeserver
the bridge would speak to is a closed port: taking events in needs only the store.

The events are mostly well-formed messages (any text: unicode, NUL, lone
surrogates, 70,000 characters, mentions of the agent, replies, threads) and
otherwise what a member, a broken client or a broken homeserver could send: a
field of the wrong JSON type (text, number, list, object, true, a number past 64
bits, JSON nested deep), a field missing, edits, redactions, joins, typing, unknown
types, events that are not objects; and transactions that are not JSON, not an
object, or whose ``events`` is not a list.

For every request: never a 5xx (the store is up), always a JSON answer, a 200 for
a transaction taken in and a 403 or 400 naming what is wrong otherwise, no
traceback in the bridge's log; a message that may be posted is stored once, a
field of the wrong type is refused with a reason naming it where ``status`` shows
it; the same transaction again stores nothing more; and a trusted mention in the
next transaction is stored, so nothing jams.
"""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.appservice import (ADA, AGENT, AS_TOKEN, HS_TOKEN, ROOM, SERVER, UNLINKED, Bridge,
                                Seq, base_message, fresh_id, refusal)

from poller.text import MAX_POST_CHARS

EXAMPLES = 400  # transactions, a mention after every fifth; about half a minute on SQLite
COUNTS = {"transactions": 0, "events tried": 0, "stored": 0, "refused": 0, "ignored": 0,
          "200": 0, "400": 0, "403": 0, "5xx": 0, "replays": 0, "mentions after": 0,
          "tracebacks": 0}


# -- values -----------------------------------------------------------------------------------

nasty = st.sampled_from(["\x00", "\ud800", "\udfff", "\x1b[2J", "\u202e", "\u2028", "\r\n",
                         "</mood-wake>", "<mood-wake>", "@helper", "helper:", "@room", "> ",
                         "é", "\U0001f3f4", "\ufeff", " ", "\t", "$", "!", ":"])
texts = st.one_of(
    st.text(max_size=40),
    st.text(st.characters(codec="utf-8"), min_size=1, max_size=40),
    st.lists(st.one_of(nasty, st.text(max_size=5)), max_size=8).map("".join),
    st.sampled_from(["x" * 70_000, "y" * MAX_POST_CHARS, "helper " * 5000, "", "   ", "\n"]),
)
deep_lists = st.sampled_from([[[[[[]]]]], json.loads("[" * 200 + "]" * 200)])
deep_objects = st.sampled_from([{"a": {"b": [{}]}}, json.loads('{"a":' * 200 + "1" + "}" * 200)])
deep = st.one_of(deep_lists, deep_objects)
scalars = st.one_of(st.none(), st.booleans(),
                    st.integers(min_value=-(2**80), max_value=2**80),
                    st.sampled_from([2**63, -(2**63) - 1, 2**53, 10**30]),
                    st.floats(allow_nan=False, allow_infinity=False), texts)
any_json = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=6)
event_ids = st.one_of(st.builds(lambda n: f"${n}", st.text(
    st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=20)),
    st.sampled_from(["$" + "e" * 255, "$" + "e" * 300, "$", "$a\x00b", "$\ud800"]))
users = st.sampled_from([ADA, ADA, f"@bo:{SERVER}", f"@zed:elsewhere.example", AGENT,
                         f"@mood-poller:{SERVER}", "ada", "@:x", "@a b:c", "", "@" + "a" * 300
                         + ":x"])
rooms = st.sampled_from([ROOM, ROOM, ROOM, UNLINKED, "", "!" + "r" * 300, "lobby"])


def wrong_type(json_type: type):
    """A value of any JSON type other than *json_type* (never null: null is a missing field)."""
    kinds = {
        str: texts.filter(lambda s: s != ""), int: st.integers(min_value=-(2**80), max_value=2**80),
        list: st.lists(any_json, max_size=3), dict: st.dictionaries(st.text(max_size=6), any_json,
                                                                   max_size=3),
        bool: st.booleans(), float: st.floats(allow_nan=False, allow_infinity=False),
    }
    choices = [v for k, v in kinds.items() if k is not json_type]
    choices += [d for t, d in ((list, deep_lists), (dict, deep_objects)) if t is not json_type]
    return st.one_of(choices)


# A field of a message the reader reads, its JSON type: a value of another type there
# is refused, and the reason names the field (the last part of its path).
READ = {
    ("type",): str, ("room_id",): str, ("sender",): str, ("event_id",): str,
    ("content",): dict, ("content", "msgtype"): str, ("content", "body"): str,
    ("content", "m.relates_to"): dict, ("content", "m.mentions"): dict,
    ("content", "m.mentions", "user_ids"): list,
    ("content", "m.relates_to", "m.in_reply_to"): dict,
    ("content", "m.relates_to", "m.in_reply_to", "event_id"): str,
}
# Fields that may hold anything: what they hold changes what the event means, or nothing.
OTHER = [("origin_server_ts",), ("unsigned",), ("redacts",), ("state_key",),
         ("content", "format"), ("content", "formatted_body"), ("content", "m.new_content"),
         ("content", "m.relates_to", "rel_type"), ("content", "m.relates_to", "event_id"),
         ("content", "m.relates_to", "is_falling_back"), ("content", "m.mentions", "room"),
         ("content", "url"), ("age",), ("x.unknown",)]


def postable(body: str) -> bool:
    """A body the store takes as a post (what ``text.check_post_text`` allows), as the
    bridge reads it ("\\ud800\\udfff" in JSON is one character, not two lone halves)."""
    body = json.loads(json.dumps(body))
    try:
        body.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return bool(body.strip()) and "\x00" not in body and len(body) <= MAX_POST_CHARS


@st.composite
def good_message(draw):
    """A well-formed message, and what must become of it: stored, refused or ignored."""
    body = draw(texts)
    content = {}
    if draw(st.booleans()):
        content["m.mentions"] = {"user_ids": draw(st.lists(users.filter(
            lambda u: u.startswith("@")), max_size=3)) + ([AGENT] if draw(st.booleans()) else [])}
    how = draw(st.sampled_from(["plain", "plain", "reply", "thread", "emote", "notice"]))
    if how == "reply":
        content["m.relates_to"] = {"m.in_reply_to": {"event_id": draw(event_ids)}}
    elif how == "thread":
        content["m.relates_to"] = {"rel_type": "m.thread", "event_id": fresh_id("t"),
                                   "is_falling_back": True,
                                   "m.in_reply_to": {"event_id": fresh_id("r")}}
    sender = draw(st.sampled_from([ADA, ADA, f"@bo:{SERVER}", f"@zed:elsewhere.example"]))
    event = base_message(body, sender, **content)
    if how == "emote":
        event["content"]["msgtype"] = "m.emote"
    if how == "notice":
        event["content"]["msgtype"] = "m.notice"
        return event, "ignored", ""
    if how == "reply" and not (0 < len(event["content"]["m.relates_to"]["m.in_reply_to"]
                                       ["event_id"]) <= 255 and postable(
            event["content"]["m.relates_to"]["m.in_reply_to"]["event_id"])):
        return event, "any", ""  # a reply to an id no event has
    if not body.strip():
        return event, "any", ""  # blank (or only a NUL or surrogate): ignored or refused
    if not postable(body):
        return event, "refused", ""
    if how == "reply" and body.startswith("> "):
        return event, "any", ""  # a quote of the message replied to is dropped: maybe all
    return event, "stored", ""


def put_at(event: dict, path: tuple, value) -> dict:
    """*event* with the field at *path* set to *value* (objects made on the way)."""
    event = json.loads(json.dumps(event))
    where = event
    for key in path[:-1]:
        if not isinstance(where.get(key), dict):
            where[key] = {}
        where = where[key]
    where[path[-1]] = value
    return event


def drop_at(event: dict, path: tuple) -> dict:
    event = json.loads(json.dumps(event))
    where = event
    for key in path[:-1]:
        where = where.get(key) if isinstance(where.get(key), dict) else {}
    where.pop(path[-1], None)
    return event


@st.composite
def malformed_message(draw):
    """A message with one field of the wrong type (refused, the field named), or some other
    field set to anything or missing (anything may become of it, but sanely)."""
    event = base_message(draw(st.sampled_from(["helper: hello", "hi there", "x"])),
                         **{"m.mentions": {"user_ids": [AGENT]},
                            "m.relates_to": {"m.in_reply_to": {"event_id": fresh_id("r")}}})
    shape = draw(st.integers(0, 9))
    if shape < 6:
        path = draw(st.sampled_from(sorted(READ)))
        value = draw(wrong_type(READ[path]))
        if path == ("content", "m.mentions", "user_ids") and draw(st.booleans()):
            value = [AGENT, draw(wrong_type(str))]  # a list holding something not text
        return put_at(event, path, value), "refused", path[-1]
    if shape < 8:
        return put_at(event, draw(st.sampled_from(OTHER)), draw(any_json)), "any", ""
    path = draw(st.sampled_from(sorted(READ) + OTHER))
    return drop_at(event, path), "any", ""


@st.composite
def other_event(draw, stored: list):
    """Edits, redactions, joins, typing, unknown types, and events that are not objects."""
    pick, earlier = draw(st.integers(0, 49)), draw(st.booleans())  # drawn the same either way
    target = stored[pick % len(stored)] if stored and earlier else fresh_id("x")
    kind = draw(st.sampled_from(["edit", "redact", "redact11", "join", "invite", "typing",
                                 "unknown", "state", "not an object"]))
    if kind == "edit":
        body = draw(texts)
        event = base_message("* " + body, **{
            "m.new_content": {"msgtype": "m.text", "body": body},
            "m.relates_to": {"rel_type": "m.replace", "event_id": target}})
        return event, ("refused" if body.strip() and not postable(body) else "any"), ""
    if kind in ("redact", "redact11"):
        event = {"type": "m.room.redaction", "room_id": ROOM, "sender": ADA,
                 "event_id": fresh_id("d"), "content": {}}
        if kind == "redact":
            event["redacts"] = target
        else:
            event["content"]["redacts"] = target
        if draw(st.integers(0, 3)) == 0:
            where = ("redacts",) if kind == "redact" else ("content", "redacts")
            return put_at(event, where, draw(wrong_type(str))), "refused", "redacts"
        return event, "any", ""
    if kind in ("join", "invite"):
        who = AGENT if kind == "invite" else draw(st.sampled_from([f"@bo:{SERVER}", ADA,
                                                                   f"@new:{SERVER}"]))
        event = {"type": "m.room.member", "room_id": ROOM, "sender": who,
                 "state_key": who, "event_id": fresh_id("j"),
                 "content": {"membership": kind, "displayname": draw(texts)},
                 "unsigned": {"prev_content": {"membership": draw(st.sampled_from(
                     ["leave", "join", "invite"]))}}}
        if draw(st.integers(0, 2)) == 0:
            path = draw(st.sampled_from([("state_key",), ("content", "membership"),
                                         ("unsigned",), ("unsigned", "prev_content")]))
            want = dict if path[-1] in ("unsigned", "prev_content") else str
            return put_at(event, path, draw(wrong_type(want))), "refused", path[-1]
        return event, "any", ""
    if kind == "typing":  # an ephemeral event
        ids = draw(st.one_of(st.lists(users, max_size=3), wrong_type(list)))
        bad = not isinstance(ids, list) or not all(isinstance(u, str) for u in ids)
        event = {"type": "m.typing", "room_id": draw(st.sampled_from([ROOM, UNLINKED]) if bad
                                                     else rooms), "content": {"user_ids": ids}}
        return event, ("refused" if bad else "any"), ("user_ids" if bad else "")
    if kind == "unknown":
        event = {"type": draw(st.one_of(st.sampled_from(["m.reaction", "m.room.topic",
                                                         "m.sticker", "org.example.x", ""]),
                                        texts)),
                 "room_id": ROOM, "sender": ADA, "event_id": fresh_id("u"),
                 "content": draw(any_json)}
        return event, "any", ""
    if kind == "state":
        return {"type": "m.room.name", "room_id": ROOM, "sender": ADA, "state_key": "",
                "event_id": fresh_id("s"), "content": {"name": draw(texts)}}, "any", ""
    return draw(st.one_of(scalars, st.lists(any_json, max_size=3), deep_lists)), "refused", ""


@st.composite
def transactions(draw, stored: list):
    """One request: (path, headers, body bytes, the events and their expected fates)."""
    txn = draw(st.one_of(st.builds(lambda: f"t{Seq.next()}"), st.text(min_size=1, max_size=20)
                         .filter(lambda t: t.strip(".") != "")))  # "." and ".." are no name
    prefix = draw(st.sampled_from(["/_matrix/app/v1", "/_matrix/app/v1", ""]))
    path = f"{prefix}/transactions/{quote(txn, safe='', errors='surrogatepass')}"
    headers = {"content-type": draw(st.sampled_from(
        ["application/json"] * 8 + ["text/plain", "application/json; charset=latin-1",
                                    "application/json; charset=utf-8",
                                    "application/json; charset=no-such-charset"]))}
    auth = draw(st.sampled_from(["header"] * 24 + ["query", "raw", "wrong", "none", "empty",
                                                   "bytes"]))
    if auth == "header":
        headers["authorization"] = f"Bearer {HS_TOKEN}"
    elif auth == "query":
        path += f"?access_token={HS_TOKEN}"
    elif auth == "wrong":
        headers["authorization"] = "Bearer " + draw(st.sampled_from(
            [HS_TOKEN[:-1], AS_TOKEN, HS_TOKEN + "x", "Bearer", "x" * 500]))
    elif auth == "empty":
        headers["authorization"] = ""
    elif auth == "raw":
        headers["authorization"] = HS_TOKEN  # no "Bearer ": still the token
    elif auth == "bytes":
        headers["authorization"] = b"Bearer \xff\xfe" + HS_TOKEN.encode()
    authorized = auth in ("header", "query", "raw")

    shape = draw(st.integers(0, 19))
    if shape == 0:
        raw = draw(st.sampled_from([b"{nope", b"\xff\xfe", b"", b"[" * 50_000, b'{"events": ['
                                    + b"[" * 5000, b"\xed\xa0\x80", b'{"events": "\xff"}',
                                    b'{"events": [' + b"1" * 5000 + b"]}"]))
        return path, headers, raw, [], authorized, 400
    if shape == 1:
        body = draw(st.one_of(scalars, st.lists(any_json, max_size=3),
                              st.fixed_dictionaries({"events": st.one_of(
                                  scalars.filter(lambda v: v is not None),
                                  st.dictionaries(st.text(max_size=4), any_json, max_size=2))})))
        return path, headers, json.dumps(body).encode(), [], authorized, 400
    events = []
    for _ in range(draw(st.integers(1, 8))):
        pick = draw(st.integers(0, 9))
        if pick < 4:
            events.append(draw(good_message()))
        elif pick < 7:
            events.append(draw(malformed_message()))
        else:
            events.append(draw(other_event(stored)))
    body = {"events": [e for e, _, _ in events]}
    if draw(st.integers(0, 4)) == 0:
        body["ephemeral"] = [{"type": "m.typing", "room_id": ROOM,
                              "content": {"user_ids": [ADA]}}]
    if draw(st.integers(0, 9)) == 0:
        body[draw(st.text(max_size=8))] = draw(any_json)
    # ASCII (lone surrogates go escaped, "\ud800"), read as UTF-8 whatever charset is named
    raw = json.dumps(body).encode()
    return path, headers, raw, events, authorized, 200


# -- the bridge --------------------------------------------------------------------------------

@pytest.fixture
def bridge(tmp_path, sqlite_url):
    b = Bridge(tmp_path, sqlite_url)
    yield b
    b.close()

def test_generated_transactions_are_answered_and_never_jam_the_bridge(bridge):
    stored_ids: list[str] = []

    def mention_after(n: int) -> None:
        """A trusted mention in the next transaction is stored, with its mention."""
        event = base_message(f"helper: still there after {n}?", **{
            "m.mentions": {"user_ids": [AGENT]}})
        r = bridge.put(f"/_matrix/app/v1/transactions/after-{n}",
                       {"authorization": f"Bearer {HS_TOKEN}"},
                       json.dumps({"events": [event]}).encode())
        assert r.status_code == 200 and r.json() == {}, r.text
        post_id = bridge.taken().get(event["event_id"])
        assert post_id is not None and bridge.mentioned(post_id), "the mention after is not in"
        COUNTS["mentions after"] += 1

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much,
                                     HealthCheck.function_scoped_fixture])
    @given(data=st.data())
    def run(data):
        path, headers, raw, events, authorized, expected = data.draw(transactions(stored_ids))
        replay = data.draw(st.integers(0, 3)) == 0  # the homeserver sends it again
        before_taken, before_refused = bridge.taken(), bridge.refused()
        r = bridge.put(path, headers, raw)
        COUNTS["transactions"] += 1
        band = "5xx" if r.status_code >= 500 else str(r.status_code)
        COUNTS[band] = COUNTS.get(band, 0) + 1
        what = (path[:200], headers, raw[:300])
        assert r.status_code < 500, (what, r.status_code, r.text[:300])
        log = bridge.new_log()
        assert "Traceback" not in log, (what, log[-3000:])
        if not authorized:
            assert r.status_code == 403 and refusal(r)["errcode"] == "M_FORBIDDEN", what
        elif expected is None:
            assert r.status_code in (200, 400), what
        else:
            assert r.status_code == expected, (what, r.text[:300])
        if r.status_code != 200:
            if r.status_code == 400:
                assert refusal(r)["errcode"] in ("M_NOT_JSON", "M_BAD_JSON"), r.text
            assert bridge.taken() == before_taken and bridge.refused() == before_refused
        else:
            assert r.json() == {}
            check_fates(events, before_taken, before_refused, what)
            if replay:
                posts = bridge.posts()
                again = bridge.put(path, headers, raw)
                COUNTS["replays"] += 1
                assert again.status_code == 200 and again.json() == {}, again.text
                assert bridge.posts() == posts, ("stored twice", what)
                assert "Traceback" not in bridge.new_log()
        stored_ids.extend(e["event_id"] for e, fate, _ in events if fate == "stored")
        del stored_ids[:-50]
        if COUNTS["transactions"] % 5 == 0:  # often enough to find what jams, soon after
            mention_after(COUNTS["transactions"])

    def check_fates(events, before_taken, before_refused, what) -> None:
        taken, refused = bridge.taken(), bridge.refused()
        for event, fate, field in events:
            COUNTS["events tried"] += 1
            eid = event.get("event_id") if isinstance(event, dict) else None
            key = eid if isinstance(eid, str) else None
            if key in taken and key not in before_taken:
                COUNTS["stored"] += 1
            elif key in refused and refused[key] != before_refused.get(key):
                COUNTS["refused"] += 1
            elif fate == "refused" and key is None or fate == "refused" and (
                    not isinstance(eid, str) or len(eid) > 64 or not eid.isprintable()):
                COUNTS["refused"] += 1  # named by a digest: counted below
            else:
                COUNTS["ignored"] += 1
            if fate == "stored":
                assert eid in taken, ("a message that may be posted is not stored", event, what)
            elif fate == "refused" and isinstance(eid, str) and eid in refused and field:
                error = refused[eid][0]
                assert field in error and "Traceback" not in error and "\n" not in error, (
                    error, field, event)
            if fate == "refused" and key is not None:
                assert key not in taken or key in before_taken, ("stored a refused event", event)
        want = sum(1 for _, fate, _ in events if fate == "refused")
        counted = sum(c for _, c in refused.values()) - sum(c for _, c in before_refused.values())
        assert counted >= want, ("fewer refusals recorded than events refused", what)
        for error, _ in refused.values():
            assert error and "Traceback" not in error

    run()
    # The last refusal is the newest that status shows, with its reason, in its Mood.
    poison = base_message("x", **{"m.relates_to": "just a string"})
    r = bridge.put("/transactions/last", {"authorization": f"Bearer {HS_TOKEN}"},
                   json.dumps({"events": [poison]}).encode())
    assert r.status_code == 200, r.text
    mention_after(0)
    status = json.loads(bridge.cli("status", "--json").out)
    bridge.close()
    log = bridge.log_path.read_text(errors="replace")
    COUNTS["tracebacks"] = log.count("Traceback")
    print(f"\nMatrix appservice fuzz: {COUNTS}")
    assert COUNTS["tracebacks"] == 0 and COUNTS["5xx"] == 0
    # What was refused is where status shows it (the newest), each with its reason.
    shown = [q for q in status["quarantined"] if q["kind"] == "matrix-event"]
    assert shown[0]["ref"] == poison["event_id"] and shown[0]["mood"] == "lobby"
    assert shown[0]["error"] == "content.m.relates_to is not an object"
    refused = bridge.refused()
    assert len(shown) == min(20, len(refused))
    assert all(q["error"] == refused[q["ref"]][0] and q["count"] == refused[q["ref"]][1]
               for q in shown)
