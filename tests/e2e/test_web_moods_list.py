"""The Moods list in a real browser: each Mood's last post, what others said since the
person last read it on the page (loaded or brought live), and who is here (signed in
or posting lately)."""

from __future__ import annotations

from support import webserver
from support.browser import Watched


def test_the_moods_list_shows_last_activity_unread_and_who_is_here(browser, cli, tmp_path):
    from playwright.sync_api import expect

    cli("mood", "add", "lobby", "--title", "The lobby")
    cli("mood", "add", "attic", "--title", "The attic")
    cli("person", "add", "ada", "--trust", "full")
    cli("person", "add", "bob", "--trust", "full")
    token = cli("person", "token", "ada").out.strip()

    def post(text: str, at: str, who: str = "bob", mood: str = "lobby") -> None:
        cli("post", mood, "--as", who, "--at", at, text)

    post("an old word", "2031-05-05T09:00Z")  # the server's clock reads 2031-05-06 09:00
    post("fresh news", "2031-05-06T08:50Z")
    served = webserver.start(cli.db_url)
    try:
        ada = Watched(browser.new_context(viewport={"width": 1000, "height": 800}), tmp_path)
        ada.sign_in(served.url, token)
        page = ada.page
        lobby, attic = page.locator("#mood-lobby"), page.locator("#mood-attic")
        expect(lobby.locator(".unread")).to_have_text("2 new")
        assert lobby.locator(".last time").inner_text() == "2031-05-06 08:50 UTC"
        assert lobby.locator(".here").inner_text() == "here: bob"  # posted 10 min ago
        assert attic.locator(".unread").count() == 0 and attic.locator(".here").count() == 0
        assert attic.locator(".last").inner_text() == "nothing said yet"
        ada.shot("moods-list")

        page.click("#mood-lobby a")
        page.wait_for_selector("#mood[data-live='1']")
        post("arrived while ada reads", "2031-05-06T08:55Z")
        expect(page.locator(".post.person .text").last).to_have_text("arrived while ada reads",
                                                                     timeout=30_000)
        page.goto(served.url + "/")
        assert lobby.locator(".unread").count() == 0  # read, loaded and live alike
        post("ada's own words are no news to her", "2031-05-06T08:56Z", who="ada")
        post("one more", "2031-05-06T08:57Z")
        page.reload()
        expect(lobby.locator(".unread")).to_have_text("1 new")
        assert lobby.locator(".here").inner_text() == "here: ada, bob"

        page.goto(f"{served.url}/m/attic")
        page.click("#here button")  # I'm here: a sign-in
        page.wait_for_selector("#mood[data-live='1']")
        chatter = "\n".join(f'{{"text": "filler {i}", "at": "2031-05-06T08:{i % 60:02d}:00Z"}}'
                            for i in range(120))
        cli("post", "attic", "--as", "bob", "--stdin-jsonl", input=chatter)
        page.goto(served.url + "/")
        expect(attic.locator(".unread")).to_have_text("99+ new")
        assert attic.locator(".here").inner_text() == "here: ada, bob"
        page.set_viewport_size({"width": 390, "height": 844})
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        ada.shot("moods-list-phone")
        assert ada.errors == []
    finally:
        served.stop()
