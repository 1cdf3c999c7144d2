"""The registry of tools and the toolbox of one turn (:mod:`poller.tools` re-exports
it, with every tool of the service declared)."""

from __future__ import annotations

import datetime as dt
import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional

from poller import errors
from poller.kinds import Tools

log = logging.getLogger("poller.tools")

MAX_CALLS = 8
ERROR = "error: "


@dataclass(frozen=True)
class ToolSpec:
    """What a model is told of one tool."""

    name: str
    description: str  # one or two sentences for the model
    parameters: dict  # JSON Schema of the arguments object
    acting: bool  # False: a reading tool (look-only turns get only these)

    def to_json(self) -> dict:
        return {"name": self.name, "description": self.description,
                "parameters": self.parameters}


class ToolError(Exception):
    """Raised by a tool: the call is refused with this one-line reason."""


@dataclass(frozen=True)
class Tool:
    """One registered tool: its spec, what it does, and when it is offered.

    ``run(box, args)`` returns the text the model reads; ``offered(box)`` returns
    why the tool does not apply to this turn's agent and Mood ("" when it does);
    ``tailor(box, spec)`` returns the spec as this turn is told it (its choices named).
    """

    spec: ToolSpec
    run: Callable[["Toolbox", dict], str]
    offered: Optional[Callable[["Toolbox"], str]] = None
    tailor: Optional[Callable[["Toolbox", ToolSpec], ToolSpec]] = None


_TOOLS: dict[str, Tool] = {}
_loaded = False


def register(tool: Tool) -> Tool:
    """Declare a tool (once per name: a second declaration replaces the first)."""
    _TOOLS[tool.spec.name] = tool
    return tool


def registered() -> list[Tool]:
    """Every tool, reading ones first, each group in the order declared."""
    _load()
    return sorted(_TOOLS.values(), key=lambda t: t.spec.acting)


def _load() -> None:
    """The organs declare their tools in their ``organ`` modules: load them, once."""
    global _loaded
    if not _loaded:
        _loaded = True
        from poller.cycle import organs  # (the organs import this module to register)

        organs.load()


def schema(properties: dict, required: tuple[str, ...] = ()) -> dict:
    """The JSON Schema of an arguments object with these properties."""
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False}


_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "null": lambda v: v is None,
}


def check_args(spec: ToolSpec, args: Any) -> str:
    """Why *args* do not fit *spec*'s parameters ("" when they do): the object's own
    keys, required ones, each value's type and numeric bounds."""
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return f"the arguments of {spec.name} must be an object, not {type(args).__name__}"
    props = spec.parameters.get("properties", {})
    takes = ", ".join(props) or "no arguments"
    for key in args:
        if key not in props:
            return f"unknown argument {str(key)[:40]!r} for {spec.name} (it takes: {takes})"
    for key in spec.parameters.get("required", ()):
        if key not in args:
            return f"{spec.name} needs the argument {key!r}"
    for key, value in args.items():
        prop = props[key]
        types = prop.get("type")
        if types is not None:
            types = [types] if isinstance(types, str) else list(types)
            if not any(_TYPES[t](value) for t in types):
                return f"{key} must be {' or '.join(types)}, not {_json_type(value)}"
        if _TYPES["number"](value):
            if "minimum" in prop and value < prop["minimum"]:
                return f"{key} must be at least {prop['minimum']}, got {value}"
            if "maximum" in prop and value > prop["maximum"]:
                return f"{key} must be at most {prop['maximum']}, got {value}"
        if "enum" in prop and value not in prop["enum"]:
            return f"{key} must be one of {', '.join(map(str, prop['enum']))}"
    return ""


def _json_type(value: Any) -> str:
    for name, fits in _TYPES.items():
        if name != "number" and fits(value):
            return name
    return "number" if _TYPES["number"](value) else type(value).__name__


def one_line(message: str, limit: int = 500) -> str:
    flat = " ".join(str(message).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class Toolbox:
    """The tools of one turn: bound to the store, the agent, the Mood and the turn's tools tier."""

    def __init__(self, store, *, wake_id: int, agent_id: int, agent: str, mood_id: int, mood: str,
                 tools: str,  # "full" | "look"
                 clock: Callable[[], dt.datetime], max_calls: int = MAX_CALLS,
                 approve: tuple[str, ...] = (),
                 ask: Optional[Callable[[str, dict], tuple[bool, str]]] = None):
        self.store = store
        # Acting tools used only once a person approves (the ``approve_tools`` setting), and
        # how to ask: ``ask(tool, args)`` -> (approved, why not).
        self.approve, self.ask = tuple(approve), ask
        self.wake_id, self.agent_id, self.agent = wake_id, agent_id, agent
        self.mood_id, self.mood = mood_id, mood
        self.tools = Tools.FULL if tools == Tools.FULL else Tools.LOOK
        self.clock = clock
        self.max_calls = max_calls
        self.blocks: list[str] = []  # reply blocks the acting tools accepted, in order
        self.block_kinds: list[str] = []  # the kind of each of them
        self.calls = 0
        self._cache: dict[str, Any] = {}
        self._lock = threading.RLock()

    # -- what the model is offered --------------------------------------------------------

    def specs(self) -> list[ToolSpec]:
        """The tools this turn may call: the reading ones; on a full-tool turn, the acting
        ones that apply to this agent in this Mood too."""
        out = []
        for tool in registered():
            if tool.spec.acting and self.tools != Tools.FULL:
                continue
            try:
                if tool.offered is not None and tool.offered(self):
                    continue
                spec = tool.tailor(self, tool.spec) if tool.tailor is not None else tool.spec
            except Exception:  # a store that cannot be read offers no such tool
                log.warning("could not tell whether %s applies to wake %s", tool.spec.name,
                            self.wake_id, exc_info=True,
                            extra={"action": "tool_offer_failed", "wake_id": self.wake_id})
                continue
            out.append(spec)
        return out

    # -- a call -----------------------------------------------------------------------------

    def call(self, name: str, args: dict) -> str:
        """Run the tool *name* with *args*; what it says, or one line starting ``error: ``."""
        shown = name if isinstance(name, str) else repr(name)
        try:
            with self._lock:  # a model may call tools in parallel: one at a time here
                self.calls += 1
                return self._call(name, args)
        except ToolError as exc:
            return ERROR + one_line(str(exc))
        except errors.UserError as exc:
            return ERROR + one_line(str(exc))
        except Exception as exc:
            log.warning("tool %s failed in wake %s: %s", one_line(shown, 60), self.wake_id,
                        type(exc).__name__, exc_info=True,
                        extra={"action": "tool_failed", "wake_id": self.wake_id})
            return ERROR + f"{one_line(shown, 60)} failed: the store could not be read just now"

    def _call(self, name, args) -> str:
        if self.calls > self.max_calls:
            return ERROR + (f"too many tool calls: a turn may make {self.max_calls}; "
                            "write your reply now")
        _load()
        tool = _TOOLS.get(name) if isinstance(name, str) else None
        if tool is None:
            return ERROR + (f"unknown tool {one_line(str(name), 60)!r} (this turn's tools: "
                            f"{self._offered()})")
        if tool.spec.acting and self.tools != Tools.FULL:
            return ERROR + (f"{tool.spec.name} is an acting tool and this turn is look-only: "
                            f"only reading tools may be called ({self._offered()})")
        if tool.offered is not None:
            why = tool.offered(self)
            if why:
                return ERROR + f"{tool.spec.name} is not available: {one_line(why)}"
        problem = check_args(tool.spec, args)
        if problem:
            return ERROR + one_line(problem)
        if tool.spec.acting and tool.spec.name in self.approve:
            if self.ask is None:
                return ERROR + f"{tool.spec.name} needs a person's approval, which cannot be asked now"
            approved, why = self.ask(tool.spec.name, dict(args or {}))
            if not approved:
                return ERROR + one_line(why)
        return tool.run(self, dict(args or {}))

    def _offered(self) -> str:
        return ", ".join(s.name for s in self.specs())

    # -- what the waker does with the accepted blocks ---------------------------------------

    def reply_with_blocks(self, reply: str) -> str:
        """*reply* with the accepted blocks appended, as settling must read them.

        A reply that leaves a code fence open would swallow the blocks after it as
        text: the fence is closed first."""
        if not self.blocks:
            return reply
        from poller.turns import blocks as registry

        tail = "\n\n".join(self.blocks)
        joined = f"{reply.rstrip()}\n\n{tail}" if reply.strip() else tail
        if set(self.block_kinds) <= set(registry.parse(joined, tools=self.tools).found):
            return joined
        return f"{reply.rstrip()}\n```\n\n{tail}"

    # -- shared by the tools -----------------------------------------------------------------

    def cached(self, key: str, make: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]


def for_turn(store, claimed, clock: Callable[[], dt.datetime],
             max_calls: int = MAX_CALLS) -> Toolbox:
    """The toolbox of the turn a runner claimed (:class:`poller.store.turns.Claimed`)."""
    from poller.store import tool_reads

    with store.reading() as s:
        mood_id = tool_reads.mood_id(s, claimed.mood)
    if mood_id is None:
        raise errors.NotFound(f"no Mood {claimed.mood!r}")
    return Toolbox(store, wake_id=claimed.wake_id, agent_id=claimed.agent.id,
                   agent=claimed.agent.handle, mood_id=mood_id, mood=claimed.mood,
                   tools=claimed.tools, clock=clock, max_calls=max_calls)


