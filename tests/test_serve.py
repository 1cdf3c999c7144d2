"""`mood-poller serve` as a real process, `/healthz`, `/metrics` and `mood-poller health`."""

from __future__ import annotations

import datetime as dt
import json
import signal

import httpx
import pytest

from support import webserver
from support.agents import agent_command, open_gate
from support.webserver import T0
from support.waiting import wait_for


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


@pytest.fixture
def served(cli):
    s = webserver.start(cli.db_url, poller_interval=1.0)
    s.cli = cli
    yield s
    s.stop()


def test_healthz_is_503_until_a_poller_cycles_and_when_it_goes_stale(served):
    from poller.store import access

    c = served.client()
    r = c.get("/healthz")
    assert r.status_code == 503
    assert r.json()["database"] == "ok" and r.json()["poller"]["state"] == "no cycle recorded"
    access.record_beat(served.store, "here:1:x", T0 - dt.timedelta(seconds=2), 1.0, 0.01)
    r = c.get("/healthz")
    assert r.status_code == 200
    body = r.json()
    assert body["ok"] is True and body["poller"]["age_seconds"] == 2.0
    assert body["dials"]["source"] == "fallback"
    access.record_beat(served.store, "here:1:x", T0 - dt.timedelta(seconds=3.5), 1.0, 0.01)
    r = c.get("/healthz")
    assert r.status_code == 503 and r.json()["poller"]["state"] == "stale"


@pytest.fixture
def any_served(any_cli):
    s = webserver.start(any_cli.db_url, poller_interval=1.0)
    s.cli = any_cli
    yield s
    s.stop()


def test_metrics_in_prometheus_text_format(any_served, tmp_path):
    from prometheus_client.parser import text_string_to_metric_families

    from poller.store import access

    served = any_served
    cli = served.cli
    cli("mood", "add", "lobby")
    cli("person", "add", "ada", "--trust", "full")
    cli("agent", "add", "helper", "--command", agent_command(tmp_path, "reply"))
    cli("--now", T0.isoformat(), "tick")
    cli("--now", T0.isoformat(), "post", "lobby", "--as", "ada", "@helper hi")
    cli("--now", (T0 + dt.timedelta(seconds=1)).isoformat(), "tick", "--wait")
    access.record_beat(served.store, "here:1:x", T0, 1.0, 0.25)
    r = served.client().get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(r.text)}
    wakes = {(s.labels["kind"], s.labels["outcome"]): s.value
             for s in families["mood_poller_wakes"].samples}
    assert wakes == {("mention", "replied"): 1.0}
    turn = {s.name: s.value for s in families["mood_poller_turn_duration_seconds"].samples
            if not s.labels.get("le")}
    assert turn["mood_poller_turn_duration_seconds_count"] == 1.0
    assert turn["mood_poller_turn_duration_seconds_sum"] > 0
    buckets = [s.value for s in families["mood_poller_turn_duration_seconds"].samples
               if s.labels.get("le")]
    assert buckets == sorted(buckets) and buckets[-1] == 1.0  # cumulative, +Inf holds all
    tokens = [s for s in families["mood_poller_wake_prompt_tokens"].samples
              if s.name.endswith("_sum")]
    assert tokens[0].value > 0
    assert families["mood_poller_mentions_owed"].samples[0].value == 0
    assert families["mood_poller_cycle_duration_seconds"].samples[0].value == 0.25
    for name in ("mood_poller_holds", "mood_poller_last_cycle_age_seconds"):
        assert name in families


def test_health_command_exit_codes_and_json(cli):
    from poller.store import access

    r = cli.fails("health")
    assert r.code == 1 and "no cycle recorded" in r.out and "NOT OK" in r.out
    assert "no poller has recorded a cycle" in r.err
    store = webserver.store_for(cli.db_url)
    access.record_beat(store, "here:1:x", T0, 1.0, 0.02)
    ok = cli("--now", (T0 + dt.timedelta(seconds=1)).isoformat(), "health", "--json")
    report = json.loads(ok.out)
    assert report["ok"] is True and report["poller"]["age_seconds"] == 1.0
    late = cli.fails("--now", (T0 + dt.timedelta(seconds=10)).isoformat(), "health")
    assert late.code == 1 and "stale" in late.out


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
