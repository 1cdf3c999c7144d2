"""The tools a model agent's turn may call: one registry, shared by every agent kind.

A :class:`Toolbox` is the tools of one turn, bound to the store, the agent, the
Mood and the turn's tools tier.  Reading tools (:mod:`poller.tools.reading`)
read the store and never write it; a look-only turn gets only these.  Acting
tools (full-tool turns only: the core's in :mod:`poller.tools.acting`, each organ's in
its own ``tools`` module, declared by its ``organ`` module) never write the store
either: each writes the reply block its action is (```` ```alarm ````,
```` ```handoff ````...), checked by the block registry's own parser
(:func:`poller.turns.blocks.parse`), and keeps it in :attr:`Toolbox.blocks`;
the waker appends those to the agent's reply (:meth:`Toolbox.reply_with_blocks`),
so settling applies them with exactly the code and the checks of blocks written
by hand.

:meth:`Toolbox.call` never raises: an unknown tool, an acting tool on a
look-only turn, arguments that do not fit the tool's schema, one call too
many, a store that cannot be read: each is one line starting ``error: `` for
the model to read.
"""

from __future__ import annotations

from poller.tools.registry import (MAX_CALLS, Tool, ToolError, ToolSpec, Toolbox, check_args,
                                   for_turn, register, registered, schema)
from poller.tools import acting, reading  # noqa: E402,F401  (they declare their tools)

__all__ = ["MAX_CALLS", "Tool", "ToolError", "ToolSpec", "Toolbox", "check_args", "for_turn",
           "register", "registered", "schema"]
