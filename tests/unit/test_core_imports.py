"""The core names no organ: the cycle, the wake, the turns and the law import nothing
from away and back, the schedules, control, the screen or the bridges.  An organ plugs
in through the registries the core defines (kinds, reply blocks, readers, stages,
presence), loaded by poller.cycle.organs, which finds them by looking."""

from __future__ import annotations

from pathlib import Path

from support.imports import graph_of, write

CORE = ("poller.cycle", "poller.wake", "poller.turns", "poller.law")
ORGANS = ("poller.away", "poller.schedules", "poller.control", "poller.screen",
          "poller.bridges")


def within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def core_reaching_organs(root: Path | None = None) -> list[str]:
    graph = graph_of(root)
    return [f"{edge.path}:{edge.line} {name} imports {target} ({edge.kind})"
            for name, edges in sorted(graph.items()) if within(name, CORE)
            for target, edge in sorted(edges.items()) if within(target, ORGANS)]


def test_the_core_imports_no_organ():
    assert core_reaching_organs() == []


def test_the_organs_plug_into_the_core():
    graph = graph_of()
    for organ in ("poller.away.organ", "poller.schedules.organ", "poller.control.organ",
                  "poller.screen.organ"):
        assert "poller.cycle.stages" in graph[organ] or "poller.kinds" in graph[organ], organ


def test_a_core_module_naming_an_organ_is_caught(tmp_path):
    for name in ("poller/__init__.py", "poller/cycle/__init__.py", "poller/away/__init__.py",
                 "poller/away/catalog.py", "poller/kinds.py"):
        write(tmp_path, name)
    write(tmp_path, "poller/cycle/loop.py", """\
        from poller import kinds


        def check(agent):
            from poller.away import catalog
            return catalog
        """)
    write(tmp_path, "poller/away/organ.py", "from poller.cycle import loop\n")
    assert core_reaching_organs(tmp_path) == [
        "poller/cycle/loop.py:5 poller.cycle.loop imports poller.away.catalog (local)"]
