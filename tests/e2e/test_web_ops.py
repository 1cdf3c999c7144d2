"""An operator's work from the page, in a real browser: a Mood created and its settings
turned, a person added with a token minted (shown once) and revoked, an agent of each
waker kind added, changed and removed, a stop lifted.  Every form is CSRF-checked and
for operators only; what the command line refuses the page refuses, in its words."""

from __future__ import annotations

import re

from support import webserver
from support.browser import Watched
from support.webserver import T0


def refusal(page) -> str:
    return page.inner_text("#refusal")


def submit(page, button: str) -> str:
    """Press *button* and wait for the page the form leads to: the line saying what was done."""
    with page.expect_navigation():
        page.click(button)
    return page.inner_text("#done") if page.locator("#done").count() else ""


def test_an_operator_sets_up_moods_people_and_agents_from_the_page(browser, cli, tmp_path):
    from playwright.sync_api import expect

    from poller import observe
    from poller.store import access
    from poller.store import ops as store_ops

    cli("mood", "add", "lobby", "--title", "The lobby")
    cli("person", "add", "otto", "--trust", "full", "--operator")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "helper", "--command", "cat")
    tokens = {h: cli("person", "token", h).out.strip() for h in ("otto", "ada")}
    served = webserver.start(cli.db_url)
    store = served.store
    shots = tmp_path / "shots"
    shots.mkdir()
    expected = []  # the refusals this test asks for: their status shows in the console
    try:
        otto = Watched(browser.new_context(viewport={"width": 1100, "height": 900}), shots)
        otto.sign_in(served.url, tokens["otto"])
        page = otto.page

        # A Mood, and its settings.
        page.click("nav a:text('Settings')")
        page.fill("#add-mood [name=slug]", "attic")
        page.fill("#add-mood [name=title]", "The attic")
        assert submit(page, "#add-mood button") == "added Mood attic"
        assert page.url.startswith(f"{served.url}/ops/moods/attic?")
        assert store.mood("attic").title == "The attic"
        page.select_option("#v-discretion", "chatty")
        said = submit(page, "#setting-discretion button")
        assert store.resolved(T0, mood="attic")["discretion"].value == "chatty"
        expect(page.locator("#setting-discretion .value")).to_have_text("chatty")
        page.select_option("#v-listening", "mentions")
        page.fill("#until-listening", "2031-05-07T09:00Z")
        said = submit(page, "#setting-listening button")
        listening = store.resolved(T0, mood="attic")["listening"]
        assert (listening.value, listening.until.isoformat()) == ("mentions",
                                                                  "2031-05-07T09:00:00+00:00")
        assert "until 2031-05-07 09:00 UTC" in said
        otto.shot("mood-settings")
        page.fill("#v-considers_per_hour", "-5")
        page.click("#setting-considers_per_hour button")
        assert refusal(page) == "considers_per_hour must be between 0 and 60, got -5"
        expected.append(400)
        page.goto(f"{served.url}/ops/moods")
        page.fill("#add-mood [name=slug]", "attic")
        page.click("#add-mood button")
        assert refusal(page).startswith("Mood 'attic' already exists")
        expected.append(409)

        # A person, their token shown once, then revoked.
        page.goto(f"{served.url}/ops/people")
        page.fill("#add-person [name=handle]", "bea")
        page.select_option("#add-person [name=trust]", "full")
        page.check("#add-person [name=operator]")
        said = submit(page, "#add-person button")
        assert said == "added person bea (trust full, operator)"
        page.click("#person-bea button.mint")
        token = page.inner_text("#token").strip()
        assert token.startswith("mpt_")
        who = access.identify(store, token)
        assert (who.handle, who.trust, who.operator) == ("bea", "full", True)
        otto.shot("token")
        page.goto(f"{served.url}/ops/people")
        assert token not in page.content()  # shown once
        page.select_option("#trust-bea", "look")
        page.uncheck("#person-bea [name=operator]")
        said = submit(page, "#person-bea form.inline button:text('Save')")
        assert said == "bea now has trust look and is not an operator"
        said = submit(page, "#person-bea button.revoke")
        assert said == "revoked 1 token(s) of bea"
        assert access.identify(store, token) is None

        # An agent of each waker kind.
        def add(kind: str, handle: str, **values) -> str:
            page.goto(f"{served.url}/ops/agents")
            page.click(f"#add-{kind} summary")
            form = page.locator(f"#add-{kind} form")
            form.locator("[name=handle]").fill(handle)
            for name, value in values.items():
                form.locator(f"[name={name}]").fill(value)
            return submit(page, f"#add-{kind} form button")

        said = add("command", "echo", command="/no/such/binary --flag")
        assert said == "added agent echo (command)"
        assert "/no/such/binary is not an executable file on this machine" in \
            page.inner_text("main .note")
        assert add("url", "hook", url="http://127.0.0.1:9/hook",
                   headers="Authorization:Bearer abcdefghijklmnop1234") == ""
        assert "the value looks like a literal secret" in refusal(page)
        expected.append(400)
        assert add("url", "hook", url="http://127.0.0.1:9/hook",
                   headers="Authorization:Bearer ${HOOK_TOKEN}") == "added agent hook (url)"
        assert add("claude-code", "claude", session_dir=str(tmp_path / "sessions"),
                   permission_mode="plan") == "added agent claude (claude-code)"
        assert add("model", "sage", model="openai:gpt-4o-mini",
                   base_url="http://127.0.0.1:9/v1") == "added agent sage (model)"
        kinds = {h: store.agent(h) for h in ("echo", "hook", "claude", "sage")}
        assert {h: a.waker for h, a in kinds.items()} == {
            "echo": "command", "hook": "url", "claude": "claude-code", "sage": "model"}
        assert kinds["hook"].options["headers"] == {"Authorization": "Bearer ${HOOK_TOKEN}"}
        assert kinds["claude"].options["permission_mode"] == "plan"
        assert kinds["sage"].options["model"] == "openai:gpt-4o-mini"
        otto.shot("agents-added")

        page.goto(f"{served.url}/ops/agents")
        page.click("table a[href='/ops/agents/echo']")
        page.fill("#edit-agent [name=timeout]", "30")
        page.fill("#edit-agent [name=command]", "cat")
        said = submit(page, "#edit-agent button")
        assert said == ("changed agent echo: command: /no/such/binary "
                                            "--flag -> cat; timeout: default -> 30 s")
        assert (store.agent("echo").timeout, store.agent("echo").command) == (30, "cat")
        page.goto(f"{served.url}/ops/agents/sage")
        page.fill("#edit-agent [name=model]", "gpt-4.1-mini")
        said = submit(page, "#edit-agent button")
        assert store.agent("sage").options["model"] == "openai:gpt-4.1-mini"
        assert submit(page, "#remove-agent button").startswith("removed agent sage")
        assert page.url.startswith(f"{served.url}/ops/agents?")
        assert "sage" not in {a.handle for a in store.agents()}

        # A stop lifted.
        observe.stop_agent(store, "helper", "lobby", "otto", T0)
        page.goto(f"{served.url}/ops/agents")
        said = submit(page, "#stops button")
        assert said == ("helper may take turns in lobby again; what was "
                                            "owed is answered now")
        with store.reading() as s:
            assert store_ops.stops(s) == []
        page.set_viewport_size({"width": 390, "height": 844})
        for path in ("/ops/agents", "/ops/people", "/ops/moods/attic"):
            page.goto(served.url + path)
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), path
        otto.shot("agents-phone")

        # Forms are an operator's, and each carries the session's CSRF token.
        forged = page.request.post(f"{served.url}/ops/moods", form={"slug": "cellar"})
        assert forged.status == 403 and "CSRF" in forged.text()
        ada = Watched(browser.new_context(), shots)
        ada.sign_in(served.url, tokens["ada"])
        ada.page.goto(f"{served.url}/ops/people")
        assert "ada is not an operator" in refusal(ada.page)
        csrf = ada.page.locator("meta[name=csrf-token]").get_attribute("content")
        for path, form in (("/ops/moods", {"slug": "cellar"}),
                           ("/ops/people/ada", {"trust": "full", "operator": "on"}),
                           ("/ops/people/otto/token", {})):
            forged = ada.page.request.post(served.url + path, form={"csrf": csrf, **form})
            assert forged.status == 403 and "ada is not an operator" in forged.text(), path
        assert "cellar" not in {m.slug for m in store.moods()}
        assert not access.identify(store, tokens["ada"]).operator
        assert all(re.search(r"status of (400|409)", e) for e in otto.errors), otto.errors
        assert sorted(int(re.search(r"status of (\d+)", e).group(1))
                      for e in otto.errors) == sorted(expected)
        assert all("403" in e for e in ada.errors), ada.errors
    finally:
        served.stop()
