"""Bridges: the poller comes to the chat people already use.

A bridge has two sides, and the next chat (Slack, Discord, Zulip) is a new
module with the same two:

- **In**: it turns its chat's events into the store's neutral values
  (:class:`poller.store.bridges.Incoming`, a join, an edit, a redaction) and
  hands them to :mod:`poller.store.bridges`, which takes each in once, keyed
  by the event's external id, through the one ingest path.
- **Out**: a :class:`Sender` — ``name`` (the outbox's ``bridge`` column),
  ``send(item)`` (deliver one :class:`poller.store.outbox.Item`, with the
  item's id as the remote's idempotency key where it has one; return the
  remote's id or raise) and ``sent(item, external_id)`` (record it).
  :func:`poller.bridges.delivery.serve` runs the outbox for it: items due,
  in order per target, retried with backoff, never sent twice.

Matrix is :mod:`poller.bridges.matrix` (the mapping) and
:mod:`poller.bridges.matrix_service` (the running appservice or bot);
signed webhooks are :mod:`poller.bridges.webhooks`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Protocol

if TYPE_CHECKING:  # (the CLI's bridge commands list their help without the database library)
    from poller.store.outbox import Item


class Sender(Protocol):
    name: str

    async def send(self, item: Item) -> Optional[str]:
        """Deliver *item*; the remote's id for it.  Raise to have it tried again later."""

    def sent(self, item: Item, external_id: Optional[str]) -> None:
        """Record that *item* went out (called in a worker thread)."""
