"""Operators' health: ``/healthz``, ``/metrics`` and what ``mood-poller health`` prints.

Healthy means the database answers, is still the one the store opened (a
SQLite file deleted or replaced under it is not) with the newest schema, and a
poller finished a cycle within three of its intervals (pollers record each
cycle's time: :func:`access.record_beat`).
The metrics are read from the store at each scrape, so ``serve`` reports what
every poller on the database did, not only one in its own process.
"""

from __future__ import annotations

import datetime as dt
from typing import Optional

from poller import errors
from poller.store import access, db
from poller.text import iso

STALE_INTERVALS = 3  # a poller silent this many intervals is unhealthy


def facts(store, now: dt.datetime, dials=None, interval: Optional[float] = None) -> dict:
    """The health report: ``ok`` is False when the database or the poller is not."""
    out: dict = {"ok": False, "database": "ok", "poller": None, "dials": None}
    try:
        access.ping(store)
        db.check_schema(store.engine)
        beat = access.last_beat(store)
    except Exception as exc:  # unreachable, locked, gone, missing schema: say so, don't crash
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        out["database"] = first if isinstance(exc, errors.PollerError) else first[:200]
        return out
    if beat is None:
        out["poller"] = {"state": "no cycle recorded", "last_cycle_at": None,
                         "age_seconds": None}
    else:
        every = interval or beat.interval
        age = (now - beat.at).total_seconds()
        out["poller"] = {"state": "ok" if age <= STALE_INTERVALS * every else "stale",
                         "last_cycle_at": iso(beat.at), "age_seconds": round(age, 3),
                         "interval": every, "cycle_seconds": round(beat.took, 4),
                         "holder": beat.holder}
    if dials is not None:
        st = dials.status(now)
        out["dials"] = {"source": st.source, "revid": st.revid,
                        "age_seconds": int(st.age.total_seconds()) if st.age else None}
    out["ok"] = out["poller"]["state"] == "ok"
    return out


def metrics_text(store, now: dt.datetime) -> bytes:
    """The store's figures in Prometheus' text format."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                       HistogramMetricFamily)

    f = access.figures(store)
    beat = access.last_beat(store)

    class Figures:
        def collect(self):
            wakes = GaugeMetricFamily("mood_poller_wakes", "Wakes recorded, by kind and outcome",
                                      labels=["kind", "outcome"])
            for (kind, status), n in sorted(f.wakes.items()):
                wakes.add_metric([kind, status], n)
            yield wakes
            yield _histogram(HistogramMetricFamily, "mood_poller_turn_duration_seconds",
                             "How long finished turns ran", f.turn_seconds)
            yield _histogram(HistogramMetricFamily, "mood_poller_wake_prompt_tokens",
                             "Tokens per wake", f.prompt_tokens)
            holds = GaugeMetricFamily("mood_poller_holds", "Agents holding owed mentions, by "
                                      "reason", labels=["reason"])
            for reason, n in sorted(f.holds.items()):
                holds.add_metric([reason], n)
            yield holds
            yield GaugeMetricFamily("mood_poller_mentions_owed", "Mentions owed an answer",
                                    value=f.owed)
            yield GaugeMetricFamily("mood_poller_moods", "Moods", value=f.moods)
            tokens = CounterMetricFamily("mood_poller_turn_tokens", "Tokens of agents' turns as "
                                         "their providers counted them", labels=["agent", "way"])
            usd = CounterMetricFamily("mood_poller_turn_cost_usd", "US dollars agents' turns "
                                      "cost", labels=["agent"])
            for handle, (tin, tout, cost) in sorted(f.spent.items()):
                tokens.add_metric([handle, "in"], tin)
                tokens.add_metric([handle, "out"], tout)
                usd.add_metric([handle], cost)
            yield tokens
            yield usd
            if beat is not None:
                yield GaugeMetricFamily("mood_poller_cycle_duration_seconds",
                                        "How long the last cycle took", value=beat.took)
                yield GaugeMetricFamily("mood_poller_last_cycle_age_seconds",
                                        "Seconds since a poller last finished a cycle",
                                        value=(now - beat.at).total_seconds())
            if f.dial_fetched_at is not None:
                yield GaugeMetricFamily("mood_poller_dial_wording_age_seconds",
                                        "Age of the cached dial wording from the wiki",
                                        value=(now - f.dial_fetched_at).total_seconds())

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Figures())
    return generate_latest(registry)


def _histogram(family, name: str, help: str, h: access.Histogram):
    buckets = [(str(float(bound)), n) for bound, n in h.buckets] + [("+Inf", h.count)]
    return family(name, help, buckets=buckets, sum_value=h.total)
