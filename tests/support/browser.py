"""The real browser for the page's tests: Debian's chromium driven by Playwright (never a
browser Playwright downloads), and a page whose console errors are collected."""

from __future__ import annotations

import os
import re

import pytest

from support.machine import unavailable

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture
def browser():
    if not os.path.exists(CHROMIUM):
        unavailable("no /usr/bin/chromium (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("playwright is not installed (pip install playwright)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


class Watched:
    """A browser page whose console errors and uncaught exceptions are collected."""

    def __init__(self, context, shots):
        self.page = context.new_page()
        self.errors: list[str] = []
        self.shots = shots
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(self.shots / f"{name}.png"), full_page=True)

    def sign_in(self, url: str, token: str) -> None:
        """Sign in at the server *url* with *token*, as a person does from the link."""
        self.page.goto(f"{url}/signin#token={token}")
        self.page.click("button:text('Sign in')")
        self.page.wait_for_url(f"{url}/")


def contrast(fg: str, bg: str) -> float:
    """WCAG contrast of two computed colours, ``rgb(r, g, b)``."""
    def lum(css: str) -> float:
        def ch(c: float) -> float:
            c /= 255
            return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
        r, g, b = (float(x) for x in re.findall(r"[\d.]+", css)[:3])
        return 0.2126 * ch(r) + 0.7152 * ch(g) + 0.0722 * ch(b)

    hi, lo = sorted((lum(fg), lum(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)
