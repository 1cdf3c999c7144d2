"""A turn handed straight to a waker, and its outcome."""

from __future__ import annotations

import threading

from poller.turns import wakers


def turn(tools="full", session=None, timeout=30.0, **kw) -> wakers.TurnRequest:
    return wakers.TurnRequest(7, "ada", "lobby", "mention", tools, "<mood-wake>hi</mood-wake>", (3, 4),
                       timeout=timeout, session=session, **kw)


def run(waker, t, cancel=None):
    return waker.run(t, lambda pgid: None, cancel or threading.Event())
