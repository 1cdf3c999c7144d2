"""The web page in a real headless browser (Debian's chromium, driven by Playwright)
against the real `mood-poller serve --with-poller`: a person signs in with a token,
opens a Mood, mentions an agent and sees its reply arrive without reloading; an
operator opens the wake and reads the text the agent was shown.  Every page is
screenshotted under the test's tmp dir and must log no console error."""

from __future__ import annotations

import os
import re
import shutil

import pytest

from support import webserver
from support.agents import agent_command, open_gate, wakes_seen
from support.browser import Watched, contrast
from support.waiting import wait_for


@pytest.fixture
def site(cli, tmp_path):
    cli("mood", "add", "lobby", "--title", "The lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("person", "add", "otto", "--trust", "full", "--operator")
    gate = tmp_path / "gate"  # the agent stays at work until the test opens it
    cli("agent", "add", "helper", "--command", agent_command(tmp_path, "gate", str(gate)))
    # Opening the Mood is an arrival; reserved discretion lets the mention be the only wake.
    cli("set", "discretion", "reserved", "--mood", "lobby")
    tokens = {h: cli("person", "token", h).out.strip() for h in ("ada", "otto")}
    served = webserver.serve_process(cli.db_url, tmp_path, "--with-poller")
    import httpx

    wait_for(lambda: httpx.get(served.url + "/healthz").status_code == 200,
             what="the poller's first cycle")
    yield served, tokens, gate
    open_gate(gate)
    assert served.stop() == 0, served.log.read_text()


def in_the_lobby(browser, cli, served, tmp_path) -> Watched:
    """Once the served poller has run its first cycle: ada signed in, on the lobby's live page."""
    import httpx

    token = cli("person", "token", "ada").out.strip()
    wait_for(lambda: httpx.get(served.url + "/healthz").status_code == 200,
             what="the poller's first cycle")
    watched = Watched(browser.new_context(), tmp_path)
    page = watched.page
    page.goto(f"{served.url}/signin#token={token}")
    page.click("button:text('Sign in')")
    page.wait_for_url(f"{served.url}/")
    page.goto(f"{served.url}/m/lobby")
    page.wait_for_selector("#mood[data-live='1']")
    return watched


def test_a_person_talks_to_an_agent_and_an_operator_reads_the_wake(browser, site, tmp_path):
    served, tokens, gate = site
    shots = tmp_path / "screenshots"
    shots.mkdir()

    person = Watched(browser.new_context(viewport={"width": 1100, "height": 800}), shots)
    page = person.page
    page.goto(f"{served.url}/m/lobby")  # not signed in: sent to sign in first
    page.wait_for_selector("#signin")
    assert page.url == f"{served.url}/signin?next=/m/lobby"
    person.shot("signin")
    page.goto(f"{served.url}/signin#token={tokens['ada']}")  # the link `demo --serve` prints
    page.wait_for_selector("#from-link:not([hidden])")
    assert page.url == f"{served.url}/signin"  # the link alone signs nobody in
    page.click("button:text('Sign in')")
    page.wait_for_url(f"{served.url}/")
    assert "#token" not in page.url and tokens["ada"] not in page.content()
    person.shot("moods")
    page.click("text=The lobby")
    page.wait_for_selector("#mood[data-live='1']")  # the event stream is open
    page.evaluate("window.sameDocument = true")  # gone if the page reloads
    page.fill("#text", "hello @helper, <b>what's</b> new?")
    page.click("button:text('Post')")
    from playwright.sync_api import expect

    # The page's CSP allows no eval, so waits use locators, never JavaScript strings.
    expect(page.locator("#working")).to_have_text("helper is at work\u2026", timeout=120_000)
    person.shot("mood-at-work")
    open_gate(gate)
    reply = page.wait_for_selector(".post.agent .text", timeout=120_000)
    assert reply.inner_text() == "done when let go"
    assert page.evaluate("window.sameDocument") is True
    mine = page.locator(".post.person .text").last.inner_text()
    assert mine == "hello @helper, <b>what's</b> new?"  # shown as typed, not as markup
    assert page.locator(".post.agent .badge").first.inner_text().lower() == "agent"
    expect(page.locator("#working")).to_have_text("", timeout=120_000)
    person.shot("mood")
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    person.shot("mood-phone")

    operator = Watched(browser.new_context(color_scheme="dark"), shots)
    op = operator.page
    op.goto(f"{served.url}/signin#token={tokens['otto']}")
    op.click("button:text('Sign in')")
    op.wait_for_url(f"{served.url}/")
    op.click("text=Agents")
    op.wait_for_selector("td:text('helper')")
    operator.shot("agents")
    op.click("text=Wakes")
    operator.shot("wakes")
    op.click("table a")  # the newest wake
    shown = op.inner_text("#wake-text")
    told = wakes_seen(tmp_path)
    assert len(told) == 1
    assert shown.strip() == told[0]["text"].strip()
    assert "hello @helper, <b>what's</b> new?" in shown
    operator.shot("wake")
    op.click("text=why helper in lobby")
    op.wait_for_selector("#answer")
    assert "woke" in op.inner_text("#answer")
    operator.shot("why")
    op.click("text=Dials")
    assert "Source:" in op.inner_text("main")
    operator.shot("dials")

    assert person.errors == [] and operator.errors == []
    assert {p.name for p in shots.iterdir()} == {
        "signin.png", "moods.png", "mood-at-work.png", "mood.png", "mood-phone.png",
        "agents.png", "wakes.png", "wake.png",
        "why.png", "dials.png"}
    keep = os.environ.get("KEEP_SCREENSHOTS")
    if keep:  # a person's look at the pages: KEEP_SCREENSHOTS=DIR
        shutil.copytree(shots, keep, dirs_exist_ok=True)


def test_the_mood_page_shows_what_a_claude_code_turn_is_doing(browser, cli, tmp_path):
    """A Claude Code turn's progress beside "… is at work", live, and gone when it ends."""
    from playwright.sync_api import expect

    from support.fakes import write_claude

    bindir = tmp_path / "bin"
    write_claude(bindir, "work", reply="All read.")
    cli("mood", "add", "lobby", "--title", "The lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("set", "discretion", "reserved", "--mood", "lobby")  # opening the Mood wakes nobody
    cli("agent", "add", "claude", "--claude-code", "--claude-bin", str(bindir / "claude"),
        "--session-dir", str(tmp_path / "sessions"))
    served = webserver.serve_process(cli.db_url, tmp_path, "--with-poller")
    try:
        watched = in_the_lobby(browser, cli, served, tmp_path)
        page = watched.page
        page.fill("#text", "@claude please read the notes")
        page.click("button:text('Post')")
        expect(page.locator("#working")).to_have_text(
            "claude is at work\u2026 (claude: using Read on notes.md)", timeout=120_000)
        (bindir / "go-1").touch()
        expect(page.locator("#working")).to_have_text(
            "claude is at work\u2026 (claude: using Bash)", timeout=120_000)
        (bindir / "go-2").touch()
        expect(page.locator("#working")).to_have_text("", timeout=120_000)
        assert page.locator(".post.agent .text").last.inner_text() == "All read."
        assert "using" not in page.inner_text("#posts")  # nothing of it was posted
        assert watched.errors == []
    finally:
        for name in ("go-1", "go-2"):
            (bindir / name).touch()
        assert served.stop() == 0, served.log.read_text()


def test_a_model_agent_answers_on_the_page_with_its_progress_shown(browser, cli, tmp_path):
    """A person asks a language model agent on the Mood page: "thinking…" while it works,
    its answer when it is done (a loopback OpenAI-compatible server, 3 s a request)."""
    pytest.importorskip("pydantic_ai", reason="the models extra is part of the test extras")
    from playwright.sync_api import expect

    from support.llmserver import Call, OpenAIServer, Say

    server = OpenAIServer([Call((("read_history", {}),)), Say("The build is green again.")],
                          think=3.0)
    cli("mood", "add", "lobby", "--title", "The lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("set", "discretion", "reserved", "--mood", "lobby")  # opening the Mood wakes nobody
    cli("agent", "add", "sage", "--model", "openai:test-model", "--base-url", server.base_url,
        "--timeout", "60")
    served = webserver.serve_process(cli.db_url, tmp_path, "--with-poller")
    try:
        watched = in_the_lobby(browser, cli, served, tmp_path)
        page = watched.page
        page.fill("#text", "@sage is the build fixed?")
        page.click("button:text('Post')")
        expect(page.locator("#working")).to_have_text(
            "sage is at work\u2026 (sage: thinking\u2026)", timeout=120_000)
        expect(page.locator(".post.agent .text").last).to_have_text("The build is green again.",
                                                                    timeout=120_000)
        expect(page.locator("#working")).to_have_text("", timeout=120_000)
        assert len(server.requests) == 2  # the tool's result went back before the answer
        assert watched.errors == []
    finally:
        server.close()
        assert served.stop() == 0, served.log.read_text()


def test_a_person_searches_and_lands_on_the_post_in_its_mood(browser, cli, tmp_path):
    """The search box in the bar: the matched words marked, what people wrote shown as the
    text it is, a filter by Mood, and a result that opens its Mood at the post, however
    far back it is."""
    from playwright.sync_api import expect

    cli("mood", "add", "lobby", "--title", "The lobby")
    cli("mood", "add", "attic", "--title", "The attic")
    cli("person", "add", "ada", "--trust", "full")
    token = cli("person", "token", "ada").out.strip()

    def post(mood: str, text: str, at: str) -> int:
        return int(cli("post", mood, "--as", "ada", "--at", at, text).out)

    old = post("lobby", "meet me at the <b>harbour</b>, the harbour's north side",
               "2031-05-01T09:00")
    up = post("attic", "the harbour map is up here", "2031-05-01T10:00")
    chatter = "\n".join(f'{{"text": "filler {i}", "at": "2031-05-02T09:00:00Z"}}'
                        for i in range(150))
    cli("post", "lobby", "--as", "ada", "--stdin-jsonl", input=chatter)  # the old post is far back
    served = webserver.serve_process(cli.db_url, tmp_path)
    shots = tmp_path / "screenshots"
    shots.mkdir()
    try:
        watched = Watched(browser.new_context(viewport={"width": 1100, "height": 800}), shots)
        page = watched.page
        page.goto(f"{served.url}/signin#token={token}")
        page.click("button:text('Sign in')")
        page.wait_for_url(f"{served.url}/")
        page.fill("#bar-q", "Harbour")
        page.press("#bar-q", "Enter")
        page.wait_for_selector("#hits")
        hits = page.locator("#hits .hit")
        expect(hits).to_have_count(2)
        first = hits.nth(0)  # the word twice, in the lobby
        assert first.locator("a").get_attribute("href") == f"/m/lobby?before={old + 1}#post-{old}"
        assert first.locator(".snippet").inner_text() == (
            "meet me at the <b>harbour</b>, the harbour's north side")  # as written, not markup
        assert first.locator("mark").all_inner_texts() == ["harbour", "harbour"]
        assert first.locator("b").count() == 0
        watched.shot("search")
        page.select_option("#search-mood", "attic")
        page.click("#search button")
        page.wait_for_url("**/search?*mood=attic*")
        expect(hits).to_have_count(1)
        assert hits.nth(0).locator("a").get_attribute("href").endswith(f"#post-{up}")
        page.go_back()
        page.locator("#hits .hit a").first.click()
        page.wait_for_url(f"{served.url}/m/lobby?before={old + 1}#post-{old}")
        target = page.locator(f"#post-{old}")
        expect(target).to_be_in_viewport()
        assert target.locator(".text").inner_text() == (
            "meet me at the <b>harbour</b>, the harbour's north side")
        assert page.locator("#posts .post").count() == 1  # the posts up to it: only it
        watched.shot("search-landed")
        page.set_viewport_size({"width": 390, "height": 844})
        page.goto(f"{served.url}/search?q=harbour")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        watched.shot("search-phone")
        assert watched.errors == []
    finally:
        assert served.stop() == 0, served.log.read_text()


def test_looking_at_a_mood_is_no_sign_in_and_i_m_here_is_one(browser, site, cli, tmp_path):
    import sqlalchemy as sa

    def signins() -> int:
        engine = sa.create_engine(cli.db_url)
        try:
            with engine.connect() as c:
                return c.exec_driver_sql("SELECT count(*) FROM signins").scalar()
        finally:
            engine.dispose()

    served, tokens, _ = site
    person = Watched(browser.new_context(), tmp_path)
    page = person.page
    page.goto(f"{served.url}/signin#token={tokens['ada']}")
    page.click("button:text('Sign in')")
    page.wait_for_url(f"{served.url}/")
    for _ in range(2):
        page.goto(f"{served.url}/m/lobby")
        page.wait_for_selector("#mood[data-live='1']")
    assert signins() == 0  # browsing: nobody is woken, nothing is spent
    page.click("#here button")
    page.wait_for_selector("#mood[data-live='1']")
    wait_for(lambda: signins() == 1, what="the sign-in")
    assert person.errors == []


def test_an_agent_s_markdown_reply_reads_the_same_live_and_on_reload(browser, cli, tmp_path):
    """A model-like reply (bold, a table, a long fenced code block, a link, raw HTML, post
    references) rendered when it arrives live and, identically, after a reload; the code
    scrolls sideways at phone width, and a post reference jumps to the post, however far
    back it is."""
    from playwright.sync_api import expect

    cli("mood", "add", "lobby", "--title", "The lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("set", "discretion", "reserved", "--mood", "lobby")
    old = int(cli("post", "lobby", "--as", "ada", "--at", "2031-05-01T09:00", "the old plan").out)
    chatter = "\n".join(f'{{"text": "filler {i}", "at": "2031-05-02T09:00:00Z"}}'
                        for i in range(120))
    cli("post", "lobby", "--as", "ada", "--stdin-jsonl", input=chatter)  # the plan is far back
    reply = tmp_path / "reply.md"
    cli("agent", "add", "helper", "--command", agent_command(tmp_path, "file", str(reply)))
    served = webserver.serve_process(cli.db_url, tmp_path, "--with-poller")
    try:
        watched = in_the_lobby(browser, cli, served, tmp_path)
        page = watched.page
        assert page.locator(f"#post-{old}").count() == 0  # not on the latest page
        page.fill("#text", "@helper how did the **build** go?")
        page.click("button:text('Post')")
        mine = page.locator(".post.person").last
        expect(mine.locator(".text strong")).to_have_text("build")
        asked = int(mine.get_attribute("data-id"))
        reply.write_text(
            f"**Green.** As #p-{asked} asked, and per #p-{old}:\n\n"
            "| step | state |\n|------|-------|\n| build | green |\n\n"
            "```sh\nmake check " + "--verbose " * 40 + "\n```\n\n"
            "docs: https://example.org/build <script>window.bad = 1</script> "
            "<img src=x onerror=\"window.bad = 2\"> [x](javascript:window.bad=3)")
        agent = page.locator(".post.agent").last
        expect(agent.locator("td").nth(1)).to_have_text("green", timeout=120_000)
        live = agent.evaluate("li => li.outerHTML")
        assert agent.locator(".text strong").first.inner_text() == "Green."
        assert agent.locator("a[href='https://example.org/build']").count() == 1
        assert agent.locator("script, img, [onerror]").count() == 0
        assert "<script>window.bad = 1</script>" in agent.locator(".text").inner_text()
        assert page.evaluate("window.bad === undefined")
        watched.shot("markdown-live")

        page.reload()
        page.wait_for_selector("#mood[data-live='1']")
        again = page.locator(".post.agent").last
        assert again.evaluate("li => li.outerHTML") == live  # the one rendering, both ways

        page.set_viewport_size({"width": 390, "height": 844})
        code = again.locator("pre")
        assert code.evaluate("pre => pre.scrollWidth > pre.clientWidth")  # it scrolls...
        assert code.evaluate("pre => getComputedStyle(pre).overflowX") == "auto"
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # ...alone
        watched.shot("markdown-phone")

        page.click(f"#post-{again.get_attribute('data-id')} a:text-is('#p-{asked}')")
        page.wait_for_url(f"**/m/lobby#post-{asked}")
        expect(page.locator(f"#post-{asked}")).to_be_in_viewport()
        page.click(f".post.agent a:text-is('#p-{old}')")  # further back than the page shows
        page.wait_for_url(f"{served.url}/m/lobby?before={old + 1}#post-{old}")
        expect(page.locator(f"#post-{old}")).to_be_in_viewport()
        assert page.locator(f"#post-{old} .text").inner_text() == "the old plan"
        assert watched.errors == []
    finally:
        assert served.stop() == 0, served.log.read_text()


def test_the_agents_page_at_phone_width_in_the_dark(browser, cli, tmp_path):
    """At 390 px: every column of the agents table is there (the table scrolls sideways in
    its box, the page does not), each date on one line; money as $0.00; the buttons'
    words readable in the dark scheme (4.5:1, as Chromium computes the colours); the
    dials page's no-wiki line a note, not an alarm; a missing page names no command."""
    cli("mood", "add", "lobby", "--title", "The lobby")
    cli("person", "add", "otto", "--trust", "full", "--operator")
    cli("agent", "add", "helper", "--command", agent_command(tmp_path, "reply"))
    cli("tick")
    cli("post", "lobby", "--as", "otto", "@helper status?")
    cli("tick", "--wait")
    token = cli("person", "token", "otto").out.strip()
    served = webserver.serve_process(cli.db_url, tmp_path)
    try:
        watched = Watched(browser.new_context(viewport={"width": 390, "height": 844},
                                              color_scheme="dark"), tmp_path)
        page = watched.page
        page.goto(f"{served.url}/signin#token={token}")
        page.click("button:text('Sign in')")
        page.wait_for_url(f"{served.url}/")
        page.goto(f"{served.url}/ops/agents")
        page.wait_for_selector("td:text('helper')")
        heads = page.locator("table th")
        assert heads.count() == 11
        for i in range(heads.count()):
            assert heads.nth(i).bounding_box()["width"] > 0  # no column hidden
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        box = page.locator(".scroll")
        assert box.evaluate("b => b.scrollWidth > b.clientWidth")  # it scrolls, in its box
        dates = page.locator("table td time")
        assert dates.count() >= 2  # the last turn's and the latest decision's
        for i in range(dates.count()):
            assert dates.nth(i).evaluate("t => t.getClientRects().length") == 1, \
                dates.nth(i).inner_text()
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", dates.nth(i).inner_text())
        spent = page.locator("table tbody tr").first.locator("td").last.inner_text()
        assert re.fullmatch(r"\$\d+\.\d\d|<\$0\.01", spent), spent
        watched.shot("agents-phone-dark")
        for button in ("#scram button", "form.search button"):
            fg, bg = page.locator(button).evaluate(
                "b => [getComputedStyle(b).color, getComputedStyle(b).backgroundColor]")
            assert contrast(fg, bg) >= 4.5, (button, fg, bg)

        page.goto(f"{served.url}/ops/dials")
        note = page.locator("#dials-note")
        assert "no wiki configured" in note.inner_text()
        assert note.evaluate("n => getComputedStyle(n).fontWeight") == "400"
        assert page.locator(".alarm").count() == 0
        page.goto(f"{served.url}/m/nowhere")
        shown = page.inner_text("#refusal")
        assert "no Mood 'nowhere'" in shown and "mood-poller" not in shown
        assert watched.errors == [] or all("404" in e for e in watched.errors), watched.errors
    finally:
        assert served.stop() == 0, served.log.read_text()


def test_how_long_ago_stays_true_while_the_page_is_open(browser, site, cli, tmp_path):
    served, tokens, _ = site
    cli("post", "lobby", "--as", "ada", "a note for later")
    person = Watched(browser.new_context(), tmp_path)
    page = person.page
    page.clock.install()  # the page's own clock, moved on by the test
    page.goto(f"{served.url}/signin#token={tokens['ada']}")
    page.click("button:text('Sign in')")
    page.wait_for_url(f"{served.url}/")
    page.goto(f"{served.url}/m/lobby")
    page.wait_for_selector("#mood[data-live='1']")
    note = page.locator("li", has_text="a note for later").locator(".ago")
    assert note.inner_text() == "(just now)"
    page.clock.fast_forward("03:05")
    assert note.inner_text() == "(3 min ago)"
    page.clock.fast_forward("02:00:00")
    assert note.inner_text() == "(2 h ago)"
    assert person.errors == []
