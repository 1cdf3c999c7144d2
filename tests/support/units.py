"""Reading systemd unit files in tests: INI sections, with repeated keys kept."""

from __future__ import annotations

import configparser


def parse(text: str) -> tuple[configparser.RawConfigParser, dict[str, list[str]]]:
    """The unit as INI, and every ``Section.Key`` with its values in order (keys repeat)."""
    parser = configparser.RawConfigParser(strict=False, delimiters=("=",),
                                          comment_prefixes=("#", ";"), interpolation=None)
    parser.optionxform = str
    parser.read_string(text)
    multi: dict[str, list[str]] = {}
    section = ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]")
        elif line and not line.startswith(("#", ";")):
            key, _, value = line.partition("=")
            multi.setdefault(f"{section}.{key}", []).append(value)
    return parser, multi
