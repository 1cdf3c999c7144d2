"""`mood-poller serve` as a real process, `/healthz`, `/metrics` and `mood-poller health`.

Here, the part run as processes; the rest sits under the same name in the other
layers.
"""

from __future__ import annotations

import json
import signal

import httpx

from support import webserver
from support.agents import agent_command, open_gate
from support.waiting import wait_for
from support.serving import served  # noqa: F401  (fixtures)


def test_serve_listens_on_loopback_and_stops_on_sigterm(cli, tmp_path):
    served = webserver.serve_process(cli.db_url, tmp_path)
    assert served.url.startswith("http://127.0.0.1:")
    r = httpx.get(served.url + "/api/v1/openapi.json")
    assert r.status_code == 200 and r.json()["info"]["title"] == "mood-poller"
    assert served.stop(signal.SIGTERM) == 0
    assert "Traceback" not in served.log.read_text()


def test_sigterm_ends_open_event_streams_instead_of_waiting_them_out(cli, tmp_path):
    cli("mood", "add", "lobby")
    cli("person", "add", "ada")
    token = cli("person", "token", "ada").out.strip()
    served = webserver.serve_process(cli.db_url, tmp_path)
    c = httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {token}"},
                     timeout=120)
    ev = webserver.Events(c, "/api/v1/moods/lobby/events")
    ev.wait(lambda e: e.of("working"), "the stream to open")
    assert served.stop(signal.SIGTERM) == 0
    ev._thread.join(120)
    assert not ev._thread.is_alive()  # the server ended the stream
    assert "timeout graceful shutdown exceeded" not in served.log.read_text()


def test_serve_json_says_where_it_listens(cli, tmp_path):
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "poller", "--db", cli.db_url, "serve",
                             "--port", "0", "--json"], stdout=subprocess.PIPE, text=True)
    try:
        line = json.loads(proc.stdout.readline())
        assert line["url"].startswith("http://127.0.0.1:") and line["with_poller"] is False
        assert httpx.get(line["url"] + "healthz").status_code == 503  # no poller runs
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0


def test_a_port_in_use_is_one_line_and_exit_1(cli, tmp_path):
    served = webserver.serve_process(cli.db_url, tmp_path)
    try:
        port = served.url.rsplit(":", 1)[1]
        r = cli.fails("serve", "--port", port)
        assert r.code == 1 and "cannot listen on 127.0.0.1:" in r.err
    finally:
        served.stop()


def test_sigterm_gives_running_turns_their_grace_then_ends_them(cli, tmp_path):
    gate = tmp_path / "gate"
    config = tmp_path / "config.toml"
    config.write_text("[poller]\nshutdown_grace = 0.5\n")
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "helper", "--command", agent_command(tmp_path, "gate", str(gate)))
    token = cli("person", "token", "ada").out.strip()
    served = webserver.serve_process(cli.db_url, tmp_path, "--with-poller", config=config)
    try:
        c = httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {token}"})
        wait_for(lambda: c.get("/healthz").status_code == 200, what="the first cycle")
        c.post("/api/v1/moods/lobby/posts", json={"text": "@helper hold on"})
        wait_for(lambda: c.get("/api/v1/agents").json()[0]["state"] == "at work",
                 what="helper at work")
        assert served.stop(signal.SIGTERM) == 0
    finally:
        open_gate(gate)
        served.stop(signal.SIGKILL)
    wakes = json.loads(cli("wakes", "--json").out)
    assert [w["status"] for w in wakes] == ["cut_off"]


def test_demo_serve_leaves_the_page_running_with_a_sign_in_link(tmp_path):
    import re
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "poller", "demo", "--serve", "--port", "0",
                             "--dir", str(tmp_path / "demo")], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        link = None
        for line in proc.stdout:
            m = re.search(r"(http://127\.0\.0\.1:\d+/)signin#token=(\S+)", line)
            if m:
                link = m
                break
        assert link, "no sign-in link printed"
        base, token = link.group(1), link.group(2)
        c = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"})
        assert c.get("/api/v1/me").json() == {"handle": "ada", "trust": "full", "operator": True}
        assert [m["slug"] for m in c.get("/api/v1/moods").json()] == ["garden", "lobby", "studio"]
        assert any(p["sender"] == "helper" for p in c.get("/api/v1/moods/lobby/posts").json())
        wait_for(lambda: c.get("/healthz").status_code == 200, what="the demo's poller")
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=120) == 0


def test_beyond_loopback_serve_warns_and_secure_cookie_marks_the_cookies(cli, tmp_path):
    served = webserver.serve_process(cli.db_url, tmp_path, "--host", "0.0.0.0",
                                     "--secure-cookie")
    try:
        assert "beyond this machine: put TLS in front" in served.log.read_text()
        base = served.url.replace("0.0.0.0", "127.0.0.1")
        r = httpx.get(base + "/signin")
        cookie = [h for h in r.headers.get_list("set-cookie") if h.startswith("mp_pre=")]
        assert cookie and "Secure" in cookie[0] and "HttpOnly" in cookie[0]
    finally:
        assert served.stop() == 0
    plain = webserver.serve_process(cli.db_url, tmp_path)
    try:
        assert "beyond this machine" not in plain.log.read_text()
        r = httpx.get(plain.url + "/signin")
        assert "Secure" not in r.headers["set-cookie"]
    finally:
        assert plain.stop() == 0
