"""Signed webhooks, delivered to a real HTTP receiver on loopback.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import json

import pytest


from poller.bridges import webhooks
from support.webhooks import Receiver, T0, add_hook, secret_of
from support.webhooks import cli  # noqa: F401  (fixtures)

def test_a_redirect_is_not_followed_and_a_failed_item_can_be_sent_again(cli, db_url):
    rx = Receiver(lambda: "", script=["redirect"] * 20)
    try:
        add_hook(cli, rx.url)
        cli("post", "lobby", "--as", "ada", "hello", "--now", T0)
        for minute in range(3):
            cli("bridge", "webhooks", "--once", "--timeout", "5", "--max-attempts", "3",
                "--now", f"2026-03-02T09:{minute + 1:02d}:00Z")
        failed = json.loads(cli("outbox", "--failed", "--json").out)
        assert len(failed) == 1 and failed[0]["attempts"] == 3
        assert "HTTP 302" in failed[0]["last_error"] and "not followed" in failed[0]["last_error"]
        assert "/elsewhere" not in rx.paths
        rx.script.clear()
        rx.secret_of = lambda: secret_of(cli)
        cli("outbox", "retry", str(failed[0]["id"]), "--now", "2026-03-02T10:00:00Z")
        out = cli("bridge", "webhooks", "--once", "--now", "2026-03-02T10:00:00Z").out
        assert "delivered 1" in out
        assert json.loads(cli("outbox", "--json").out)[0]["status"] == "sent"
        again = cli.fails("outbox", "retry", str(failed[0]["id"]))
        assert "never sent twice" in again.err
    finally:
        rx.close()


@pytest.mark.parametrize("url", ["ftp://example.org/x", "file:///etc/passwd", "example.org",
                                 "javascript:alert(1)", "http://"])
def test_only_http_urls_are_accepted(cli, url):
    r = cli.fails("mood", "webhook", "add", "lobby", url)
    assert "http:// or https://" in r.err
    assert json.loads(cli("mood", "webhook", "list", "--json").out) == []


@pytest.mark.parametrize("url, why", [
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://2852039166/", "169.254.169.254"),  # the same address, written as one number
    ("http://0xa9.0xfe.0xa9.0xfe/", "169.254.169.254"),
    ("http://[fe80::1]:8080/", "fe80::1"),
    ("http://[::ffff:169.254.169.254]/", "169.254.169.254"),
    ("http://0.0.0.0:9000/", "0.0.0.0"),
    ("http://hook:hunter2@hooks.example.org/in", "user name or password"),
    ("http://hooks.example.org:port/in", "valid host and port"),
])
def test_urls_that_point_inside_or_carry_a_password_are_refused(cli, url, why):
    r = cli.fails("mood", "webhook", "add", "lobby", url)
    assert why in r.err and len(r.err.strip().splitlines()) == 1 and "hunter2" not in r.err
    assert json.loads(cli("mood", "webhook", "list", "--json").out) == []


def test_a_password_kept_in_an_older_url_is_never_listed(cli):
    from poller.store import bridges, db
    from poller.store.core import Store

    store = Store(db.make_engine(cli.db_url))
    try:  # written as an older version accepted it
        bridges.add_webhook(store, "lobby", "http://hook:hunter2@127.0.0.1:9/in", "mpw_x",
                            webhooks_now())
    finally:
        store.engine.dispose()
    listed = cli("mood", "webhook", "list").out + cli("mood", "webhook", "list", "--json").out
    assert "hunter2" not in listed and "hook:***@127.0.0.1:9/in" in listed


def webhooks_now():
    import datetime as dt

    return dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.timezone.utc)


def test_a_signature_that_is_not_hex_is_refused_not_raised():
    body = b'{"event": "post"}'
    for header in ("sha256=\u00e9", "sha256=\udfff", "", "sha256=" + "0" * 64):
        assert not webhooks.verify("s3cret", "1000", body, header, now=1000)
    assert not webhooks.verify("s3cret", "\u00b2", body, webhooks.signature("s3cret", 1000, body),
                               now=1000)


def test_the_signature_covers_the_time_and_the_body():
    body = b'{"event": "post"}'
    sig = webhooks.signature("s3cret", 1000, body)
    assert webhooks.verify("s3cret", "1000", body, sig, now=1100)
    assert not webhooks.verify("s3cret", "1000", body + b" ", sig, now=1100)
    assert not webhooks.verify("other", "1000", body, sig, now=1100)
    assert not webhooks.verify("s3cret", "1000", body, sig, now=1000 + 3600)  # played again later
    assert not webhooks.verify("s3cret", "1001", body, sig, now=1100)
