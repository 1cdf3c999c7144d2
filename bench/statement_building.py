"""What share of the cycle's and the ingest's CPU goes to building SQLAlchemy statements.

Runs another benchmark (``throughput.py`` or ``compose.py``, with its own arguments)
under cProfile, profiling only inside ``Poller.tick`` (the cycles: scan, gather,
compose, record) and ``Store.add_posts`` (the ingest), and splits the profiled time:

- **built**: time in SQLAlchemy's statement API called from our code: ``select``,
  ``insert``, ``update``, ``where``, ``values``, column operators, ``func``, ``and_``...
  (functions of ``sqlalchemy/sql`` other than the compiler and the cache keys, and the
  ORM attributes' operators), with what they call;
- **cache keys**: the statement's cache key, computed at each execution of a statement
  built anew (a statement built once keeps its key);
- **compiled**: compiling a statement the compiled cache did not hold.

Run: ``python bench/statement_building.py throughput.py --quick --repeats 1`` (or
``compose.py --quick``); ``--top N`` lists the N callers in ``poller/`` that spend the
most time building.
"""

from __future__ import annotations

import cProfile
import pstats
import runpy
import sys
from pathlib import Path

import _common

BENCH = Path(__file__).resolve().parent
# Not building: compiling, cache keys (counted apart), and converting values to and from
# the driver (type processors, called as rows are read).
BUILT_EXCEPT = ("sql/compiler.py", "sql/cache_key.py", "sql/type_api.py", "sql/sqltypes.py")
BUILT_ALSO = ("orm/attributes.py", "orm/_orm_constructors.py", "orm/util.py")


def profiled(profile: cProfile.Profile, fn):
    def inner(*args, **kwargs):
        profile.enable()
        try:
            return fn(*args, **kwargs)
        finally:
            profile.disable()
    return inner


def ours(filename: str) -> bool:
    return "/poller/" in filename and "sqlalchemy" not in filename


def building(filename: str, name: str) -> bool:
    if "sqlalchemy/" not in filename:
        return False
    tail = filename.split("sqlalchemy/", 1)[1]
    if tail in BUILT_ALSO:  # the ORM's column operators, not reading or setting an attribute
        return name not in ("__get__", "__set__", "__delete__")
    return tail.startswith("sql/") and tail not in BUILT_EXCEPT


def split(stats: pstats.Stats) -> dict:
    """Seconds: total, built (called from our code), cache keys, compiled; and the
    callers of ours that built the most."""
    raw = stats.stats  # (file, line, name) -> (cc, nc, tt, ct, callers)
    total = sum(tt for _, _, tt, _, _ in raw.values())
    built, by_caller = 0.0, {}
    for (filename, _, name), (_, _, _, _, callers) in raw.items():
        if not building(filename, name):
            continue
        for caller, (_, _, _, ct) in callers.items():
            if ours(caller[0]):
                built += ct
                key = f"{caller[0].split('/poller/', 1)[1]}:{caller[2]}"
                by_caller[key] = by_caller.get(key, 0.0) + ct
    keys = sum(ct for (f, _, name), (_, _, _, ct, _) in raw.items()
               if f.endswith("sql/cache_key.py") and name == "_generate_cache_key")
    compiled = sum(ct for (f, _, name), (_, _, _, ct, _) in raw.items()
                   if f.endswith("sql/elements.py") and name == "_compiler")
    return {"total": total, "built": built, "keys": keys, "compiled": compiled,
            "callers": sorted(by_caller.items(), key=lambda kv: -kv[1])}


def main() -> None:
    args = sys.argv[1:]
    top = 0
    if "--top" in args:
        i = args.index("--top")
        top = int(args[i + 1])
        del args[i:i + 2]
    if not args:
        sys.exit(__doc__)
    from poller.cycle import loop
    from poller.store import Store

    profile = cProfile.Profile()
    loop.Poller.tick = profiled(profile, loop.Poller.tick)
    Store.add_posts = profiled(profile, Store.add_posts)
    script = str(BENCH / args[0])
    sys.argv = [script, *args[1:]]
    runpy.run_path(script, run_name="__main__")
    parts = split(pstats.Stats(profile))
    total = parts["total"]
    print(f"\nprofiled (Poller.tick and Store.add_posts, under cProfile): {total:.2f} s; "
          f"statements built from our code {parts['built']:.2f} s ({parts['built'] / total:.1%}), "
          f"cache keys of statements {parts['keys']:.2f} s ({parts['keys'] / total:.1%}), "
          f"compiled {parts['compiled']:.2f} s ({parts['compiled'] / total:.1%}); "
          f"building in all {(parts['built'] + parts['keys'] + parts['compiled']) / total:.1%}; "
          f"{_common.load()}")
    for name, seconds in parts["callers"][:top]:
        print(f"  {seconds:7.3f} s  {name}")


if __name__ == "__main__":
    main()
