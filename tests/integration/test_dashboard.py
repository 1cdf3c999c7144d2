"""The kit's Grafana dashboard reads what /metrics exports: every metric a panel queries is
one the server exports (a counter as its _total, however the client library names its
family; a histogram as its _bucket, _sum and _count), and every metric exported has a
panel."""

from __future__ import annotations

import datetime as dt
import json
import re
from importlib import resources

from support.webserver import store_for

NOW = dt.datetime(2031, 5, 6, 9, 0, tzinfo=dt.timezone.utc)
SERIES = {"gauge": ("",), "counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}


def exported(text: str) -> dict[str, set[str]]:
    """Each metric family in Prometheus' text format, with the series names it is read by."""
    return {name: {name.removesuffix("_total") + suffix for suffix in SERIES[kind]}
            for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M)}


def test_the_kits_dashboard_queries_only_what_the_server_exports(cli):
    from poller.models import DialCache
    from poller.store import access
    from poller.web.health import metrics_text

    cli("mood", "add", "lobby")
    store = store_for(cli.db_url)
    try:  # a poller's beat and cached dial wording: the figures only exported with them
        access.record_beat(store, "poller-1", NOW, 5.0, 0.2)
        with store.writing() as s:
            s.add(DialCache(site="https://wiki.example", title="Dials", revid=1, wikitext="",
                            protected=None, fetched_at=NOW))
        families = exported(metrics_text(store, NOW).decode())
    finally:
        store.engine.dispose()
    board = json.loads(resources.files("poller.kit").joinpath("grafana-dashboard.json")
                       .read_text())
    queried = {name for panel in board["panels"] for target in panel["targets"]
               for name in re.findall(r"\bmood_poller_\w+", target["expr"])}
    readable = set().union(*families.values())
    assert queried and queried <= readable, sorted(queried - readable)
    unshown = {name for name, series in families.items() if not series & queried}
    assert not unshown, sorted(unshown)
    assert len(families) >= 14  # the figures above were all exported
    # Importable: one datasource variable, every panel and target aimed at it.
    (var,) = board["templating"]["list"]
    assert (var["type"], var["query"]) == ("datasource", "prometheus")
    assert all(p["datasource"]["uid"] == "${datasource}" for p in board["panels"])
    assert len({p["id"] for p in board["panels"]}) == len(board["panels"])
