"""The store at the bottom: poller.store imports the schema, the shared vocabulary and itself.

Read from the import graph of scripts/import_graph.py, in process: no module
under poller.store may import an organ, the law, the wake's composer, the
cycle or the turns layer (settling included), only the modules below.
"""

from __future__ import annotations

from pathlib import Path

from support.imports import graph_of, write

# What the store may build on.  settings (the dials: their keys, rules and
# resolution) and procs (this machine's name, whether a pid lives) import
# nothing of the poller's logic: they are vocabulary the store shares.
ALLOWED = ("poller.models", "poller.migrations", "poller.kinds", "poller.values",
           "poller.errors", "poller.text", "poller.clock", "poller.tokens", "poller.settings",
           "poller.procs", "poller.secure", "poller.store")


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def allowed(target: str) -> bool:
    return any(within(target, a) for a in ALLOWED)


def store_reaching_up(root: Path | None = None) -> list[str]:
    """Each import by a store module of a module outside :data:`ALLOWED`, with where."""
    graph = graph_of(root)
    return [f"{edge.path}:{edge.line} {name} imports {target} ({edge.kind})"
            for name, edges in sorted(graph.items()) if within(name, "poller.store")
            for target, edge in sorted(edges.items()) if not allowed(target)]


def test_the_store_imports_nothing_above_it():
    assert store_reaching_up() == []


def test_the_graph_it_reads_holds_the_store():
    graph = graph_of()
    assert "poller.store.cycle" in graph["poller.store.turns"]
    assert "poller.models" in graph["poller.store.turns"]


def test_a_store_module_importing_the_law_is_caught(tmp_path):
    for name in ("poller/__init__.py", "poller/law.py", "poller/models.py",
                 "poller/store/__init__.py", "poller/store/core.py", "poller/turns/__init__.py",
                 "poller/turns/settle.py"):
        write(tmp_path, name)
    write(tmp_path, "poller/store/turns.py", """\
        from typing import TYPE_CHECKING

        from poller import law, models
        from poller.store import core

        if TYPE_CHECKING:
            from poller.turns import settle
        """)
    assert store_reaching_up(tmp_path) == [
        "poller/store/turns.py:3 poller.store.turns imports poller.law (top)",
        "poller/store/turns.py:7 poller.store.turns imports poller.turns.settle (typing)",
    ]


def test_a_store_on_the_schema_and_itself_passes(tmp_path):
    for name in ("poller/__init__.py", "poller/law.py", "poller/models.py", "poller/kinds.py",
                 "poller/store/__init__.py", "poller/store/core.py"):
        write(tmp_path, name)
    write(tmp_path, "poller/store/turns.py", """\
        from poller import models
        from poller.kinds import IN_FLIGHT
        from poller.store import core


        def late():
            from poller.store import core
            return core
        """)
    write(tmp_path, "poller/cycle.py", "from poller import law\nfrom poller.store import turns\n")
    assert store_reaching_up(tmp_path) == []
