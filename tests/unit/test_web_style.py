"""The page's colours, read from its stylesheet: every button's words and every link stand
out from what is behind them by WCAG AA's 4.5:1, in the light scheme and the dark."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import poller.web

CSS = re.sub(r"/\*.*?\*/", "", (Path(poller.web.__file__).parent / "static" / "style.css")
             .read_text(), flags=re.S)  # comments out
AA = 4.5


def _declarations(block: str) -> dict[str, str]:
    return {name.strip(): value.strip()
            for name, value in re.findall(r"([-\w]+)\s*:\s*([^;{}]+)", block)}


def _rules(css: str) -> dict[str, dict[str, str]]:
    """Top-level rules (the media blocks left out), selector -> declarations."""
    flat = re.sub(r"@media[^{]*\{(?:[^{}]*\{[^{}]*\})*[^{}]*\}", "", css)
    rules: dict[str, dict[str, str]] = {}
    for selectors, block in re.findall(r"([^{}]+)\{([^{}]*)\}", flat):
        for selector in selectors.split(","):
            rules.setdefault(selector.strip(), {}).update(_declarations(block))
    return rules


def scheme(dark: bool) -> dict[str, str]:
    """The custom properties in force: :root's, then the dark media block's over them."""
    props = {k: v for k, v in _rules(CSS)[":root"].items() if k.startswith("--")}
    if dark:
        block = re.search(r"@media \(prefers-color-scheme: dark\)\s*\{\s*:root\s*\{([^}]*)\}",
                          CSS)
        assert block, "the stylesheet has a dark scheme"
        props.update(_declarations(block.group(1)))
    return props


def colour(value: str, props: dict[str, str]) -> tuple[int, int, int]:
    """A declaration's colour: the first var() or #hex in it, var() resolved."""
    while True:
        ref = re.search(r"var\((--[-\w]+)\)", value)
        if not ref:
            break
        value = props[ref.group(1)]
    hexa = re.search(r"#([0-9a-fA-F]{6}|[0-9a-fA-F]{3})\b", value)
    assert hexa, f"no colour in {value!r}"
    digits = hexa.group(1)
    if len(digits) == 3:
        digits = "".join(d * 2 for d in digits)
    return tuple(int(digits[i:i + 2], 16) for i in (0, 2, 4))


def luminance(rgb: tuple[int, int, int]) -> float:
    def channel(c: int) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = map(channel, rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_the_contrast_formula_matches_wcag_s_known_values():
    assert contrast((0, 0, 0), (255, 255, 255)) == pytest.approx(21)
    assert contrast((0x77, 0x77, 0x77), (255, 255, 255)) == pytest.approx(4.48, abs=0.01)


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
@pytest.mark.parametrize("button", ["button", "button.danger"])
def test_a_button_s_words_stand_out_from_its_colour(button, dark):
    rules, props = _rules(CSS), scheme(dark)
    own = {**rules["button"], **rules.get(button, {})}
    ratio = contrast(colour(own["color"], props), colour(own["background"], props))
    assert ratio >= AA, f"{button} ({'dark' if dark else 'light'}): {ratio:.2f}:1"


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
@pytest.mark.parametrize("ground", ["--bg", "--card", "--agent"])
def test_links_and_link_buttons_stand_out_from_every_ground(ground, dark):
    props = scheme(dark)
    ratio = contrast(colour("var(--accent)", props), colour(f"var({ground})", props))
    assert ratio >= AA, f"links on {ground} ({'dark' if dark else 'light'}): {ratio:.2f}:1"
