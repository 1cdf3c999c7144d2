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
    ("[bridges.matrix]\nlisten_port = 'x'\n", "listen_port must be a int"),
    ("[bridges.matrix\n", "not valid TOML"),
])
def test_a_bad_bridge_config_is_one_line_and_exit_78(tmp_path, sqlite_url, toml, problem):
    path = tmp_path / "bridge.toml"
    path.write_text(toml)
    r = Cli(sqlite_url).fails("bridge", "matrix", "--config", str(path))
    assert r.code == 78 and problem in r.err and len(r.err.strip().splitlines()) == 1


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


