"""Starting the command line is cheap: what ``--help`` and ``post`` import, and the
shortcuts that keep them light (the command table, the schema check, the tokenizer).

These tests look at *which modules are imported*, never at how long anything takes;
``bench/cli_start.py`` measures the time.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from support.machine import REPO

HEAVY = ("sqlalchemy", "alembic", "tiktoken", "httpx", "mwclient", "jinja2")

# Runs mood-poller commands in one fresh interpreter and prints, as JSON, the heavy
# packages each one left in sys.modules (cumulative, so the first culprit shows).
PROBE = r"""
import contextlib, io, json, sys
from poller.cli import main
heavy = sys.argv[1].split(",")
runs = json.loads(sys.argv[2])
seen = {}
for argv in runs:
    out = io.StringIO()
    code = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in heavy)
    seen[" ".join(argv)] = {"code": code, "heavy": sorted({m.split(".")[0] for m in loaded}),
                            "out": out.getvalue()}
print(json.dumps(seen))
"""


def probe(runs: list[list[str]], env: dict | None = None) -> dict:
    full_env = dict(os.environ, PYTHONPATH=str(REPO), **(env or {}))
    r = subprocess.run([sys.executable, "-c", PROBE, ",".join(HEAVY), json.dumps(runs)],
                       capture_output=True, text=True, cwd=REPO, env=full_env, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def help_runs() -> list[list[str]]:
    from poller.cli import COMMANDS, load_command

    runs = [["--help"]]
    for name, (module, _) in COMMANDS.items():
        runs.append([name, "--help"])
        for sub in getattr(load_command(name, module), "commands", {}):
            runs.append([name, sub, "--help"])
    return runs


def test_help_imports_no_heavy_module():
    seen = probe(help_runs())
    for argv, result in seen.items():
        assert result["code"] == 0, (argv, result["out"])
        assert "Usage:" in result["out"], argv
        assert result["heavy"] == [], f"`mood-poller {argv}` imported {result['heavy']}"


def test_top_level_help_lists_every_command_without_importing_one():
    from poller.cli import COMMANDS

    seen = probe([["--help"]])["--help"]
    listed = [line.split()[0] for line in seen["out"].split("Commands:")[1].splitlines()
              if line.startswith("  ") and not line.startswith("   ")]
    assert listed == sorted(COMMANDS)
    code = ("import sys; from poller.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('poller.cli.')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                       env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=60)
    assert r.stdout.strip().splitlines()[-1] == "[]"  # not even poller.cli.common


def test_post_loads_the_store_and_the_tokenizer_and_nothing_else_heavy(tmp_path):
    url = f"sqlite:///{tmp_path / 'moods.db'}"
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg")}
    setup = probe([["--db", url, "init"], ["--db", url, "mood", "add", "m"],
                   ["--db", url, "person", "add", "p"]], env)
    assert all(r["code"] == 0 for r in setup.values()), setup
    (result,) = probe([["--db", url, "post", "m", "--as", "p", "hello there"]], env).values()
    assert result["code"] == 0, result["out"]
    assert result["out"].strip().splitlines()[0].isdigit()  # then post's note on stderr
    assert result["heavy"] == ["sqlalchemy", "tiktoken"]
    (result,) = probe([["--db", url, "posts", "m", "--limit", "5"]], env).values()
    assert "hello there" in result["out"]
    assert result["heavy"] == ["sqlalchemy"]  # reading counts nothing: no tokenizer


# -- the schema check without Alembic -------------------------------------------


def test_cheap_schema_check_agrees_with_alembic(db_url):
    import sqlalchemy as sa

    from poller import errors
    from poller.store import db

    engine = db.make_engine(db_url)
    try:
        assert db.stamped_revisions(engine) == [] and db.current_revision(engine) is None
        with pytest.raises(errors.StoreError, match="no schema yet"):
            db.check_schema(engine)
        db.upgrade(engine)
        assert db.stamped_revisions(engine) == [db.current_revision(engine)] == [db.head_revision()]
        db.check_schema(engine)
        with engine.begin() as conn:
            conn.execute(sa.text(f"UPDATE {db.VERSION_TABLE} SET version_num = '0001'"))
        assert db.stamped_revisions(engine) == [db.current_revision(engine)] == ["0001"]
        with pytest.raises(errors.StoreError, match="at 0001, not the newest"):
            db.check_schema(engine)
    finally:
        engine.dispose()


# -- the tokenizer: lazy, once per process, the same encoding as tiktoken's -------


def test_the_tokenizer_loads_on_the_first_count_only():
    code = ("import sys; from poller import tokens\n"
            "c = tokens.counter(); assert 'tiktoken' not in sys.modules\n"
            "assert c.count('hello world') == 2 and 'tiktoken' in sys.modules\n"
            "assert tokens.counter() is c and c._enc is tokens.encoding()\n"
            "print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                       env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=60)
    assert r.stdout.strip() == "ok", r.stderr


