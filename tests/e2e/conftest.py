"""The real browser, for the tests of the page."""

from support.browser import browser  # noqa: F401  (a fixture)
