"""Running the outbox for one sender: what is due goes out, in order per target.

Each target's items are sent one after another (a reply never overtakes the
one before it); targets are served side by side.  A failed send is recorded
with its error and tried again after a backoff (:func:`poller.store.outbox.backoff`),
and the target's newer items wait behind it, so a homeserver that is down
loses nothing and gets everything in order once it is back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

from poller.bridges import Sender
from poller.store import outbox

log = logging.getLogger("poller.bridges")


def describe(exc: BaseException) -> str:
    """One line for an operator: the kind of failure, never a token."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:500] if text else type(exc).__name__


async def deliver_due(store, sender: Sender, clock: Callable, limit: int = 200) -> int:
    """Send what is due now; the number of items sent."""
    items = await asyncio.to_thread(outbox.due, store, sender.name, clock(), limit)
    by_target: dict[str, list[outbox.Item]] = {}
    for item in items:
        by_target.setdefault(item.target, []).append(item)
    sent = await asyncio.gather(*(_target(store, sender, clock, its)
                                  for its in by_target.values()))
    return sum(sent)


async def _target(store, sender: Sender, clock: Callable, items: list[outbox.Item]) -> int:
    n = 0
    for item in items:
        try:
            external_id = await sender.send(item)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the remote said no, or could not be reached
            error = describe(exc)
            status = await asyncio.to_thread(outbox.mark_tried, store, item.id, error, clock(),
                                             getattr(sender, "max_attempts", outbox.MAX_ATTEMPTS))
            log.warning("outbox item %s to %s not delivered (%s): %s", item.id, sender.name,
                        status, error, extra={"action": "outbox_retry", "item": item.id,
                                              "bridge": sender.name, "status": status})
            return n
        await asyncio.to_thread(sender.sent, item, external_id)
        n += 1
    return n


BEAT_EVERY_S = 5.0  # how often a running bridge says so (health, status, /metrics)


def beat(store, holder: str, at, serves: str) -> None:
    """Record that the bridge *holder* runs (a beat that cannot be written only ages)."""
    from poller.store import access

    try:
        access.record_beat(store, holder, at, BEAT_EVERY_S, 0.0, serves[:300])
    except Exception as exc:
        log.debug("bridge beat not recorded: %s", describe(exc), extra={"action": "beat_failed"})


def unbeat(store, holder: str) -> None:
    from poller.store import access

    try:
        access.drop_beat(store, holder)
    except Exception as exc:
        log.debug("bridge beat not dropped: %s", describe(exc), extra={"action": "beat_failed"})


async def serve(store, sender: Sender, clock: Callable, stop: asyncio.Event,
                poll: float) -> None:
    """Deliver until *stop* is set, looking again every *poll* seconds when idle; beat every
    :data:`BEAT_EVERY_S` meanwhile, and say at the end that the bridge stopped."""
    from poller.store import access

    holder = access.bridge_holder(sender.name)
    try:
        await _serve(store, sender, clock, stop, poll, holder)
    finally:
        await asyncio.to_thread(unbeat, store, holder)


async def _serve(store, sender: Sender, clock: Callable, stop: asyncio.Event, poll: float,
                 holder: str) -> None:
    beat_at = 0.0
    while not stop.is_set():
        if time.monotonic() - beat_at >= BEAT_EVERY_S:
            beat_at = time.monotonic()
            await asyncio.to_thread(beat, store, holder, clock(), getattr(sender, "serves", ""))
        try:
            n = await deliver_due(store, sender, clock)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the database, briefly: the next look tries again
            log.warning("outbox: %s", describe(exc), extra={"action": "outbox_error"})
            n = 0
        if n == 0:
            try:
                await asyncio.wait_for(stop.wait(), poll)
            except asyncio.TimeoutError:
                pass
