"""``pip install .`` gives a working ``mood-poller`` with its templates and migrations."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
import zipfile

import pytest

from conftest import REPO


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                    "-q", "-w", str(out), str(REPO)], check=True, timeout=300)
    (path,) = out.glob("mood_poller-*.whl")
    return path


def test_wheel_carries_templates_migrations_and_the_kit(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("poller/templates/") and n.endswith(".j2") for n in names)
    assert any(n.startswith("poller/migrations/versions/0001") for n in names)
    assert "poller/migrations/script.py.mako" in names
    assert any(n.startswith("wiki_rules/") for n in names)
    assert "poller/kit/example_agent.py" in names
    assert not any(n.startswith("tests/") for n in names)


def test_wheel_installs_into_a_fresh_venv_and_runs(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    str(wheel)], check=True, timeout=600)
    exe = env_dir / "bin" / "mood-poller"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOOD_POLLER")}
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    env.pop("PYTHONPATH", None)
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
    # The README's main job runs from the installed wheel, with its bundled example agent.
    r = run("demo", "--dir", str(tmp_path / "demo"))
    assert r.returncode == 0, r.stderr
    for kind in ("mention", "consider", "quiet", "arrival"):
        assert f", {kind} (tools" in r.stdout
    assert "REPLY lobby <helper>" in r.stdout
