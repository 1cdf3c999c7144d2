"""The Moods as tools: ``mood-poller mcp``, an MCP server over the tool registry.

Two kinds of caller (:mod:`poller.toolserver.callers`):

- **a turn**, proving itself with the capability its runner minted
  (``MOOD_TURN_TOKEN``, :mod:`poller.store.capabilities`): it acts as the wake's agent
  in the wake's Mood with the wake's tools tier, and asks the room's approval for a
  tool its turn does not pre-allow (:mod:`poller.toolserver.approvals`).  A
  sandboxed turn cannot open the store: its ``mood-poller mcp`` relays each call
  through a socket its runner keeps open for the turn (:mod:`poller.toolserver.door`);
- **a person**, with their API token (``MOOD_POLLER_TOKEN`` over stdio, a bearer
  token over HTTP at ``/mcp`` under ``serve``): the reading tools over every Mood
  they may read, and ``post`` as themselves, under the API's trust rules and rate
  limit.

:mod:`poller.toolserver.server` speaks MCP with the official SDK.
"""
