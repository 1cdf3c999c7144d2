"""What scheduled wakes cost a cycle: idle with many alarms and agreements, and per due one.

**Idle**: 10,000 daily alarms and 1,000 daily check-in agreements (one agent
per 10 alarms, 100 Moods), none due: the median CPU of ``Poller.tick`` over 40
cycles, beside the same store with no schedules (the step reads two index
ranges, so the difference should be a fraction of a millisecond).

**Due**: every alarm due at once after a poller was down 3 days (three firings
each): one cycle weighs, gathers, composes and records one wake per alarm
(never three), with a launcher that only notes them; CPU per alarm wake.

Run: ``python bench/schedules.py [--quick] [--db URL]``.
"""

from __future__ import annotations

import datetime as dt

import _common
from _common import T0

from poller.schedules import agreements, alarms  # noqa: E402
from poller.cycle import loop

AGENTS, MOODS, ALARMS, AGREEMENTS = 100, 100, 10_000, 1_000
TICKS = 40


def world(store, n_alarms: int, n_agreements: int) -> None:
    agents = [f"bot{i:03d}" for i in range(AGENTS)]
    people = [f"p{i:04d}" for i in range(n_agreements)]
    slugs = _common.build_world(store, MOODS, agents, people)
    with store.writing() as s:
        for i in range(n_alarms):
            alarms.add(s, agent_id=store.agent(agents[i % AGENTS]).id,
                       mood_id=store.mood(slugs[i % MOODS]).id, kind="daily",
                       when=f"{i % 24:02d}:{i % 60:02d}", tz="Europe/Berlin", note="bench",
                       set_by="bench", now=T0)
    for i, person in enumerate(people):
        agreements.setup(store, person=person, agent=agents[i % AGENTS], mood=slugs[i % MOODS],
                         kind="daily", when="21:00", tz="Europe/Berlin", grace=60, cutoff=120,
                         contact_email=None, now=T0)


def idle_ms(store, cfg, now: dt.datetime) -> float:
    p = loop.Poller(store, cfg, launcher=_common.ListLauncher())
    p.tick(now)
    cpu = []
    for i in range(TICKS):
        with _common.Timed() as t:
            p.tick(now + dt.timedelta(seconds=i + 1))
        cpu.append(t.cpu * 1000)
    return _common.median(cpu)


def main() -> None:
    args = _common.parser(__doc__).parse_args()
    _common.quiet_logs()
    n_alarms, n_agreements = (1_000, 100) if args.quick else (ALARMS, AGREEMENTS)
    print(_common.facts())
    quiet = T0 + dt.timedelta(minutes=1)  # before any alarm's first firing (09:01 UTC)
    _, bare, cfg = _common.fresh_database(args.db)
    _common.build_world(bare, MOODS, [f"bot{i:03d}" for i in range(AGENTS)], [])
    base = idle_ms(bare, cfg, quiet)
    _, store, cfg = _common.fresh_database(args.db)
    world(store, n_alarms, n_agreements)
    with_schedules = idle_ms(store, cfg, T0 + dt.timedelta(seconds=1))
    print(f"idle: {with_schedules:.2f} ms CPU per tick with {n_alarms:,} alarms and "
          f"{n_agreements:,} agreements, none due; {base:.2f} ms with none")
    p = loop.Poller(store, cfg, launcher=_common.ListLauncher())
    down = T0 + dt.timedelta(days=3)
    with _common.Timed() as t:
        report = p.tick(down)
    alarm_wakes = sum(1 for w in report.wakes if w.kind == "alarm")
    print(f"due: {alarm_wakes:,} alarm wakes (and {len(report.wakes) - alarm_wakes:,} "
          f"checkin-missed) after 3 days down, one per alarm: {t.cpu * 1000 / max(1, len(report.wakes)):.2f} ms "
          f"CPU per wake ({t.wall:.1f} s wall for the cycle); {_common.load()}")


if __name__ == "__main__":
    main()
