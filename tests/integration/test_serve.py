"""`mood-poller serve` as a real process, `/healthz`, `/metrics` and `mood-poller health`.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

from support import webserver
from support.agents import agent_command
from support.webserver import T0
from support.serving import served  # noqa: F401  (fixtures)


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


