"""Approvals answered from the page, in a real browser: a notice asking to use a tool
shows Approve and Deny to a person with trust full (live, as it arrives, and on a
reload), the answer is recorded as given on the page by that person, and the notice
then says who decided; a person with trust look sees no buttons and a forged answer
of theirs is refused, as is an answer to a request already decided."""

from __future__ import annotations

import datetime as dt

from support import webserver
from support.agents import agent_command
from support.browser import Watched
from support.webserver import T0


def pending(store, tool: str = "Bash", shown: str = "ls -la /srv/project"):
    """A running turn of helper in the lobby that asks to use *tool*: the request, pending,
    and its notice posted (as the tool server does for a real turn)."""
    from poller.models import Wake
    from poller.store import capabilities
    from poller.toolserver.approvals import notice

    with store.writing() as s:
        wake = Wake(agent_id=store.agent("helper").id, mood_id=store.mood("lobby").id,
                    kind="mention", tools="full", status="running", created_at=T0,
                    started_at=T0, text="")
        s.add(wake)
        s.flush()
        wake_id = wake.id
    secret = capabilities.mint(store, wake_id, "full", T0, dt.timedelta(hours=1))
    cap, why = capabilities.find(store, secret, T0)
    assert cap is not None, why
    return capabilities.ask(store, cap, tool, shown, notice(cap, tool, shown, 600), T0)


def test_a_person_with_trust_full_approves_and_denies_from_the_page(browser, cli, tmp_path):
    from playwright.sync_api import expect

    from poller.store import capabilities

    cli("mood", "add", "lobby", "--title", "The lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("person", "add", "bob", "--trust", "look")
    cli("agent", "add", "helper", "--command", agent_command(tmp_path, "reply"))
    tokens = {h: cli("person", "token", h).out.strip() for h in ("ada", "bob")}
    served = webserver.start(cli.db_url)
    store = served.store
    try:
        first = pending(store)
        ada = Watched(served_context(browser), tmp_path)
        ada.sign_in(served.url, tokens["ada"])
        page = ada.page
        page.goto(f"{served.url}/m/lobby")
        page.wait_for_selector("#mood[data-live='1']")
        box = page.locator(f"#approval-{first.id}")
        expect(box.locator("button.approve")).to_be_visible()
        expect(box.locator("button.deny")).to_be_visible()
        assert "ls -la /srv/project" in page.inner_text(f"#post-{first.notice_post_id}")

        # A request asked while the page is open arrives live, its buttons with it.
        second = pending(store, tool="Write", shown="notes.md")
        live = page.locator(f"#approval-{second.id}")
        expect(live.locator("button.approve")).to_be_visible(timeout=30_000)
        ada.shot("approval-pending")

        bob = Watched(served_context(browser), tmp_path)
        bob.sign_in(served.url, tokens["bob"])
        bob.page.goto(f"{served.url}/m/lobby")
        seen = bob.page.locator(f"#approval-{first.id}")
        expect(seen).to_contain_text("Waiting for a person with trust full")
        assert bob.page.locator(".approval button").count() == 0
        # bob forges the form: without the CSRF token, and with his own (his trust refuses).
        action = f"{served.url}/m/lobby/approvals/{first.id}"
        forged = bob.page.request.post(action, form={"answer": "approve"})
        assert forged.status == 403 and "CSRF" in forged.text()
        csrf = bob.page.locator("meta[name=csrf-token]").get_attribute("content")
        forged = bob.page.request.post(action, form={"answer": "approve", "csrf": csrf})
        assert forged.status == 403
        assert "bob has trust look: only a person with trust full (or an operator) may " \
               "answer an approval" in forged.text()
        assert "Traceback" not in forged.text()
        assert capabilities.approval(store, first.id).status == "pending"

        box.locator("button.approve").click()
        page.wait_for_url(f"{served.url}/m/lobby#post-{first.notice_post_id}")
        done = capabilities.approval(store, first.id)
        assert (done.status, done.via, done.decided_by) == ("approved", "page", "ada")
        box = page.locator(f"#approval-{first.id}")
        expect(box).to_contain_text("Approved by ada on the page")
        assert box.locator("button").count() == 0

        page.fill(f"#reason-{second.id}", "not on the shared notes")
        page.locator(f"#approval-{second.id} button.deny").click()
        page.wait_for_url(f"**#post-{second.notice_post_id}")
        denied = capabilities.approval(store, second.id)
        assert (denied.status, denied.reason) == ("denied", "not on the shared notes")
        expect(page.locator(f"#approval-{second.id}")).to_contain_text(
            "Denied by ada on the page: not on the shared notes")
        ada.shot("approval-decided")

        assert ada.errors == [] and bob.errors == []
        # Answered elsewhere while the buttons were still on the page: one line, no trace.
        third = pending(store, tool="Bash", shown="make deploy")
        page.reload()
        capabilities.decide(store, third.id, False, T0, person_id=None, via="cli")
        page.locator(f"#approval-{third.id} button.approve").click()
        shown = page.inner_text("#refusal")
        assert shown.startswith(f"approval {third.id} is denied already")
        assert capabilities.approval(store, third.id).status == "denied"
        page.set_viewport_size({"width": 390, "height": 844})
        page.goto(f"{served.url}/m/lobby")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        assert ada.errors == ["Failed to load resource: the server responded with a status "
                              "of 409 (Conflict)"]  # the refusal's own page, nothing else
    finally:
        served.stop()


def served_context(browser):
    return browser.new_context(viewport={"width": 1100, "height": 900})
