"""scripts/import_graph.py: the project's own modules import each other without cycles."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
import textwrap
from types import SimpleNamespace

from support.machine import REPO

SCRIPT = REPO / "scripts" / "import_graph.py"


def load_script():
    """The script as a module, loaded from its path (scripts/ is no package)."""
    spec = importlib.util.spec_from_file_location("import_graph", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


import_graph = load_script()


def run(*args: str) -> SimpleNamespace:
    """The script's ``main`` run in process, with what it printed and its exit code."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = import_graph.main(list(args))
    return SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


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
