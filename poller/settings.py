"""Setting keys, their defaults and ranges, validation and slot resolution.

Settings are append-only rows ``(mood|*, agent|*, key, value, until, set_by,
note, at)``.  For each key the newest row of the most specific slot wins:
(mood, agent) > (mood, *) > (*, agent) > (*, *) > the default.  A
``listening`` row with an ``until`` in the past has lapsed and is ignored, so
"off until tonight" falls back to whatever was set before.  Everything here
is pure: rows in, values out.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

from poller import errors, text


@dataclass(frozen=True)
class Key:
    name: str
    default: Any
    parse: Callable[[str], Any]
    help: str


def _int_range(name: str, lo: int, hi: int, unit: str = "") -> Callable[[str], int]:
    def parse(raw: str) -> int:
        text = str(raw).strip().lower()
        if unit == "s" and text.endswith("s"):
            text = text[:-1]
        try:
            value = int(text)
        except ValueError:
            raise errors.InvalidSetting(f"{name} must be a whole number, got {raw!r}") from None
        if not lo <= value <= hi:
            raise errors.InvalidSetting(f"{name} must be between {lo} and {hi}, got {value}")
        return value

    parse.range = f"{lo}-{hi}" + (" seconds" if unit == "s" else "")  # for `set --help`
    return parse


def _number_range(name: str, lo: float, hi: float) -> Callable[[str], float]:
    def parse(raw: str) -> float:
        try:
            value = float(str(raw).strip())
        except ValueError:
            raise errors.InvalidSetting(f"{name} must be a number, got {raw!r}") from None
        if not lo <= value <= hi:  # (NaN fails this too)
            raise errors.InvalidSetting(f"{name} must be between {lo:g} and {hi:g}, got {raw!r}")
        return value

    parse.range = f"{lo:g} to {hi:g}"  # for `set --help`
    return parse


def _choice(name: str, choices: tuple[str, ...]) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        value = str(raw).strip().lower()
        if value not in choices:
            raise errors.InvalidSetting(f"{name} must be one of {', '.join(choices)}, got {raw!r}")
        return value

    parse.range = " | ".join(choices)  # for `set --help`
    return parse


def _zone(raw: str) -> str:
    """An IANA time zone name (``Europe/Berlin``), checked against the system's zone data."""
    import zoneinfo

    value = str(raw).strip()
    if value.upper() == "UTC":
        return "UTC"
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise errors.InvalidSetting(f"timezone must be an IANA time zone name such as "
                                    f"Europe/Berlin, got {raw!r}") from None
    return value


_zone.range = "an IANA time zone name"  # for `set --help`

RULES_CHARS = 2_000  # a Mood's rules: a short text, sent with every turn
PERSONA_CHARS = 6_000  # a model agent's persona: the start of its system prompt
LETTER_CHARS = 6_000  # a Mood's letter: the briefing of an agent's first turn there


def _text(name: str, limit: int) -> Callable[[str], str]:
    """A short text an operator writes: line breaks and tabs, no other control character."""

    def parse(raw: str) -> str:
        value = str(raw).replace("\r\n", "\n").replace("\r", "\n").strip()
        bad = next((c for c in value if c not in "\n\t" and (c < " " or c == "\x7f")), None)
        if bad is not None:
            raise errors.InvalidSetting(f"{name} may hold no control character but line breaks "
                                        f"and tabs (it holds U+{ord(bad):04X})")
        if len(value) > limit:
            raise errors.InvalidSetting(f"{name} is {len(value):,} characters; the limit is {limit:,}")
        return value

    parse.range = f"a text of up to {limit:,} characters"  # for `set --help`
    return parse


MODEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/\[\]-]{0,99}")
EFFORTS = ("low", "medium", "high", "xhigh", "max")  # Claude Code's --effort levels


def _model(raw: str) -> str:
    """A model name or alias, passed on a command line: never one that reads as an option."""
    value = str(raw).strip()
    if value and not MODEL_RE.fullmatch(value):
        raise errors.InvalidSetting(f"model must be a model name or alias such as sonnet or "
                                    f"claude-opus-4-1 (letters, digits and ._:@/[]-), got {raw!r}")
    return value


_model.range = "a model name or alias; empty: the agent's own"  # for `set --help`


def _effort(raw: str) -> str:
    value = str(raw).strip().lower()
    if value and value not in EFFORTS:
        raise errors.InvalidSetting(f"effort must be one of {', '.join(EFFORTS)} (or empty), "
                                    f"got {raw!r}")
    return value


def _tool_names(raw) -> str:
    """Tool names, comma or space separated, kept as one canonical comma-separated line."""
    names = [n for n in re.split(r"[\s,]+", str(raw or "").strip()) if n]
    for name in names:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,63}", name):
            raise errors.InvalidSetting(f"approve_tools must be tool names such as set_alarm, "
                                        f"comma separated; {name[:40]!r} is not one")
    return ",".join(dict.fromkeys(names))


_tool_names.range = "tool names, comma separated; empty: none"


_effort.range = " | ".join(EFFORTS) + "; empty: the agent's default"  # for `set --help`

WEEK_S = 7 * 24 * 3600

KEYS: dict[str, Key] = {
    k.name: k
    for k in (
        Key("listening", "on", _choice("listening", ("on", "mentions", "off")),
            "on: every trigger; mentions: only mentions; off: nothing (mentions are held)"),
        Key("consider_after", 10, _int_range("consider_after", 0, 3600, "s"),
            "seconds of settled chatter before a consider"),
        Key("idle_after", 3000, _int_range("idle_after", 0, WEEK_S, "s"),
            "seconds of silence before a quiet look (0: never)"),
        Key("considers_per_hour", 6, _int_range("considers_per_hour", 0, 60),
            "considers allowed per Mood and agent in any hour"),
        Key("calm_after", 3, _int_range("calm_after", 0, 100),
            "silent unprompted turns in a row after which a Mood's considers slow down, "
            "doubling their spacing with each further one up to 12 h (0: never)"),
        Key("catch_up_tokens", 10_000, _int_range("catch_up_tokens", 1_000, 24_000),
            "tokens of the Mood's history a wake carries word for word"),
        Key("discretion", "normal", _choice("discretion", ("reserved", "normal", "chatty")),
            "how readily the agent speaks unprompted"),
        Key("verbosity", "normal", _choice("verbosity", ("brief", "normal", "thorough")),
            "how long its answers should be"),
        Key("max_wakes_per_hour", 30, _int_range("max_wakes_per_hour", 0, 600),
            "wakes per agent in any hour, across all Moods"),
        Key("parallel_turns", 8, _int_range("parallel_turns", 1, 64),
            "turns one agent may have running at once"),
        Key("cooldown", 60, _int_range("cooldown", 0, 24 * 3600, "s"),
            "seconds after a turn completes before the next unprompted wake there"),
        Key("timezone", "UTC", _zone,
            "the time zone wakes show times in (an IANA name; the zone is named)"),
        Key("archive_after", 12 * 3600, _int_range("archive_after", 0, WEEK_S, "s"),
            "seconds an agent's kept session may sit unused before its next wake carries the "
            "full catch-up again; within it a wake carries only what is new (0: always in full)"),
        Key("rules", "", _text("rules", RULES_CHARS),
            "the Mood's rules, set by its operators: an instruction to every agent here "
            "(Claude Code: --append-system-prompt; others: in the wake's frame)"),
        Key("model", "", _model,
            "the model agents use here (Claude Code: --model, over the agent's own; command "
            "agents: MOOD_MODEL; HTTP agents: the request's model)"),
        Key("effort", "", _effort,
            "how hard agents think here (Claude Code: --effort; command agents: MOOD_EFFORT; "
            "HTTP agents: the request's effort)"),
        Key("letter", "", _text("letter", LETTER_CHARS),
            "the briefing an agent's first turn in the Mood starts with (empty: the kit's "
            "letter.md)"),
        Key("persona", "", _text("persona", PERSONA_CHARS),
            "who a model agent is, the start of its system prompt (a text, or the absolute "
            "path of a file read at each turn; empty: a short default that explains Moods)"),
        Key("session_tokens", 32_000, _int_range("session_tokens", 2_000, 1_000_000),
            "tokens a model agent's kept conversation here may reach before its older part "
            "is replaced by a summary (the next wake then carries the full catch-up)"),
        Key("max_tool_calls", 8, _int_range("max_tool_calls", 0, 64),
            "tool calls a model agent may make in one turn"),
        Key("initiative_speed", 1.0, _number_range("initiative_speed", 0.0, 10.0),
            "how fast the agent gains initiative while it has not spoken in a Mood: of several "
            "agents that could speak unasked at once, the one with the most takes the floor"),
        Key("max_usd_per_day", 0.0, _number_range("max_usd_per_day", 0.0, 100_000.0),
            "US dollars the agent may spend in the Mood a day, from midnight in the Mood's "
            "timezone (0: no limit); over it, mentions are held and unprompted wakes skipped"),
        Key("max_usd_per_day_all_moods", 0.0,
            _number_range("max_usd_per_day_all_moods", 0.0, 100_000.0),
            "US dollars the agent may spend a day in every Mood together (0: no limit); set it "
            "per agent; whichever budget runs out first holds the agent"),
        Key("heat", 0.0, _number_range("heat", -100.0, 100.0),
            "initiative added in this Mood (set it per Mood: e.g. the Mood's own project agent "
            "runs hot); one hour without speaking is worth 1 at speed 1"),
        Key("approval_timeout", 600, _int_range("approval_timeout", 1, 24 * 3600, "s"),
            "seconds a turn waits for a person to approve a tool it asked to use, before "
            "the request is denied"),
        Key("approve_tools", "", _tool_names,
            "acting tools a model agent may use only once a person approves (names, comma "
            "separated: e.g. set_alarm, handoff; empty: none)"),
        Key("greet_strangers", "off", _choice("greet_strangers", ("on", "off")),
            "on: a person with trust none who signs in is an arrival like anyone else (off: "
            "their coming wakes nobody, as their words don't)"),
    )
}

# Keys an agent may change from a ```settings block in its reply.
AGENT_SETTABLE = ("discretion", "verbosity", "idle_after", "consider_after",
                  "considers_per_hour", "catch_up_tokens", "listening")

SLOT_NAMES = {(True, True): "mood+agent", (True, False): "mood", (False, True): "agent",
              (False, False): "global"}


def validate(key: str, value: str, until: Optional[dt.datetime] = None) -> Any:
    """The parsed value of *key*, or InvalidSetting naming the problem."""
    spec = KEYS.get(key)
    if spec is None:
        raise errors.InvalidSetting(f"unknown setting {key!r} (known: {', '.join(KEYS)})")
    if until is not None and key != "listening":
        raise errors.InvalidSetting("--until applies only to listening")
    try:
        text.check_text(str(value), key)
    except errors.UserError as exc:
        raise errors.InvalidSetting(str(exc)) from None
    return spec.parse(value)


@dataclass(frozen=True)
class Row:
    """One settings row, as the resolver needs it."""

    id: int
    mood_id: Optional[int]
    agent_id: Optional[int]
    key: str
    value: str
    until: Optional[dt.datetime] = None
    at: Optional[dt.datetime] = None  # when it was set


@dataclass(frozen=True)
class Resolved:
    key: str
    value: Any
    slot: str  # mood+agent | mood | agent | global | default
    until: Optional[dt.datetime] = None
    row_id: Optional[int] = None
    since: Optional[dt.datetime] = None  # when this value took effect, where known


def resolve(rows: Iterable[Row], mood_id: Optional[int], agent_id: Optional[int],
            now: dt.datetime) -> dict[str, Resolved]:
    """Resolve every key for (mood_id, agent_id) from the rows that may apply."""
    best: dict[str, tuple[tuple[int, int], Row]] = {}
    lapsed: dict[str, dt.datetime] = {}  # the latest lapse of a row that applied, per key
    for row in rows:
        if row.key not in KEYS:
            continue
        if row.mood_id is not None and row.mood_id != mood_id:
            continue
        if row.agent_id is not None and row.agent_id != agent_id:
            continue
        if row.until is not None and row.until <= now:
            lapsed[row.key] = max(row.until, lapsed.get(row.key, row.until))
            continue
        rank = ((row.mood_id is not None) * 2 + (row.agent_id is not None), row.id)
        if row.key not in best or rank > best[row.key][0]:
            best[row.key] = (rank, row)
    out = {}
    for name, spec in KEYS.items():
        if name in best:
            row = best[name][1]
            slot = SLOT_NAMES[(row.mood_id is not None, row.agent_id is not None)]
            try:
                value = spec.parse(row.value)
            except errors.InvalidSetting:
                value, slot = spec.default, "default"  # a row written by an older version
            out[name] = Resolved(name, value, slot, row.until, row.id,
                                 _latest(row.at, lapsed.get(name)))
        else:
            out[name] = Resolved(name, spec.default, "default", since=lapsed.get(name))
    return out


def _latest(*moments: Optional[dt.datetime]) -> Optional[dt.datetime]:
    known = [m for m in moments if m is not None]
    return max(known) if known else None


def values(resolved: dict[str, Resolved]) -> dict[str, Any]:
    return {k: r.value for k, r in resolved.items()}
