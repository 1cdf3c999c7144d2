"""scripts/import_graph.py: the project's own modules import each other without cycles."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "import_graph.py"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=120)


def test_the_project_has_no_import_cycles():
    result = run()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "poller.wake.compose -> " in result.stdout
    assert "no import cycles" in result.stdout


def test_type_checking_and_function_local_imports_count(tmp_path):
    package = tmp_path / "poller"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(textwrap.dedent("""\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from poller.b import Thing
        """))
    (package / "b.py").write_text(textwrap.dedent("""\
        def late():
            from . import a
            return a
        """))
    (package / "c.py").write_text("import poller.a\n")
    result = run("--root", str(tmp_path))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "poller.a -> poller.b -> poller.a" in result.stdout
    assert "poller/a.py:4 poller.a imports poller.b (typing)" in result.stdout
    assert "poller/b.py:2 poller.b imports poller.a (local)" in result.stdout
    assert "poller.c" not in result.stdout.split("import cycle")[1]
