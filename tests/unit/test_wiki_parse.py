"""wiki_rules.parse: wikitext in, plain dial wording out (pure, no wiki needed)."""

from __future__ import annotations


from wiki_rules import fallback
from wiki_rules.parse import parse_dials, plain_text

import mwparserfromhell
from support.machine import REPO

STARTING_PAGE = REPO / "memory-lane" / "dials.wikitext"


def page(discretion: str = "", verbosity: str = "", extra: str = "") -> str:
    return f"Intro for editors.\n== discretion ==\n{discretion}\n== verbosity ==\n{verbosity}\n{extra}"


def text_of(wikitext: str, max_chars: int = 1200) -> str:
    return plain_text(mwparserfromhell.parse(wikitext), max_chars)[0]


def test_the_starting_page_says_what_the_built_in_wording_says():
    parsed = parse_dials(STARTING_PAGE.read_text(encoding="utf-8"))
    assert parsed.warnings == ()
    assert parsed.levels == fallback.FALLBACK
    words = parsed.words("wiki@1")
    assert words.verbosity_line("normal") == ""  # no line at normal
    assert words.source == "wiki@1"


def test_each_level_is_read_from_its_subsection():
    parsed = parse_dials(page(
        "commentary for editors, never sent\n=== reserved ===\nHush.\n=== normal ===\nMaybe.\n"
        "=== chatty ===\nTalk!",
        "=== brief ===\nShort.\n=== normal ===\nAs usual.\n=== thorough ===\nLong."))
    assert parsed.warnings == ()
    assert parsed.levels == {
        "discretion": {"reserved": "Hush.", "normal": "Maybe.", "chatty": "Talk!"},
        "verbosity": {"brief": "Short.", "normal": "As usual.", "thorough": "Long."},
    }
    words = parsed.words("wiki@7")
    assert words.consider_ask("chatty") == "Talk!"
    assert words.verbosity_line("normal") == "As usual."


def test_headings_are_matched_without_regard_to_case_or_markup():
    parsed = parse_dials("== Discretion ==\n=== '''Reserved''' ===\nHush.\n==  VERBOSITY  ==\n"
                         "=== Brief ===\nShort.")
    assert parsed.levels == {"discretion": {"reserved": "Hush."}, "verbosity": {"brief": "Short."}}


def test_markup_is_stripped_to_what_a_reader_sees():
    wikitext = (
        "Say '''little''' and ''kindly'', see [[Etiquette|the etiquette]] and [[Help]].\n"
        "A soft line break joins the paragraph.<!-- editors only -->\n"
        "[[Category:Moods]]{{Note|dropped}} __NOTOC__\n"
        "\n\n\n"
        "A new paragraph, [https://example.org our site], https://example.org/bare.\n"
        "* first point\n"
        "# second point\n"
        "Line one<br/>line two &amp; more<ref>a footnote</ref>"
    )
    assert text_of(wikitext) == (
        "Say little and kindly, see the etiquette and Help. A soft line break joins the paragraph.\n"
        "\n"
        "A new paragraph, our site, https://example.org/bare.\n"
        "- first point\n"
        "- second point\n"
        "Line one\nline two & more"
    )


def test_templates_are_left_out_and_reported():
    parsed = parse_dials(page("=== reserved ===\nHush {{Ask|someone}} please."))
    assert parsed.levels["discretion"]["reserved"] == "Hush please."
    assert "discretion/reserved: templates are not expanded and were left out" in parsed.warnings


def test_unknown_dials_and_levels_are_reported_and_ignored():
    parsed = parse_dials(page("=== reserved ===\nHush.\n=== loud ===\nShout.",
                              extra="== tone ==\n=== warm ===\nHello."))
    assert parsed.levels["discretion"] == {"reserved": "Hush."}
    assert "unknown level 'discretion/loud' ignored" in parsed.warnings
    assert "unknown dial section 'tone' ignored" in parsed.warnings


def test_a_missing_level_falls_back_to_the_built_in_wording_for_that_level_alone():
    parsed = parse_dials(page("=== reserved ===\nHush.\n=== chatty ===\nTalk!"))
    assert "level 'discretion/normal' missing; built-in wording used" in parsed.warnings
    words = parsed.words("wiki@3")
    assert words.consider_ask("reserved") == "Hush."
    assert words.consider_ask("normal") == fallback.DISCRETION["normal"]
    assert words.consider_ask("chatty") == "Talk!"


def test_a_missing_dial_falls_back_whole():
    parsed = parse_dials("== verbosity ==\n=== brief ===\nShort.")
    assert "dial 'discretion' missing; built-in wording used" in parsed.warnings
    assert parsed.words("x").discretion == fallback.DISCRETION


def test_an_empty_level_counts_as_missing():
    parsed = parse_dials(page("=== reserved ===\n<!-- to do -->\n=== normal ===\nMaybe."))
    assert "reserved" not in parsed.levels["discretion"]
    assert "level 'discretion/reserved' is empty; built-in wording used" in parsed.warnings
    assert parsed.words("x").consider_ask("reserved") == fallback.DISCRETION["reserved"]


def test_an_empty_normal_verbosity_means_no_line():
    parsed = parse_dials(page(verbosity="=== normal ===\n\n=== brief ===\nShort."))
    assert parsed.levels["verbosity"]["normal"] == ""
    assert not any("verbosity/normal" in w for w in parsed.warnings)
    assert parsed.words("x").verbosity_line("normal") == ""


def test_long_text_is_cut_at_a_word_and_reported():
    parsed = parse_dials(page("=== chatty ===\n" + "word " * 100), max_chars=60)
    text = parsed.levels["discretion"]["chatty"]
    assert len(text) <= 60
    assert text.endswith("word…")
    assert "discretion/chatty: text cut to 60 characters" in parsed.warnings


def test_a_dial_or_level_given_twice_keeps_the_first():
    parsed = parse_dials(page("=== reserved ===\nOne.\n=== reserved ===\nTwo.")
                         + "== discretion ==\n=== chatty ===\nThree.")
    assert parsed.levels["discretion"] == {"reserved": "One."}
    assert "level 'discretion/reserved' appears twice; the first is used" in parsed.warnings
    assert "dial 'discretion' appears twice; the first is used" in parsed.warnings


def test_bad_markup_does_not_break_the_parse():
    parsed = parse_dials(page("=== reserved ===\n'''Hush [[unclosed link {{unclosed template\n"
                              "<div>stray</span> ]] }}\n=== normal ===\nMaybe."))
    assert parsed.levels["discretion"]["normal"] == "Maybe."
    assert parsed.levels["discretion"]["reserved"]  # some text, whatever the parser made of it


def test_a_page_without_dial_sections_supplies_nothing():
    for wikitext in ("", "Just some prose.", "= Title =\nprose", "=== reserved ===\nHush."):
        parsed = parse_dials(wikitext)
        assert parsed.count == 0, wikitext
