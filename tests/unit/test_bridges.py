"""The bridge interface without a chat: ingest once by external id, the outbox written
with what it carries, delivered in order with backoff, and Matrix's pure mapping.

Here, the pure part (no database, no process); the rest sits under the same name
in the other layers.
"""

from __future__ import annotations


import pytest

from support.cli import Cli

from poller import errors
from poller.bridges import matrix
from poller.store import bridges, outbox
from support.bridges import event

CFG = matrix.MatrixConfig(homeserver="http://127.0.0.1:1", server_name="hs.example",
                          as_token="a", hs_token="h")


def test_backoff_doubles_and_is_capped():
    waits = [outbox.backoff(n).total_seconds() for n in range(1, 10)]
    assert waits[:4] == [0.5, 1.0, 2.0, 4.0] and max(waits) == outbox.BACKOFF_MAX_S


# -- The Matrix mapping (pure) ------------------------------------------------------------


def test_what_matrix_events_mean():
    m = matrix.meaning(CFG, event({"msgtype": "m.text", "body": "hi",
                                   "m.mentions": {"user_ids": ["@mood_helper:hs.example",
                                                               "@ada:hs.example"]}}))
    assert m.kind == "message" and m.message.mentions == ("helper",)
    room_ping = matrix.meaning(CFG, event({"msgtype": "m.text", "body": "@room hi",
                                           "m.mentions": {"room": True}}))
    assert room_ping.message.mentions == ()
    assert matrix.meaning(CFG, event({"msgtype": "m.text", "body": "hi"})).message.mentions is None
    assert matrix.meaning(CFG, event({"msgtype": "m.notice", "body": "a bot"})) is None
    assert matrix.meaning(CFG, event({"msgtype": "m.text", "body": "echo"},
                                     sender="@mood_helper:hs.example")) is None
    threaded = matrix.meaning(CFG, event({"msgtype": "m.text", "body": "in a thread",
                                          "m.relates_to": {"rel_type": "m.thread",
                                                           "event_id": "$root",
                                                           "is_falling_back": True,
                                                           "m.in_reply_to": {"event_id": "$x"}}}))
    assert threaded.message.thread == "$root" and threaded.message.reply_to is None
    edit = matrix.meaning(CFG, event({"msgtype": "m.text", "body": "* fixed",
                                      "m.new_content": {"msgtype": "m.text", "body": "fixed"},
                                      "m.relates_to": {"rel_type": "m.replace",
                                                       "event_id": "$old"}}))
    assert (edit.kind, edit.target, edit.body) == ("edit", "$old", "fixed")
    gone = matrix.meaning(CFG, event({}, etype="m.room.redaction", redacts="$old"))
    assert (gone.kind, gone.target) == ("redact", "$old")


def test_joins_and_invitations():
    join = event({"membership": "join"}, etype="m.room.member", state_key="@bo:hs.example",
                 sender="@bo:hs.example")
    assert matrix.meaning(CFG, join).kind == "join"
    rename = dict(join, unsigned={"prev_content": {"membership": "join"}})
    assert matrix.meaning(CFG, rename) is None  # a new display name is not an arrival
    invite = event({"membership": "invite"}, etype="m.room.member",
                   state_key="@mood_helper:hs.example")
    assert matrix.meaning(CFG, invite).kind == "invite"


def test_a_reply_is_m_text_in_reply_and_in_its_thread_with_safe_html():
    target = bridges.ReplyTarget("$asked", "$root")
    c = matrix.content("reply", "**yes** <script>x</script>", target)
    assert c["msgtype"] == "m.text" and c["format"] == "org.matrix.custom.html"
    assert "<strong>yes</strong>" in c["formatted_body"] and "<script>" not in c["formatted_body"]
    assert c["m.relates_to"] == {"m.in_reply_to": {"event_id": "$asked"}, "rel_type": "m.thread",
                                 "event_id": "$root", "is_falling_back": False}
    assert matrix.content("notice", "held", None) == {"msgtype": "m.notice", "body": "held"}


def test_the_registration_claims_only_the_agents_namespace(tmp_path):
    import re
    import yaml

    path = tmp_path / "reg.yaml"
    matrix.write_registration(CFG, str(path))
    reg = yaml.safe_load(path.read_text())
    assert (path.stat().st_mode & 0o777) == 0o600
    (ns,) = reg["namespaces"]["users"]
    assert ns["exclusive"] and re.fullmatch(ns["regex"], "@mood_helper:hs.example")
    assert not re.fullmatch(ns["regex"], "@ada:hs.example")
    assert reg["url"] == "http://127.0.0.1:29330"


@pytest.mark.parametrize("toml, problem", [
    ("", "no [bridges.matrix] section"),
    ("[bridges.matrix]\nhomeserver = 'ftp://x'\n", "homeserver must be an http(s) URL"),
    ("[bridges.matrix]\nhomeserver = 'http://x'\nserver_name = 'x'\n", "MOOD_POLLER_MATRIX_AS_TOKEN"),
    ("[bridges.matrix]\nhomeserver = 'http://x'\nserver_name = 'x'\nmode = 'irc'\n", "appservice or bot"),
    ("[bridges.matrix]\nbogus = 1\n", "unknown option bridges.matrix.bogus"),
    ("[bridges.matrix]\nlisten_port = 'x'\n", "listen_port must be a whole number"),
    ("[bridges.matrix]\nhomeserver = 'http://x'\nserver_name = 'x'\ndefault_trust = 'root'\n",
     "default_trust must be full, look or none"),
    ("[bridges.matrix]\ndefault_trust = 1\n", "default_trust must be a string"),
    ("[bridges.matrix\n", "not valid TOML"),
])
def test_a_bad_bridge_config_is_one_line_and_exit_78(tmp_path, sqlite_url, toml, problem):
    path = tmp_path / "bridge.toml"
    path.write_text(toml)
    r = Cli(sqlite_url).fails("bridge", "matrix", "--config", str(path))
    assert r.code == 78 and problem in r.err and len(r.err.strip().splitlines()) == 1


@pytest.mark.parametrize("trust", ["full", "look", "none"])
def test_the_default_trust_takes_each_trust(trust):
    section = {"homeserver": "http://127.0.0.1:8008", "server_name": "hs.example",
               "default_trust": trust}
    env = {"MOOD_POLLER_MATRIX_AS_TOKEN": "a", "MOOD_POLLER_MATRIX_HS_TOKEN": "h"}
    assert matrix.check(matrix._build(section, env)).default_trust == trust


def test_the_main_config_may_carry_the_bridge_section(tmp_path, sqlite_url, monkeypatch):
    config = tmp_path / "config.toml"
    config.write_text("[poller]\ninterval = 2.0\n\n[bridges.matrix]\n"
                      "homeserver = 'http://127.0.0.1:8008'\nserver_name = 'hs.example'\n"
                      "listen_port = 29999\n")
    monkeypatch.setenv("MOOD_POLLER_MATRIX_AS_TOKEN", "as-secret-token")
    monkeypatch.setenv("MOOD_POLLER_MATRIX_HS_TOKEN", "hs-secret-token")
    cli = Cli(sqlite_url, config=str(config))
    cli("config", "check")
    reg = tmp_path / "reg.yaml"
    out = cli("bridge", "matrix", "--write-registration", str(reg)).out
    assert "as-secret-token" not in out and "hs-secret-token" not in out
    assert "url: http://127.0.0.1:29999" in reg.read_text()
    assert "as_token: as-secret-token" in reg.read_text()




# -- Events that cannot be taken in -------------------------------------------------------

POISON = {  # what a room member can send, Synapse accepts, and the bridge must refuse
    "relates_to a string": ({"msgtype": "m.text", "body": "x", "m.relates_to": "just a string"},
                            "content.m.relates_to is not an object"),
    "in_reply_to a string": ({"msgtype": "m.text", "body": "x",
                              "m.relates_to": {"m.in_reply_to": "s"}},
                             "content.m.relates_to.m.in_reply_to is not an object"),
    "new_content a string": ({"msgtype": "m.text", "body": "* x", "m.new_content": "s",
                              "m.relates_to": {"rel_type": "m.replace", "event_id": "$old"}},
                             "content.m.new_content is not an object"),
    "user_ids a number": ({"msgtype": "m.text", "body": "x", "m.mentions": {"user_ids": 5}},
                          "content.m.mentions.user_ids is not a list"),
    "reply event_id an object": ({"msgtype": "m.text", "body": "x",
                                  "m.relates_to": {"m.in_reply_to": {"event_id": {"a": 1}}}},
                                 "content.m.relates_to.m.in_reply_to.event_id is not a string"),
    "body with NUL": ({"msgtype": "m.text", "body": "a\x00b"}, "content.body holds a NUL character"),
}


@pytest.mark.parametrize("content, why", POISON.values(), ids=POISON.keys())
def test_a_malformed_message_is_refused_with_the_field_it_got_wrong(content, why):
    got = matrix.meaning(CFG, event(content, event_id="$bad"))
    assert got == matrix.Refused("$bad", "!room:hs.example", why)


def test_malformed_ids_and_shapes_are_refused_not_raised():
    redact = matrix.meaning(CFG, event({}, etype="m.room.redaction", redacts={"x": 1}))
    assert isinstance(redact, matrix.Refused) and redact.reason == "redacts is not a string"
    odd_id = matrix.meaning(CFG, event({"msgtype": "m.text", "body": "x"}, event_id={"x": 1}))
    assert odd_id.reason == "event_id is not a string" and odd_id.ref.startswith("sha256:")
    assert matrix.meaning(CFG, event({"msgtype": "m.text", "body": "x"}, event_id=None)
                          ).reason == "a m.room.message needs an event_id"
    typing = matrix.meaning(CFG, {"type": "m.typing", "room_id": "!r:hs", "content": {
        "user_ids": 5}})
    assert typing.reason == "content.user_ids is not a list"
    assert matrix.meaning(CFG, ["not", "an", "event"]).reason == "the event is not an object"
    assert matrix.meaning(CFG, event("text")).reason == "content is not an object"
    assert matrix.meaning(CFG, event({"msgtype": "m.text", "body": "x"}, sender="ada")
                          ).reason == "sender is not a Matrix user id"
    long_id = "$" + "x" * 300
    too_long = matrix.meaning(CFG, event({"msgtype": "m.text", "body": "x"}, event_id=long_id))
    assert too_long.reason == "event_id is longer than 255 characters"
    assert len(too_long.ref) <= 64
    # What we ignore stays ignored, whatever its shape.
    assert matrix.meaning(CFG, event("anything", etype="m.room.topic")) is None
    assert matrix.meaning(CFG, {"type": "m.receipt", "content": 5}) is None


def test_a_transaction_body_of_the_wrong_shape_is_a_user_error():
    assert matrix.transaction_events({"events": [{"a": 1}], "ephemeral": [2]}) == [{"a": 1}, 2]
    assert matrix.transaction_events({"de.sorunome.msc2409.ephemeral": [3]}) == [3]
    for body in ([], {"events": "x"}, {"events": {}}, {"ephemeral": 5}, "x", None):
        with pytest.raises(errors.UserError):
            matrix.transaction_events(body)
