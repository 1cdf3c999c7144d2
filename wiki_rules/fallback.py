"""Built-in dial wording, used for any level the wiki cannot supply.

It matches the starting page shipped in ``memory-lane/dials.wikitext`` (a test
keeps the two in step), so a wiki that was never seeded and a freshly seeded
one tell agents the same thing.

``DialWords`` is the value the rest of the service consumes: the text for
each level of each dial and the name of where it came from (``wiki@<revid>``,
``cache@<revid>`` or ``fallback``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

DIALS = {
    "discretion": ("reserved", "normal", "chatty"),
    "verbosity": ("brief", "normal", "thorough"),
}

DISCRETION = {
    "reserved": (
        "Speak only if this Mood clearly needs something from you: a fact you hold, "
        "a mistake worth correcting, or a question nobody else can answer. "
        "Otherwise stay silent."
    ),
    "normal": (
        "Join in if you can add something useful that nobody has said yet. If the "
        "conversation is doing fine without you, stay silent."
    ),
    "chatty": (
        "You are welcome to join in with a thought, a question or a friendly word, as "
        "long as it adds to the conversation rather than repeating it. Stay silent "
        "only if you have nothing to add."
    ),
}

VERBOSITY = {
    "brief": "Keep your answer short: a sentence or two, no lists, no preamble.",
    "normal": "",  # no line at the normal level
    "thorough": (
        "Take the room you need: explain your reasoning, give examples, and cover "
        "the edge cases."
    ),
}

FALLBACK = {"discretion": DISCRETION, "verbosity": VERBOSITY}


@dataclass(frozen=True)
class DialWords:
    """The wording of every dial level, and its source."""

    discretion: dict[str, str] = field(default_factory=lambda: dict(DISCRETION))
    verbosity: dict[str, str] = field(default_factory=lambda: dict(VERBOSITY))
    source: str = "fallback"

    def consider_ask(self, level: str) -> str:
        return self.discretion.get(level) or DISCRETION.get(level, DISCRETION["normal"])

    def verbosity_line(self, level: str) -> str:
        """The verbosity line for *level*; empty means "no line"."""
        if level == "normal":
            return self.verbosity.get("normal", "")
        return self.verbosity.get(level) or VERBOSITY.get(level, "")


BUILT_IN = DialWords()
