"""Signed outbound webhooks: a Mood's events POSTed as JSON to subscriber URLs.

Events (``post``, ``reply``, ``silent``, ``notice`` — holds, failures and
refused blocks are the service's notices — ``turn_started``, ``turn_ended``)
go through the same outbox as Matrix's.  Each request carries

- ``X-Mood-Timestamp``: the send time, in Unix seconds;
- ``X-Mood-Signature: sha256=HEX``: HMAC-SHA256 with the subscriber's secret
  over ``TIMESTAMP + "." + BODY``, so a receiver can check both and refuse an
  old request played again;
- ``X-Mood-Delivery``: the outbox item's id, the same on every retry, so a
  receiver sees each event once even when a timed-out request is sent again.

A 2xx answer is delivery; anything else (a 500, a redirect — never followed —
a timeout) is tried again with backoff.  Only http(s) URLs are accepted.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import json
import re
import secrets
import socket
from typing import Callable, Optional
from urllib.parse import urlsplit

from poller import errors
from poller.secure import shown_url
from poller.bridges import delivery
from poller.kinds import Bridge
from poller.store import bridges, outbox

TIMEOUT_S = 10.0  # one request: connect, send, answer
MAX_URL = 2000


def check_url(url: str) -> str:
    """*url* if the service may POST a Mood's events to it; else a one-line refusal.

    Refused besides what is not http(s) with a host: a name and password in the URL
    (they would be shown wherever the URL is; the signature is the credential), and a
    link-local, multicast or unspecified address written as an IP in any of its forms
    (169.254.169.254 is where clouds serve their machines' credentials)."""
    if len(url) > MAX_URL or not re.fullmatch(r"https?://[^\s/?#]+(/[^\s]*)?", url or ""):
        raise errors.UserError(f"a webhook URL must be http:// or https:// with a host, "
                               f"got {shown_url(url)[:100]!r}")
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018 - a port that is not a number is refused here
    except ValueError:
        raise errors.UserError(f"a webhook URL must have a valid host and port, "
                               f"got {shown_url(url)[:100]!r}") from None
    if "@" in parts.netloc:
        raise errors.UserError("a webhook URL may not carry a user name or password "
                               "(requests are signed with the webhook's secret)")
    address = _address(host)
    if address is not None and (address.is_link_local or address.is_multicast
                                or address.is_unspecified or address.is_reserved):
        raise errors.UserError(f"a webhook URL may not point at {address} "
                               f"(a link-local, multicast or reserved address)")
    return url


def _address(host: str):
    """The IP address *host* is written as (dotted, short, decimal or hex IPv4 forms too),
    or None for a name."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        try:
            address = ipaddress.ip_address(socket.inet_aton(host))
        except (OSError, ValueError):
            return None
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped or address




def new_secret() -> str:
    return "mpw_" + secrets.token_urlsafe(32)


def signature(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify(secret: str, timestamp: str, body: bytes, header: str, now: float,
           tolerance: float = 300.0) -> bool:
    """What a receiver checks: the signature, and that the request is recent."""
    try:
        ts = int(timestamp)
    except ValueError:
        return False
    if abs(now - ts) > tolerance:
        return False
    if not isinstance(header, str) or not header.isascii():
        return False  # a signature is hex: anything else is not one
    return hmac.compare_digest(signature(secret, ts, body), header)


class Error(Exception):
    """The subscriber did not take the event (its status, or a redirect)."""


class WebhookSender:
    """The outbox's sender for webhooks (see :class:`poller.bridges.Sender`)."""

    name = Bridge.WEBHOOK.value
    serves = "the Moods' webhooks"  # what its beat says it serves

    def __init__(self, store, clock: Callable, timeout: float = TIMEOUT_S,
                 max_attempts: int = outbox.MAX_ATTEMPTS) -> None:
        import httpx

        self.store, self.clock, self.max_attempts = store, clock, max_attempts
        self.http = httpx.AsyncClient(follow_redirects=False, timeout=timeout, trust_env=False)

    async def send(self, item: outbox.Item) -> Optional[str]:
        url, secret = await asyncio.to_thread(bridges.webhook_of, self.store, int(item.target))
        check_url(url)
        payload = await asyncio.to_thread(outbox.payload_of, self.store, item)
        body = json.dumps(payload, sort_keys=True, default=str).encode()
        ts = int(self.clock().timestamp())
        headers = {"Content-Type": "application/json", "X-Mood-Timestamp": str(ts),
                   "X-Mood-Signature": signature(secret, ts, body),
                   "X-Mood-Delivery": str(item.id), "X-Mood-Event": item.event}
        r = await self.http.post(url, content=body, headers=headers)
        if not 200 <= r.status_code < 300:
            kind = "a redirect (not followed)" if 300 <= r.status_code < 400 else "an error"
            raise Error(f"the subscriber answered HTTP {r.status_code}, {kind}")
        return None

    def sent(self, item: outbox.Item, external_id: Optional[str]) -> None:
        outbox.mark_sent(self.store, item.id, external_id, self.clock())

    async def close(self) -> None:
        await self.http.aclose()


def main(store, clock: Callable, poll: float = 0.2, once: bool = False,
         timeout: float = TIMEOUT_S, max_attempts: int = outbox.MAX_ATTEMPTS) -> int:
    """Deliver webhooks until SIGTERM or SIGINT (or, with *once*, what is due now)."""
    import signal

    async def go() -> int:
        sender = WebhookSender(store, clock, timeout, max_attempts)
        try:
            if once:
                return await delivery.deliver_due(store, sender, clock)
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, stop.set)
            await delivery.serve(store, sender, clock, stop, poll)
            return 0
        finally:
            await sender.close()

    return asyncio.run(go())
