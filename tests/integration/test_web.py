"""The web pages over uvicorn, with a real HTTP client keeping cookies as a browser does:
signing in, the session cookie, CSRF on every form, posts shown inert, who sees what."""

from __future__ import annotations

import re

import pytest

from support import webserver
from support.webserver import csrf_of, signed_in


@pytest.fixture
def served(cli):
    s = webserver.start(cli.db_url)
    s.cli = cli
    cli("mood", "add", "lobby", "--title", "The lobby")
    yield s
    s.stop()


def test_signing_in_sets_an_httponly_samesite_strict_session_cookie(served):
    token = served.person("ada")
    c = served.client(follow_redirects=False)
    form = c.get("/signin")
    r = c.post("/signin", data={"token": token, "csrf": csrf_of(form.text)})
    cookie = [h for h in r.headers.get_list("set-cookie") if h.startswith("mp_session=")][0]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    assert token not in cookie
    page = c.get("/")
    assert page.status_code == 200 and "The lobby" in page.text
    assert token not in page.text


def test_pages_send_a_strict_content_security_policy(served):
    r = served.client().get("/signin")
    assert "script-src 'self'" in r.headers["content-security-policy"]
    assert r.headers["x-frame-options"] == "DENY"


def test_a_wrong_token_and_a_forged_sign_in_form_are_refused(served):
    token = served.person("ada")
    c = served.client(follow_redirects=False)
    form = c.get("/signin")
    bad = c.post("/signin", data={"token": "mpt_wrong", "csrf": csrf_of(form.text)})
    assert bad.status_code == 401 and "unknown or was revoked" in bad.text
    forged = served.client(follow_redirects=False).post("/signin", data={"token": token})
    assert forged.status_code == 403 and "CSRF" in forged.text
    assert "mp_session" not in forged.headers.get("set-cookie", "")


def test_without_a_session_pages_send_you_to_sign_in(served):
    r = served.client(follow_redirects=False).get("/m/lobby")
    assert r.status_code == 303 and r.headers["location"] == "/signin?next=/m/lobby"


def test_opening_a_mood_shows_it_and_only_i_m_here_signs_in(served):
    from poller.models import SignIn
    import sqlalchemy as sa

    def labels() -> list[str]:
        with served.store.reading() as s:
            return [r.label for r in s.execute(sa.select(SignIn.label, SignIn.mood_id))]

    c = signed_in(served, served.person("ada"))
    served.client(served.tokens["ada"]).post("/api/v1/moods/lobby/posts", json={"text": "first"})
    page = c.get("/m/lobby")
    assert page.status_code == 200 and "first" in page.text
    assert 'data-slug="lobby"' in page.text
    assert "ada" in served.cli("posts", "lobby").out
    for _ in range(3):
        assert c.get("/m/lobby").status_code == 200
    assert labels() == []  # looking is not arriving: browsing wakes nobody
    r = c.post("/m/lobby/here", data={"csrf": csrf_of(page.text)})
    assert r.status_code == 303 and r.headers["location"] == "/m/lobby"
    assert labels() == ["web"]
    forged = c.post("/m/lobby/here", data={})  # no CSRF token: refused, nothing written
    assert forged.status_code == 403 and labels() == ["web"]


def test_a_form_without_its_csrf_token_is_refused_and_writes_nothing(served):
    c = signed_in(served, served.person("ada"))
    page = c.get("/m/lobby")
    forged = c.post("/m/lobby/posts", data={"text": "forged"})
    assert forged.status_code == 403
    wrong = c.post("/m/lobby/posts", data={"text": "forged", "csrf": "0" * 64})
    assert wrong.status_code == 403
    assert served.store.posts("lobby") == []
    ok = c.post("/m/lobby/posts", data={"text": "real", "csrf": csrf_of(page.text)})
    assert ok.status_code == 303
    assert [p.text for p in served.store.posts("lobby")] == ["real"]
    # Another session's token is no good here either.
    other = signed_in(served, served.tokens["ada"])
    assert other.post("/m/lobby/posts", data={"text": "x", "csrf": csrf_of(page.text)}
                      ).status_code == 403


def test_the_api_refuses_a_cookie_write_without_the_csrf_header(served):
    c = signed_in(served, served.person("ada"))
    r = c.post("/api/v1/moods/lobby/posts", json={"text": "via cookie"})
    assert r.status_code == 403 and r.json()["error"] == "csrf"
    assert served.store.posts("lobby") == []


def test_a_post_containing_script_is_shown_inert(served):
    token = served.person("ada")
    evil = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    served.client(token).post("/api/v1/moods/lobby/posts", json={"text": evil})
    page = signed_in(served, token).get("/m/lobby").text
    assert "<script>alert" not in page and "<img src=x" not in page
    assert '&lt;script&gt;alert("x")&lt;/script&gt;' in page  # as text, in the post


def test_trust_none_reads_but_has_no_post_box_and_its_posts_are_refused(served):
    c = signed_in(served, served.person("nell", "none"))
    page = c.get("/m/lobby")
    assert page.status_code == 200 and 'id="compose"' not in page.text
    r = c.post("/m/lobby/posts", data={"text": "hi", "csrf": csrf_of(page.text)})
    assert r.status_code == 403 and served.store.posts("lobby") == []


def test_operator_pages_need_the_operator_role(served):
    look = signed_in(served, served.person("lou", "look"))
    for path in ["/ops/agents", "/ops/wakes", "/ops/why", "/ops/dials"]:
        assert look.get(path).status_code == 403, path
    page = look.get("/m/lobby")
    r = look.post("/ops/scram", data={"confirm": "stop", "csrf": csrf_of(page.text)})
    assert r.status_code == 403
    assert "EMERGENCY" not in served.cli("status").out


def test_the_scram_button_needs_its_confirmation(served):
    op = signed_in(served, served.person("otto", "full", operator=True))
    page = op.get("/ops/agents")
    assert page.status_code == 200 and 'id="scram"' in page.text
    csrf = csrf_of(page.text)
    assert op.post("/ops/scram", data={"csrf": csrf}).status_code == 400
    assert "EMERGENCY" not in served.cli("status").out
    assert op.post("/ops/scram", data={"csrf": csrf, "confirm": "stop"}).status_code == 303
    assert "EMERGENCY STOP set by otto" in served.cli("status").out
    assert "Lift the emergency stop" in op.get("/ops/agents").text
    assert op.post("/ops/scram", data={"csrf": csrf, "action": "lift"}).status_code == 303
    assert "EMERGENCY" not in served.cli("status").out


def test_operator_pages_render(served, tmp_path):
    from support.agents import agent_command

    served.cli("agent", "add", "helper", "--command", agent_command(tmp_path, "reply"))
    op = signed_in(served, served.person("otto", "full", operator=True))
    assert "helper" in op.get("/ops/agents").text
    assert "No wakes match" in op.get("/ops/wakes?kind=mention").text
    why = op.get("/ops/why?agent=helper&mood=lobby")
    assert why.status_code == 200 and 'id="answer"' in why.text
    dials = op.get("/ops/dials")
    assert "Source:" in dials.text and "discretion" in dials.text
    assert op.get("/ops/wakes/12345").status_code == 404


def test_revoking_the_token_ends_its_sessions(served):
    c = signed_in(served, served.person("ada"))
    assert c.get("/").status_code == 200
    served.cli("person", "token", "ada", "--revoke")
    r = c.get("/")
    assert r.status_code == 303 and r.headers["location"].startswith("/signin")


def test_signing_out_ends_the_session(served):
    c = signed_in(served, served.person("ada"))
    page = c.get("/")
    assert c.post("/signout", data={"csrf": csrf_of(page.text)}).status_code == 303
    assert c.get("/").status_code == 303


def test_after_sign_in_only_local_paths_are_followed(served):
    token = served.person("ada")
    c = served.client(follow_redirects=False)
    form = c.get("/signin")
    r = c.post("/signin", data={"token": token, "csrf": csrf_of(form.text),
                                "next": "//evil.example/"})
    assert r.headers["location"] == "/"


def test_static_files_are_served_by_the_app(served):
    c = served.client()
    assert "prefers-color-scheme: dark" in c.get("/static/style.css").text
    assert "EventSource" in c.get("/static/mood.js").text


def test_agents_replies_silent_dots_and_notices_are_marked(served):
    served.cli("agent", "add", "helper", "--command", "cat")
    token = served.person("ada")
    store = served.store
    store.add_post("lobby", "helper", "here is the answer", webserver.T0)
    store.add_post("lobby", "helper", "nothing to add <yet>", webserver.T0, kind="silent")
    store.add_post("lobby", "helper", "@helper's settings block was refused", webserver.T0,
                   kind="system")
    page = signed_in(served, token).get("/m/lobby").text
    assert re.search(r'<li class="post agent"[^>]*>\s*<div class="meta"><span class="sender">'
                     r'helper</span> <span class="badge">agent</span>', page)
    assert 'class="post silent"' in page
    assert 'title="helper stayed silent: nothing to add &lt;yet&gt;"' in page
    assert re.search(r'class="post notice system".*settings block was refused', page)


def test_earlier_posts_are_a_page_away_and_that_page_is_not_live(served):
    from poller.web.pages import POSTS_SHOWN

    token = served.person("ada")
    ids = served.store.add_posts([("lobby", "ada", f"post {n}", webserver.T0)
                                  for n in range(POSTS_SHOWN + 5)])
    c = signed_in(served, token)
    latest = c.get("/m/lobby").text
    assert f"post {POSTS_SHOWN + 4}" in latest and ">post 4<" not in latest
    link = re.search(r'href="(/m/lobby\?before=(\d+))" id="earlier"', latest)
    assert link and int(link.group(2)) == ids[5]
    earlier = c.get(link.group(1)).text
    assert ">post 0<" in earlier and ">post 4<" in earlier and ">post 5<" not in earlier
    assert 'data-static="1"' in earlier and 'id="compose"' not in earlier
    assert 'id="here"' not in earlier  # "I'm here" is on the live page only
    assert c.get("/m/lobby?before=x").status_code == 400


def test_the_agents_page_shows_each_agent_s_load_last_turn_and_latest_decision(served, tmp_path):
    from support.agents import agent_command

    served.cli("agent", "add", "helper", "--command", agent_command(tmp_path, "reply"))
    served.cli("tick")
    served.cli("person", "add", "ada", "--trust", "full")
    served.cli("post", "lobby", "--as", "ada", "@helper hello")
    served.cli("tick", "--wait")
    op = signed_in(served, served.person("otto", "full", operator=True))
    page = op.get("/ops/agents").text
    assert "mention in lobby: replied" in page
    assert "mention in lobby: woke" in page



MARKDOWN_REPLY = ("**Done.** As #p-{asked} asked:\n\n| step | state |\n|------|-------|\n"
                  "| build | green |\n\n```sh\nmake check\n```\n\nsee https://example.org "
                  "<script>alert(1)</script> [x](javascript:alert(1))")


def test_a_markdown_post_is_one_li_on_load_and_in_the_live_event(served):
    """The page renders a post's markdown, sanitized; the event stream carries the very
    same ``<li>``, so what arrived live is what a reload shows."""
    token = served.person("ada")
    served.cli("agent", "add", "helper", "--command", "cat")
    asked = served.store.add_post("lobby", "ada", "what now?", webserver.T0).id
    events = webserver.Events(served.client(token), f"/api/v1/moods/lobby/events?after={asked}.0")
    written = MARKDOWN_REPLY.format(asked=asked)
    try:
        reply = served.store.add_post("lobby", "helper", written, webserver.T0).id
        got = events.wait(lambda e: e.of("post"), "the reply's event")[0]["data"]
    finally:
        events.close()
    assert got["id"] == reply and got["text"] == written  # the text as written, too
    page = signed_in(served, token).get("/m/lobby").text
    shown = re.search(rf'<li class="post agent" id="post-{reply}".*?</table>.*?</li>', page, re.S)
    assert shown and shown.group() == got["html"]
    li = got["html"]
    assert "<strong>Done.</strong>" in li and "<td>green</td>" in li
    assert f'<a href="#post-{asked}" rel="nofollow noopener noreferrer">#p-{asked}</a>' in li
    assert "<pre><code>make check\n</code></pre>" in li
    assert '<a href="https://example.org"' in li
    assert "<script" not in li and "&lt;script&gt;alert(1)&lt;/script&gt;" in li
    assert re.findall(r'href="([^"]*)"', li) == [f"#post-{asked}", "https://example.org"]
    assert ('<time datetime="2031-05-06T09:00:00Z">2031-05-06 09:00 UTC</time> '
            '<span class="ago">(just now)</span>') in li


def test_the_page_s_own_post_box_gets_the_post_s_li_back(served):
    c = signed_in(served, served.person("ada"))
    page = c.get("/m/lobby").text
    r = c.post("/m/lobby/posts", data={"text": "a `tiny` *note*", "csrf": csrf_of(page)},
               headers={"Accept": "application/json"})
    assert r.status_code == 201
    li = r.json()["html"]
    assert li.startswith(f'<li class="post person" id="post-{r.json()["id"]}"')
    assert "<p>a <code>tiny</code> <em>note</em></p>" in li
    assert li in c.get("/m/lobby").text


def test_a_missing_page_speaks_to_the_web_reader_not_the_command_line(served):
    c = signed_in(served, served.person("ada"))
    for path, said in [("/m/nowhere", "no Mood &#39;nowhere&#39;"), ("/no/such/page", "nothing at")]:
        r = c.get(path)
        shown = re.search(r'<p id="refusal">(.*?)</p>', r.text, re.S).group(1)
        assert r.status_code == 404 and said in shown, shown
        assert "mood-poller" not in shown and "`" not in shown
        assert "it may have been removed, or the link is mistyped" in shown


def test_no_wiki_is_a_note_on_the_dials_page_not_an_alarm(served):
    from wiki_rules import report

    op = signed_in(served, served.person("otto", "full", operator=True))
    page = op.get("/ops/dials").text
    assert f'<p class="note" id="dials-note">{report.NO_WIKI_WARNING}</p>' in page
    assert 'class="alarm"' not in page
