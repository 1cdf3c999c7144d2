"""Turn the dials page's wikitext into the plain wording of each dial level.

Pure: text in, :class:`Parsed` out, no network and no clock.  The page holds
one ``== dial ==`` section per dial and one ``=== level ===`` subsection per
level; anything before the first dial section, and anything in a dial section
before its first level, is commentary for editors and is never sent.

Each level's text is stripped to plain text the way a reader of the rendered
page would see it: bold and links lose their markup, comments, categories and
templates (which we cannot expand) disappear, list items become ``- `` lines,
and paragraphs are kept apart while the soft line breaks inside a paragraph
are joined, because wikitext renders those as spaces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import mwparserfromhell
from mwparserfromhell import nodes
from mwparserfromhell.definitions import is_visible
from mwparserfromhell.wikicode import Wikicode

from wiki_rules import fallback

# Markers that survive stripping and are resolved when lines are assembled.
_ITEM = "\x02"  # starts a list item line
_BREAK = "\x03"  # <br>: a hard line break inside a paragraph
_HIDDEN_LINK = re.compile(r"^\s*(category|file|image)\s*:", re.IGNORECASE)
_MAGIC_WORD = re.compile(r"__[A-Z]+__")
_SPACES = re.compile(r"[ \t\u00a0]+")
# Tags whose contents a reader does not see inline (footnotes, scripts, styles).
_UNSEEN_TAGS = {"ref", "references", "script", "style", "noinclude", "templatestyles"}


@dataclass(frozen=True)
class Parsed:
    """What the page supplies: the levels it defines, and what was wrong with it.

    ``levels[dial][level]`` holds only the levels the page defines with usable
    text; :meth:`words` fills the rest from the built-in wording.
    """

    levels: dict[str, dict[str, str]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        """How many dial levels the page supplies."""
        return sum(len(v) for v in self.levels.values())

    def words(self, source: str) -> fallback.DialWords:
        """The full wording: the page's levels over the built-in ones."""
        merged = {dial: {**fallback.FALLBACK[dial], **self.levels.get(dial, {})}
                  for dial in fallback.DIALS}
        return fallback.DialWords(discretion=merged["discretion"],
                                  verbosity=merged["verbosity"], source=source)


def parse_dials(wikitext: str, max_chars: int = 1200) -> Parsed:
    """Read every known dial level from *wikitext*; report what was ignored."""
    code = mwparserfromhell.parse(wikitext)
    levels: dict[str, dict[str, str]] = {}
    warnings: list[str] = []
    for section in code.get_sections(levels=[2]):
        dial = _heading_name(section)
        if dial not in fallback.DIALS:
            warnings.append(f"unknown dial section {dial!r} ignored")
            continue
        if dial in levels:
            warnings.append(f"dial {dial!r} appears twice; the first is used")
            continue
        levels[dial] = _read_levels(dial, section, max_chars, warnings)
    for dial in fallback.DIALS:
        if dial not in levels:
            warnings.append(f"dial {dial!r} missing; built-in wording used")
    return Parsed(levels=levels, warnings=tuple(warnings))


def _read_levels(dial: str, section: Wikicode, max_chars: int,
                 warnings: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    seen: set[str] = set()
    for sub in section.get_sections(levels=[3]):
        level = _heading_name(sub)
        where = f"{dial}/{level}"
        if level not in fallback.DIALS[dial]:
            warnings.append(f"unknown level {where!r} ignored")
            continue
        if level in seen:
            warnings.append(f"level {where!r} appears twice; the first is used")
            continue
        seen.add(level)
        text, notes = plain_text(Wikicode(sub.nodes[1:]), max_chars)
        warnings.extend(f"{where}: {note}" for note in notes)
        if text or (dial == "verbosity" and level == "normal"):
            found[level] = text  # an empty normal verbosity means "no line"
        else:
            warnings.append(f"level {where!r} is empty; built-in wording used")
    for level in fallback.DIALS[dial]:
        if level not in seen:
            warnings.append(f"level '{dial}/{level}' missing; built-in wording used")
    return found


def _heading_name(section: Wikicode) -> str:
    heading = section.nodes[0]
    assert isinstance(heading, nodes.Heading)
    return " ".join(heading.title.strip_code().split()).lower()


def plain_text(code: Wikicode, max_chars: int) -> tuple[str, list[str]]:
    """Wikicode as the plain text a reader sees, capped at *max_chars*.

    Returns the text and notes about what was dropped or cut.
    """
    notes: list[str] = []
    raw = _MAGIC_WORD.sub("", _strip(code, notes))
    text = _assemble(raw)
    if len(text) > max_chars:
        text = _cap(text, max_chars)
        notes.append(f"text cut to {max_chars} characters")
    return text, sorted(set(notes))


def _strip(code: Wikicode, notes: list[str]) -> str:
    return "".join(_strip_node(node, notes) for node in code.nodes)


def _strip_node(node: nodes.Node, notes: list[str]) -> str:
    if isinstance(node, nodes.Text):
        return str(node)
    if isinstance(node, (nodes.Comment, nodes.Argument)):
        return ""
    if isinstance(node, nodes.Template):
        notes.append("templates are not expanded and were left out")
        return ""
    if isinstance(node, nodes.Heading):
        return "\n\n" + _strip(node.title, notes).strip() + "\n\n"
    if isinstance(node, nodes.Wikilink):
        if _HIDDEN_LINK.match(str(node.title)):
            return ""
        shown = node.text if node.text is not None else node.title
        return _strip(shown, notes).lstrip(":")
    if isinstance(node, nodes.ExternalLink):
        if node.brackets and node.title:
            return _strip(node.title, notes)
        return str(node.url)
    if isinstance(node, nodes.Tag):
        return _strip_tag(node, notes)
    stripped = node.__strip__(normalize=True, collapse=False)  # entities
    return stripped or ""


def _strip_tag(tag: nodes.Tag, notes: list[str]) -> str:
    name = str(tag.tag).strip().lower()
    if name in ("li", "dt") and tag.wiki_markup:
        return _ITEM
    if name == "dd" and tag.wiki_markup:
        return ""
    if name == "br":
        return _BREAK
    if name == "hr":
        return "\n\n"
    if name in ("nowiki", "pre") and tag.contents is not None:
        return str(tag.contents)
    if tag.contents is None or name in _UNSEEN_TAGS or not is_visible(name):
        return ""
    return _strip(tag.contents, notes)


def _assemble(raw: str) -> str:
    """Join soft-wrapped lines into paragraphs; keep list items and <br> breaks."""
    blocks: list[str] = []
    paragraph: list[str] = []

    def close() -> None:
        if paragraph:
            blocks.append(" ".join(paragraph))
            paragraph.clear()

    for line in raw.split("\n"):
        item = line.lstrip().startswith(_ITEM)
        line = _SPACES.sub(" ", line.replace(_ITEM, " ")).strip()
        if not line:
            close()
            if blocks and blocks[-1] != "":
                blocks.append("")
        elif item:
            close()
            blocks.append("- " + line)
        else:
            paragraph.append(line)
    close()
    text = "\n".join(blocks).strip("\n")
    text = re.sub(r" ?" + _BREAK + r" ?", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _cap(text: str, max_chars: int) -> str:
    """Cut at a word boundary and mark the cut with an ellipsis."""
    if max_chars <= 1:
        return text[:max_chars]
    cut = text[: max_chars - 1]
    space = cut.rfind(" ")
    if space > max_chars // 2:
        cut = cut[:space]
    return cut.rstrip() + "…"
