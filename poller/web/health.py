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
from poller.text import iso, when

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
    try:
        out["bridges"] = bridge_facts(store, now)
    except Exception as exc:  # the database went away meanwhile: the next look says it
        out["database"] = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        return out
    out["ok"] = (out["poller"]["state"] == "ok"
                 and all(b["state"] == "ok" for b in out["bridges"]))
    return out


def _bridge_metrics(Gauge, bridged: list[dict], now: dt.datetime):
    """Each bridge: up (1 running, 0 stale or not running), seconds since its last beat and
    its last chat event, and its outbox items waiting and failed."""
    up = Gauge("mood_poller_bridge_up", "A bridge that has work is running (1) or not (0)",
               labels=["bridge"])
    ages = Gauge("mood_poller_bridge_last_event_age_seconds", "Seconds since a bridge took in "
                 "its newest chat event", labels=["bridge"])
    backlog = Gauge("mood_poller_bridge_outbox", "Outbox items of a bridge, by state",
                    labels=["bridge", "state"])
    for b in bridged:
        up.add_metric([b["bridge"]], 1 if b["state"] == "ok" else 0)
        if b["last_event_at"]:
            at = dt.datetime.fromisoformat(b["last_event_at"].replace("Z", "+00:00"))
            ages.add_metric([b["bridge"]], max((now - at).total_seconds(), 0.0))
        if b["backlog"] is not None:
            backlog.add_metric([b["bridge"], "pending"], b["backlog"])
            backlog.add_metric([b["bridge"], "failed"], b["failed"])
    yield from (up, ages, backlog)


def bridge_detail(b: dict) -> str:
    """One bridge of :func:`bridge_facts` in words, after its name and state."""
    if b["last_beat_at"] is None:
        return b["serves"]
    return (f"last beat {when(b['last_beat_at'])}, last event "
            f"{when(b['last_event_at']) or 'none yet'}, "
            f"{b['backlog']} waiting, {b['failed']} failed")


def bridge_facts(store, now: dt.datetime) -> list[dict]:
    """Each bridge this database has work for, and each that beats: running (``ok``),
    ``stale`` (its beats stopped) or ``not running`` (work for it, no beat)."""
    with store.reading() as s:
        needed = access.bridges_needed(s)
        beats = access.bridge_beats(s)
    out, seen = [], set()
    for b in beats:  # newest first: a bridge's older beats (one killed before) are not it
        if b.bridge in seen:
            continue
        seen.add(b.bridge)
        out.append({"bridge": b.bridge, "state": "stale" if b.stale(now) else "ok",
                    "holder": b.holder, "serves": b.serves, "last_beat_at": iso(b.at),
                    "last_event_at": iso(b.last_event_at), "backlog": b.backlog,
                    "failed": b.failed})
    running = {b["bridge"] for b in out}
    for name, n in sorted(needed.items()):
        if name not in running:
            what = f"{n} linked Mood(s)" if name == "matrix" else f"{n} webhook(s)"
            out.append({"bridge": name, "state": "not running", "holder": None,
                        "serves": f"{what}: start `mood-poller bridge "
                                  f"{'matrix' if name == 'matrix' else 'webhooks'}`",
                        "last_beat_at": None, "last_event_at": None, "backlog": None,
                        "failed": None})
    return out


def metrics_text(store, now: dt.datetime) -> bytes:
    """The store's figures in Prometheus' text format."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                       HistogramMetricFamily)

    f = access.figures(store)
    beat = access.last_beat(store)
    bridged = bridge_facts(store, now)

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
            yield from _bridge_metrics(GaugeMetricFamily, bridged, now)
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
