"""The pictures, in a real browser at phone width in the dark: each agent's turns,
tokens and dollars a day over two weeks on the agents page, and a Mood's posts a day
on its page; drawn on the server (SVG, no script), each bar telling its day and value,
the bars standing out from the page (3:1, as for any graphic) and nothing wider than
the phone."""

from __future__ import annotations

import datetime as dt

from support import webserver
from support.browser import Watched, contrast
from support.history import turn_on
from support.webserver import T0


def test_the_agents_and_a_mood_drawn_day_by_day(browser, cli, tmp_path):
    cli("mood", "add", "lobby", "--title", "The lobby")
    cli("person", "add", "otto", "--trust", "full", "--operator")
    cli("agent", "add", "helper", "--command", "cat")
    cli("agent", "add", "quiet", "--command", "cat")
    token = cli("person", "token", "otto").out.strip()
    served = webserver.start(cli.db_url)  # its clock reads T0, 2031-05-06 09:00 UTC
    store = served.store
    day = dt.timedelta(days=1)
    turn_on(store, "helper", "lobby", T0 - 13 * day, 100, 0.5)
    for _ in range(3):
        turn_on(store, "helper", "lobby", T0 - 2 * day, 1000, 0.02)
    turn_on(store, "helper", "lobby", T0, 500, None)
    for at in ("2031-05-05T10:00Z", "2031-05-05T11:00Z", "2031-05-06T08:00Z"):
        cli("post", "lobby", "--as", "otto", "--at", at, "hello")
    try:
        otto = Watched(browser.new_context(viewport={"width": 390, "height": 844},
                                           color_scheme="dark"), tmp_path)
        otto.sign_in(served.url, token)
        page = otto.page
        page.goto(f"{served.url}/ops/agents")
        helper = page.locator("#days-helper")
        turns = helper.locator("svg.turns rect.bar")
        assert turns.count() == 14
        titles = turns.locator("title").all_text_contents()
        assert titles[0] == "2031-04-23: 1" and titles[11] == "2031-05-04: 3"
        assert titles[-1] == "2031-05-06: 1"
        heights = [float(turns.nth(i).get_attribute("height")) for i in range(14)]
        assert max(heights) == heights[11] and heights[1] == 0
        assert helper.locator("svg.tokens rect.bar title").nth(11).text_content() == \
            "2031-05-04: 3,000"
        assert helper.locator("svg.dollars rect.bar title").nth(11).text_content() == \
            "2031-05-04: $0.06"
        assert helper.locator("svg.dollars").get_attribute("aria-label") == (
            "helper's dollars a day over the last 14 days: $0.56 in all, most on "
            "2031-04-23 ($0.50)")
        assert helper.locator(".plot .muted").all_inner_texts() == [
            "turns a day, most 3", "tokens a day, most 3,000", "dollars a day, most $0.50"]
        quiet = page.locator("#days-quiet svg.turns")
        assert quiet.get_attribute("aria-label") == \
            "quiet's turns a day over the last 14 days: 0 in all"
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        for css in ("turns", "dollars"):
            fill = helper.locator(f"svg.{css} rect.bar").nth(11).evaluate(
                "r => getComputedStyle(r).fill")
            assert contrast(fill, background) >= 3, (css, fill, background)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        assert helper.locator("svg.turns").bounding_box()["width"] <= 390
        assert page.locator("script").count() == 0 or all(
            s.get_attribute("src") for s in page.locator("script").all())
        otto.shot("agents-pictures")

        page.goto(f"{served.url}/m/lobby")
        strip = page.locator("#activity svg rect.bar")
        assert strip.count() == 14
        assert strip.locator("title").all_text_contents()[-2:] == ["2031-05-05: 2",
                                                                 "2031-05-06: 1"]
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        otto.shot("mood-strip")
        assert otto.errors == []
    finally:
        served.stop()
