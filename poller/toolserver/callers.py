"""Who calls the tool server, and what each may do.

:class:`TurnCaller` is a turn: the registry's tools bound to the wake's agent, Mood
and tools tier (:class:`poller.tools.Toolbox`), its capability checked again at
every call (a revoked or expired one is refused), the blocks its acting tools accept
kept in the store for the turn's settling, and ``approve``, the permission prompt
Claude Code calls (full-tool turns only).

:class:`PersonCaller` is a person with an API token: the reading tools over every
Mood (each told which Mood by a ``mood`` argument), and ``post`` as themselves, if
their trust lets them post, under the API's rate limit.

Both answer :meth:`call` with an :class:`Answer`, never an exception, and list the
Moods they may read (:meth:`moods`) for the server's resources.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from dataclasses import dataclass
from typing import Callable, Optional

from poller import errors
from poller.kinds import Tools
from poller.store import access, capabilities, core, tool_reads
from poller.store.core import Store
from poller.tools.registry import ERROR, ToolSpec, Toolbox, check_args, registered, schema

APPROVE = "approve"
APPROVE_SPEC = ToolSpec(
    APPROVE,
    "Ask the people of this Mood for permission to use a tool the turn does not pre-allow "
    "(Claude Code's permission prompt): the request is posted in the Mood and the answer "
    "awaited.",
    schema({"tool_name": {"type": "string"}, "input": {"type": "object"},
            "tool_use_id": {"type": ["string", "null"]}}, ("tool_name",)),
    acting=False)
RESOURCE_TOKENS = 2_000  # what reading a Mood's resource returns


@dataclass(frozen=True)
class Answer:
    text: str
    error: bool = False


def _answer(said: str) -> Answer:
    return Answer(said[len(ERROR):], True) if said.startswith(ERROR) else Answer(said)


class TurnCaller:
    """A running turn, proven by its capability's *secret*."""

    def __init__(self, store: Store, secret: str, clock: Callable[[], dt.datetime],
                 max_calls: int = 64):
        cap, why = capabilities.find(store, secret, clock())
        if cap is None:
            raise errors.UserError(why)
        self.store, self.secret, self.clock, self.cap = store, secret, clock, cap
        self.box = Toolbox(store, wake_id=cap.wake_id, agent_id=cap.agent_id, agent=cap.agent,
                           mood_id=cap.mood_id, mood=cap.mood, tools=cap.tools, clock=clock,
                           max_calls=max_calls)

    def specs(self) -> list[ToolSpec]:
        out = self.box.specs()
        return out + [APPROVE_SPEC] if self.cap.tools == Tools.FULL else out

    def valid(self) -> str:
        """Why the capability does nothing now ("" while it holds)."""
        cap, why = capabilities.find(self.store, self.secret, self.clock())
        return "" if cap is not None else why

    def call(self, name: str, args: Optional[dict]) -> Answer:
        why = self.valid()
        if why:
            return Answer(f"refused: {why}", True)
        if name == APPROVE:
            if self.cap.tools != Tools.FULL:
                return Answer("approve is for full-tool turns; this turn is look-only", True)
            problem = check_args(APPROVE_SPEC, args)
            if problem:
                return Answer(problem, True)
            return self._approve(args or {})
        # The blocks accepted so far, in this process or another, count: a reply carries
        # one block of each kind.
        kinds, texts = capabilities.blocks_of(self.store, self.cap.wake_id)
        self.box.block_kinds, self.box.blocks = list(kinds), list(texts)
        said = self.box.call(name, args or {})
        for kind, text in zip(self.box.block_kinds[len(kinds):], self.box.blocks[len(texts):]):
            capabilities.add_block(self.store, self.cap.wake_id, kind, text)
        return _answer(said)

    def _approve(self, args: dict) -> Answer:
        from poller.toolserver import approvals

        tool_input = args.get("input") or {}
        decided = approvals.request(self.store, self.cap, self.secret, args["tool_name"],
                                    tool_input, clock=self.clock)
        return Answer(json.dumps(approvals.outcome(decided, tool_input)))

    def moods(self) -> list[str]:
        return [self.cap.mood]

    def read(self, slug: str) -> Answer:
        if slug != self.cap.mood:
            return Answer(f"this turn reads only {self.cap.mood}", True)
        return self.call("read_history", {"max_tokens": RESOURCE_TOKENS})


# -- A person -----------------------------------------------------------------------------

MOOD_ARG = {"type": "string", "description": "the Mood (its slug)"}
PER_MOOD = ("read_history", "read_post", "who_is_here")
POST_SPEC = ToolSpec(
    "post",
    "Post in a Mood as yourself (mention an agent with @handle to ask it something).",
    schema({"mood": MOOD_ARG, "text": {"type": "string", "description": "what to say"},
            "reply_to": {"type": ["integer", "null"], "minimum": 1,
                         "description": "the id of the post this answers"}},
           ("mood", "text")),
    acting=True)


def _per_mood(spec: ToolSpec) -> ToolSpec:
    params = dict(spec.parameters)
    params["properties"] = {"mood": MOOD_ARG, **params.get("properties", {})}
    params["required"] = ["mood", *params.get("required", [])]
    return dataclasses.replace(spec, parameters=params,
                               description=spec.description.replace("this Mood", "a Mood"))


class PersonCaller:
    """A person, by their API token: reads every Mood, posts as themselves."""

    def __init__(self, store: Store, token: str, clock: Callable[[], dt.datetime],
                 limit=None, on_posted: Optional[Callable[[], None]] = None):
        who = access.identify(store, token) if token else None
        if who is None:
            raise errors.UserError("the token is unknown or was revoked")
        self.store, self.token, self.clock, self.identity = store, token, clock, who
        self.limit, self.on_posted = limit, on_posted

    def _tools(self) -> dict[str, ToolSpec]:
        out = {}
        for tool in registered():
            if tool.spec.acting:
                continue
            spec = tool.spec
            out[spec.name] = _per_mood(spec) if spec.name in PER_MOOD else spec
        if self.identity.may_post:
            out[POST_SPEC.name] = POST_SPEC
        return out

    def specs(self) -> list[ToolSpec]:
        return list(self._tools().values())

    def call(self, name: str, args: Optional[dict]) -> Answer:
        who = access.identify(self.store, self.token)
        if who is None:
            return Answer("refused: the token is unknown or was revoked", True)
        self.identity = who
        spec = self._tools().get(name) if isinstance(name, str) else None
        if spec is None:
            return Answer(f"unknown tool {str(name)[:60]!r} (tools: "
                          f"{', '.join(self._tools())})", True)
        args = dict(args or {})
        problem = check_args(spec, args)
        if problem:
            return Answer(problem, True)
        try:
            if name == POST_SPEC.name:
                return self._post(args)
            slug = args.pop("mood", None)
            return _answer(self._box(slug).call(name, args))
        except errors.UserError as exc:
            return Answer(str(exc), True)

    def _box(self, slug: Optional[str]) -> Toolbox:
        mood_id, shown = 0, ""
        if slug is not None:
            with self.store.reading() as s:
                mood_id = tool_reads.mood_id(s, slug)
            if mood_id is None:
                raise errors.NotFound(f"no Mood {slug!r}")
            shown = slug
        return Toolbox(self.store, wake_id=0, agent_id=self.identity.person_id,
                       agent=self.identity.handle, mood_id=mood_id, mood=shown, tools=Tools.LOOK,
                       clock=self.clock)

    def _post(self, args: dict) -> Answer:
        if not self.identity.may_post:
            return Answer(f"{self.identity.handle} has trust {self.identity.trust} and may not post",
                          True)
        [ready] = self.store.admit([core.NewPost(args["mood"], self.identity.handle, args["text"],
                                                 self.clock(), reply_to=args.get("reply_to"))])
        if self.limit is not None and not self.limit.allow(self.identity.token_id):
            return Answer(f"refused: at most {self.limit.limit} posts per "
                          f"{self.limit.window:g} s; try again shortly", True)
        [post] = self.store.ingest([ready])
        if self.on_posted is not None:
            self.on_posted()
        return Answer(f"Posted #p-{post.id} in {args['mood']}.")

    def moods(self) -> list[str]:
        return [m.slug for m in self.store.moods(include_archived=False)]

    def read(self, slug: str) -> Answer:
        return self.call("read_history", {"mood": slug, "max_tokens": RESOURCE_TOKENS})
