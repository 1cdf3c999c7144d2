"""The Matrix bridge's appservice endpoint over HTTP, for what a homeserver (or anyone
reaching the port) may send around the events: the Content-Type, the token, the txnId.
A real ``mood-poller bridge matrix`` process answers (see support.appservice)."""

from __future__ import annotations

import pytest

from support.appservice import GOOD_TOKEN, HS_TOKEN, Bridge, mention, refusal


@pytest.fixture
def bridge(tmp_path, sqlite_url):
    b = Bridge(tmp_path, sqlite_url)
    yield b
    b.close()


def test_a_transaction_is_read_as_utf8_whatever_charset_its_type_names(bridge):
    event, raw = mention(1)
    r = bridge.put("/_matrix/app/v1/transactions/1", dict(
        GOOD_TOKEN, **{"content-type": "application/json; charset=no-such-charset"}), raw)
    assert r.status_code == 200 and event["event_id"] in bridge.taken(), r.text
    r = bridge.put("/_matrix/app/v1/transactions/2", dict(
        GOOD_TOKEN, **{"content-type": "application/json; charset=latin-1"}), b'{"events": "\xe9"}')
    assert r.status_code == 400 and refusal(r)["errcode"] == "M_NOT_JSON"
    assert "Traceback" not in bridge.new_log()


def test_a_token_of_bytes_that_are_not_utf8_is_a_wrong_token(bridge):
    _, raw = mention(2)
    for given in (b"Bearer \xff\xfe" + HS_TOKEN.encode(), b"\xc3(", HS_TOKEN.encode() + b"\xe9"):
        r = bridge.put("/_matrix/app/v1/transactions/3", {"authorization": given}, raw)
        assert r.status_code == 403 and refusal(r)["errcode"] == "M_FORBIDDEN"
    r = bridge.http.put("/_matrix/app/v1/transactions/3?access_token=%ff%fe", content=raw)
    assert r.status_code == 403 and refusal(r)["errcode"] == "M_FORBIDDEN"
    assert bridge.taken() == {} and "Traceback" not in bridge.new_log()


@pytest.mark.parametrize("txn", ["{", "a}b", "{txn}", "%25", "é", "%F0%9F%8F%B4"])
def test_a_transaction_id_is_any_text(bridge, txn):
    event, raw = mention(3)
    r = bridge.put(f"/_matrix/app/v1/transactions/{txn}", GOOD_TOKEN, raw)
    assert r.status_code == 200 and r.json() == {} and event["event_id"] in bridge.taken()
    r = bridge.put(f"/transactions/{txn}", GOOD_TOKEN, raw)  # the legacy path, sent again
    assert r.status_code == 200 and bridge.posts() == 1
