"""The project's import graph, read in process by scripts/import_graph.py's own functions."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "import_graph.py"


def script():
    if "import_graph" not in sys.modules:
        spec = importlib.util.spec_from_file_location("import_graph", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        sys.modules["import_graph"] = module  # (its dataclasses look their module up)
        spec.loader.exec_module(module)
    return sys.modules["import_graph"]


def graph_of(root: Path | None = None) -> dict:
    """{module: {imported module: Edge}} for the tree at *root* (the project's own by default)."""
    graph_script = script()
    return graph_script.build_graph(root or graph_script.ROOT)


def write(root: Path, name: str, source: str = "") -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
