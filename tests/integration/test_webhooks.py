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


def test_the_signature_covers_the_time_and_the_body():
    body = b'{"event": "post"}'
    sig = webhooks.signature("s3cret", 1000, body)
    assert webhooks.verify("s3cret", "1000", body, sig, now=1100)
    assert not webhooks.verify("s3cret", "1000", body + b" ", sig, now=1100)
    assert not webhooks.verify("other", "1000", body, sig, now=1100)
    assert not webhooks.verify("s3cret", "1000", body, sig, now=1000 + 3600)  # played again later
    assert not webhooks.verify("s3cret", "1001", body, sig, now=1100)
