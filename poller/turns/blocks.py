"""The blocks an agent may write in its reply: one registry, one parser.

An agent's reply may carry, anywhere in it, fenced blocks of the kinds
registered here (```` ```handoff ````, ```` ```settings ````, and those the
organs add).  A kind is declared once, by the part of the poller that owns it,
as a :class:`Kind`: its fence name, the tools tier a turn needs for it, its
parser (the block's lines to a frozen value, or :class:`Refuse`) and its
applier, which settling (:mod:`poller.turns.settling`) calls with the store's
open transaction.  ``parse`` takes the reply text and the turn's tools and
returns the reply with the blocks taken out, each block checked as far as text
alone allows, and the refusals: a block is either wholly valid or refused with
a reason, never half read.  What needs the store (does the Mood exist, is it
archived, is the agent real) is checked by the applier.

A fenced block of any other kind (```` ```python ````, say) is ordinary text:
a handoff example quoted inside one is not a handoff.

A wake kind whose reply is not the agent speaking (a slash command's output)
is declared here too, as an :class:`Output`: settling hands its reply to the
owner's function instead of posting it and reading its blocks.

The core's own kinds, ``handoff`` and ``settings``, are declared at the end of
this module; each organ declares its own in its ``organ`` module, and the
registry loads every organ (:func:`poller.cycle.organs.load`) the first time
it is read, so every process that settles a turn (the poller, a runner
started on its own) knows every kind.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from poller import errors, settings, text
from poller.kinds import Tools
from poller.store import turns

log = logging.getLogger("poller.runner")

MAX_ABOUT_CHARS = 100
MAX_CONTEXT_CHARS = 8_000
MAX_NOTE_CHARS = 500
HANDOFF_KEYS = ("to", "from", "about", "for")

FENCE_RE = re.compile(r"^[ \t]{0,3}```[ \t]*(?P<info>[^\s`]*)[^`]*$")
LINE_RE = re.compile(r"^(?P<key>[A-Za-z_][\w-]*)[ \t]*:[ \t]*(?P<value>.*)$")
SEPARATOR_RE = re.compile(r"^[ \t]*---+[ \t]*$")


class Refuse(Exception):
    """Raised by a kind's parser: the block is refused whole, with this reason."""


@dataclass(frozen=True)
class Kind:
    """One kind of reply block, as its owner declares it.

    *apply* is called at settling as ``apply(s, counter, turn, value, now)`` with
    the store's open transaction and the turn (:class:`poller.store.turns.Ending`),
    and returns why the block is refused, or "".  Kinds are applied in *rank*
    order; in a wake of a kind in *without_block*, *apply* is called with None
    when the reply has no valid block of this kind.
    """

    name: str
    parse: Callable[[list[str]], Any]
    apply: Callable[..., str]
    rank: int
    tools: str = Tools.LOOK  # full: honoured only on a full-tool turn
    without_block: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ReplyHook:
    """Something settling does after a reply, block or none: ``run(s, counter, turn,
    posted, now)``, at *rank* among the kinds' appliers."""

    name: str
    run: Callable[..., None]
    rank: int


@dataclass(frozen=True)
class Output:
    """A wake kind whose reply is output to record, not a post: ``settle(s, counter,
    turn, outcome, now)`` records it and returns the wake's final status."""

    wake_kind: str
    settle: Callable[..., str]


_KINDS: dict[str, Kind] = {}
_HOOKS: dict[str, ReplyHook] = {}
_OUTPUTS: dict[str, Output] = {}
_loaded = False


def register(kind: Kind) -> Kind:
    """Declare a kind of block (once per name: a second declaration replaces the first)."""
    _KINDS[kind.name] = kind
    return kind


def register_hook(hook: ReplyHook) -> ReplyHook:
    _HOOKS[hook.name] = hook
    return hook


def register_output(output: Output) -> Output:
    _OUTPUTS[output.wake_kind] = output
    return output


def output_for(wake_kind: str) -> Optional[Output]:
    """How a reply to a wake of *wake_kind* is recorded, when it is not a post."""
    _load()
    return _OUTPUTS.get(wake_kind)


def _load() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        from poller.cycle import organs  # (the organs import this module to register)

        organs.load()


def kinds() -> list[Kind]:
    """Every registered kind, in rank order."""
    _load()
    return sorted(_KINDS.values(), key=lambda k: (k.rank, k.name))


def steps() -> list[Kind | ReplyHook]:
    """The kinds and the hooks together, in the order settling runs them."""
    _load()
    return sorted([*_KINDS.values(), *_HOOKS.values()], key=lambda k: (k.rank, k.name))


@dataclass(frozen=True)
class HandoffBlock:
    direction: str  # to: context goes from this Mood to `mood`; from: from `mood` into this one
    mood: str
    about: str
    context: str
    for_agent: Optional[str] = None


@dataclass(frozen=True)
class Settings:
    changes: dict[str, str]  # key -> value as written (already validated)
    note: str = ""


@dataclass(frozen=True)
class BlockRefusal:
    block: str  # the kind's name
    reason: str


@dataclass(frozen=True)
class Parsed:
    """The reply without its blocks, the valid blocks' values by kind, the refusals.

    A kind's value reads as an attribute (``parsed.handoff``): None when the reply
    has no valid block of that kind.
    """

    text: str
    refused: tuple[BlockRefusal, ...] = ()
    found: tuple[str, ...] = field(default=())  # kinds of block seen, valid or not
    values: tuple[tuple[str, Any], ...] = ()

    def get(self, kind: str) -> Any:
        return dict(self.values).get(kind)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        _load()
        if name not in _KINDS:
            raise AttributeError(name)
        return self.get(name)


@dataclass
class _Block:
    kind: str
    body: list[str]
    closed: bool


def _split(reply: str, names: set[str]) -> tuple[list[str], list[_Block]]:
    """The reply's lines outside our blocks, and our blocks."""
    lines = reply.split("\n")
    kept: list[str] = []
    blocks: list[_Block] = []
    i = 0
    while i < len(lines):
        m = FENCE_RE.match(lines[i])
        if m is None:
            kept.append(lines[i])
            i += 1
            continue
        info = m.group("info").lower()
        end, depth = i + 1, 0
        while end < len(lines):
            inner = FENCE_RE.match(lines[end])
            if inner is not None and info in names:
                if inner.group("info"):
                    depth += 1  # a code fence inside the context
                elif depth:
                    depth -= 1
                else:
                    break
            elif inner is not None and not inner.group("info"):
                break
            end += 1
        if info in names:
            blocks.append(_Block(info, lines[i + 1:end], end < len(lines)))
        else:
            kept.extend(lines[i:end + 1])  # someone else's code block: plain text
        i = end + 1
    return kept, blocks


def parse(reply: str, *, tools: str) -> Parsed:
    """Take every registered kind's blocks out of *reply* and check each."""
    registered = kinds()
    kept, blocks = _split(reply, {k.name for k in registered})
    if not blocks:
        return Parsed(reply)
    remaining = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
    refused: list[BlockRefusal] = []
    found: dict[str, Any] = {}
    for kind in registered:
        mine = [b for b in blocks if b.kind == kind.name]
        if not mine:
            continue
        found[kind.name] = None
        if len(mine) > 1:
            refused.append(BlockRefusal(kind.name, f"{len(mine)} {kind.name} blocks in one reply; "
                                              "only one is allowed, so none of them was applied"))
            continue
        try:
            found[kind.name] = _check(kind, mine[0], tools)
        except Refuse as exc:
            refused.append(BlockRefusal(kind.name, str(exc)))
    return Parsed(remaining, tuple(refused), tuple(found),
                  tuple((k, v) for k, v in found.items() if v is not None))


def _check(kind: Kind, block: _Block, tools: str):
    if not block.closed:
        raise Refuse(f"the {block.kind} block has no closing ``` line")
    if kind.tools == Tools.FULL and tools != Tools.FULL:
        raise Refuse(f"a {block.kind} block is only honoured on a full-tool turn; "
                     "this turn was look-only")
    return kind.parse(block.body)


def pairs(lines: list[str], kind: str) -> list[tuple[str, str]]:
    out = []
    for raw in lines:
        if not raw.strip():
            continue
        m = LINE_RE.match(raw.strip())
        if m is None:
            raise Refuse(f"line {raw.strip()[:60]!r} in the {kind} block is not 'key: value'")
        out.append((m.group("key").lower(), m.group("value").strip()))
    return out


def handoff(body: list[str]) -> HandoffBlock:
    """A handoff block's lines: header, a ``---`` line, then the context."""
    sep = next((i for i, line in enumerate(body) if SEPARATOR_RE.match(line)), None)
    if sep is None:
        raise Refuse("the handoff block has no --- line between its header and the context")
    head: dict[str, str] = {}
    for key, value in pairs(body[:sep], "handoff"):
        if key not in HANDOFF_KEYS:
            raise Refuse(f"unknown line {key + ':'!r} in the handoff block "
                          "(expected to:, from:, about:, for:)")
        if key in head:
            raise Refuse(f"{key}: is given twice in the handoff block")
        head[key] = value
    if ("to" in head) == ("from" in head):
        raise Refuse("a handoff block needs exactly one of to: or from:")
    direction = "to" if "to" in head else "from"
    slug = head[direction].strip().lower()
    try:
        text.check_slug(slug)
    except errors.UserError as exc:
        raise Refuse(str(exc)) from None
    about = head.get("about", "").strip()
    if not about:
        raise Refuse("a handoff block needs about: (a few words on what it is about)")
    if len(about) > MAX_ABOUT_CHARS:
        raise Refuse(f"about: is {len(about)} characters; the limit is {MAX_ABOUT_CHARS}")
    for_agent = head.get("for", "").strip().lstrip("@") or None
    if for_agent is not None:
        try:
            text.check_handle(for_agent)
        except errors.UserError as exc:
            raise Refuse(f"for: {exc}") from None
    context = "\n".join(body[sep + 1:]).strip()
    if not context:
        raise Refuse("the handoff block has no context after its --- line")
    if len(context) > MAX_CONTEXT_CHARS:
        raise Refuse(f"the handoff context is {len(context):,} characters; "
                      f"the limit is {MAX_CONTEXT_CHARS:,}")
    return HandoffBlock(direction, slug, about, context, for_agent)


def settings_block(body: list[str]) -> Settings:
    """A settings block's ``key: value`` lines, checked as a whole."""
    changes: dict[str, str] = {}
    note = ""
    problems: list[str] = []
    for key, value in pairs(body, "settings"):
        if key == "note":
            note = value
            continue
        if key in changes:
            problems.append(f"{key} is given twice")
            continue
        changes[key] = value
        allowed = ", ".join(settings.AGENT_SETTABLE)
        if key not in settings.KEYS:
            problems.append(f"unknown setting {key!r} (a reply may set: {allowed})")
            continue
        if key not in settings.AGENT_SETTABLE:
            problems.append(f"{key} cannot be changed from a reply (a reply may set: {allowed})")
            continue
        try:
            settings.validate(key, value)
        except errors.InvalidSetting as exc:
            problems.append(str(exc))
    if not changes and not problems:
        problems.append("the settings block sets nothing")
    if len(note) > MAX_NOTE_CHARS:
        problems.append(f"note is {len(note)} characters; the limit is {MAX_NOTE_CHARS}")
    if problems:
        raise Refuse("; ".join(problems))
    return Settings(changes, note)


def keyed(body: list[str], kind: str, allowed: tuple[str, ...]) -> dict[str, str]:
    head: dict[str, str] = {}
    for key, value in pairs(body, kind):
        if key not in allowed:
            raise Refuse(f"unknown line {key + ':'!r} in the {kind} block (expected "
                          f"{', '.join(k + ':' for k in allowed)})")
        if key in head:
            raise Refuse(f"{key}: is given twice in the {kind} block")
        head[key] = value
    return head


# -- the core's own blocks -------------------------------------------------------------


def apply_settings(s, counter, turn: turns.Ending, block: Settings,
                   now: dt.datetime) -> str:
    """Append the block's rows for (this Mood, this agent), set by the agent itself.

    ``settings_block`` already validated every value with the rules of
    ``mood-poller set``; the rows go in with the rest of the settling.
    """
    turns.add_agent_settings(s, turn, block.changes, block.note, now)
    return ""


def apply_handoff(s, counter, turn: turns.Ending, h: HandoffBlock, now: dt.datetime) -> str:
    """Record a handoff and its event posts in both Moods; or the reason it is refused."""
    here = turns.mood_of(s, turn.mood_id)
    other = turns.mood_named(s, h.mood)
    if other is None:
        return f"there is no Mood {h.mood!r}"
    if other.id == here.id:
        return "a handoff must name another Mood, not this one"
    if other.archived:
        return f"the Mood {h.mood!r} is archived"
    for_agent = None
    if h.for_agent:
        for_agent = turns.participant_named(s, h.for_agent)
        if for_agent is None or for_agent.kind != "agent":
            return f"there is no agent {h.for_agent!r}"
    src, dst = (here, other) if h.direction == "to" else (other, here)
    handle = turns.record_handoff(s, counter, turn, src=src, dst=dst, for_agent=for_agent,
                                  about=h.about, context=h.context, now=now)
    log.info("%s handed context from %s to %s", handle, src.slug, dst.slug,
             extra={"action": "handoff", "wake_id": turn.id, "from": src.slug, "to": dst.slug})
    return ""


register(Kind("settings", settings_block, apply_settings, rank=40,
                            tools=Tools.FULL))
register(Kind("handoff", handoff, apply_handoff, rank=50))
