#!/usr/bin/env python3
"""The import graph of the project's own packages, and any cycle in it.

Reads the source of ``poller`` and ``wiki_rules`` with :mod:`ast` (nothing is
imported or run) and records every import of one project module by another:
top-level imports, imports inside functions, and imports under
``if TYPE_CHECKING:`` all count, since each ties the two modules together.
``from pkg import name`` points at the submodule ``pkg.name`` when there is
one, else at ``pkg`` itself.  Importing a submodule is not counted as an
import of its parent package.  Imports built at run time
(``importlib.import_module``) are not seen.

Prints the graph, one module a line with what it imports, then the cycles.
Exits 0 when there is no cycle, 1 when there is one (each named, with the
file and line of every import in it).

    python scripts/import_graph.py [--root DIR] [--cycles-only]
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("poller", "wiki_rules")
ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Edge:
    """Where one module imports another: the first such import statement."""

    path: Path
    line: int
    kind: str  # top | local | typing


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def find_modules(root: Path, packages=PACKAGES) -> dict[str, Path]:
    """Every module of *packages* under *root*, by dotted name."""
    found: dict[str, Path] = {}
    for package in packages:
        base = root / package
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            if "__pycache__" not in path.parts:
                found[module_name(root, path)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


class _Imports(ast.NodeVisitor):
    """Collects (dotted target, line, kind) for each name an import statement binds."""

    def __init__(self, module: str, is_package: bool):
        self.package = module if is_package else module.rpartition(".")[0]
        self.found: list[tuple[str, int, str]] = []
        self._functions = 0
        self._typing = 0

    @property
    def _kind(self) -> str:
        if self._typing:
            return "typing"
        return "local" if self._functions else "top"

    def _inside_function(self, node) -> None:
        self._functions += 1
        self.generic_visit(node)
        self._functions -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _inside_function

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            self.generic_visit(node)
            return
        self.visit(node.test)
        self._typing += 1
        for child in node.body:
            self.visit(child)
        self._typing -= 1
        for child in node.orelse:
            self.visit(child)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.found.append((alias.name, node.lineno, self._kind))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            parts = self.package.split(".") if self.package else []
            parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
            base = ".".join(parts + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        for alias in node.names:
            target = base if alias.name == "*" else f"{base}.{alias.name}"
            self.found.append((target, node.lineno, self._kind))


def _resolve(target: str, modules: dict[str, Path]) -> str | None:
    """The longest project module *target* names (``a.b.name`` -> ``a.b``), if any."""
    parts = target.split(".")
    while parts:
        name = ".".join(parts)
        if name in modules:
            return name
        parts.pop()
    return None


def build_graph(root: Path = ROOT, packages=PACKAGES) -> dict[str, dict[str, Edge]]:
    """module -> {imported module: where}, for imports between project modules."""
    modules = find_modules(root, packages)
    graph: dict[str, dict[str, Edge]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        collector = _Imports(name, path.name == "__init__.py")
        collector.visit(tree)
        edges: dict[str, Edge] = {}
        for target, line, kind in collector.found:
            resolved = _resolve(target, modules)
            if resolved is not None and resolved != name and resolved not in edges:
                edges[resolved] = Edge(path.relative_to(root), line, kind)
        graph[name] = edges
    return graph


def strongly_connected(graph: dict[str, dict[str, Edge]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0

    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, {})))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return sorted(out)


def shortest_cycle(graph: dict[str, dict[str, Edge]], component: list[str]) -> list[str]:
    """A shortest cycle through the first module of *component*, as a closed path."""
    start = component[0]
    members = set(component)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node]):
                if child not in members:
                    continue
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return list(reversed(path)) + [start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError("a strongly connected component always has a cycle")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the project's top directory")
    parser.add_argument("--cycles-only", action="store_true", help="print only the cycles")
    args = parser.parse_args(argv)

    graph = build_graph(args.root)
    if not args.cycles_only:
        for name in sorted(graph):
            imports = ", ".join(sorted(graph[name])) or "-"
            print(f"{name} -> {imports}")
        print()
    components = strongly_connected(graph)
    if not components:
        print(f"no import cycles among {len(graph)} modules")
        return 0
    print(f"{len(components)} import cycle{'s' if len(components) != 1 else ''}:")
    for component in components:
        cycle = shortest_cycle(graph, component)
        print(f"  {' -> '.join(cycle)}")
        if len(component) > len(cycle) - 1:
            print(f"    (all tangled together: {', '.join(component)})")
        for source, target in zip(cycle, cycle[1:]):
            edge = graph[source][target]
            print(f"    {edge.path}:{edge.line} {source} imports {target} ({edge.kind})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
