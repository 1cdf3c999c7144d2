"""The operator's kit: ``config check``, the example config, systemd units, the cron line, logs.

Here, the pure part (no database, no process); the rest sits under the same name
in the other layers.
"""

from __future__ import annotations

import configparser
import dataclasses
import fnmatch
import json
import shlex
import tomllib

import pytest

from support import units
from support.cli import Cli
from support.machine import REPO
from poller import config

KIT = REPO / "memory-lane"
EXAMPLE = KIT / "config.example.toml"


# -- config check -------------------------------------------------------------------------------

def test_config_check_without_a_file_prints_the_defaults_as_toml(sqlite_url):
    out = Cli(sqlite_url)("config", "check").out
    assert out.startswith("# config OK: no config file")
    resolved = tomllib.loads(out)
    assert resolved["poller"]["interval"] == 1.0
    assert resolved["database"]["url"] == sqlite_url
    assert resolved["summarizer"]["kind"] == "extractive"


def test_config_check_masks_secrets(tmp_path, monkeypatch):
    path = tmp_path / "c.toml"
    path.write_text('[summarizer]\napi_key = "sk-very-secret"\n'
                    '[database]\nurl = "postgresql+psycopg://mood:pw-secret@db.example.org/moods"\n')
    monkeypatch.setenv("MOOD_POLLER_WIKI_BOT_PASSWORD", "hunter2")
    r = Cli()("config", "check", "--config", str(path))
    for secret in ("sk-very-secret", "pw-secret", "hunter2"):
        assert secret not in r.out
    resolved = tomllib.loads(r.out)
    assert resolved["summarizer"]["api_key"] == "***"
    assert resolved["wiki"]["bot_password"] == "***"
    assert resolved["database"]["url"] == "postgresql+psycopg://mood:***@db.example.org/moods"
    as_json = json.loads(Cli()("config", "check", "--config", str(path), "--json").out)
    assert as_json["summarizer"]["api_key"] == "***"


def test_config_check_takes_the_global_config_option_too(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("[poller]\ninterval = 2\n")
    out = Cli(config=str(path))("config", "check").out
    assert f"# config OK: {path}" in out
    assert tomllib.loads(out)["poller"]["interval"] == 2.0


@pytest.mark.parametrize("body, message", [
    ("[poller]\ninterval = \"fast\"\n", "poller.interval must be float"),
    ("[poller]\nintervall = 1\n", "unknown option poller.intervall"),
    ("[pollers]\n", "unknown section [pollers]"),
    ("[poller\n", "is not valid TOML"),
    ("[summarizer]\nkind = \"llm\"\n", "needs summarizer.url and summarizer.model"),
    ("[wake]\ntodo_pattern = \"https://x/todo\"\n", "must contain {slug}"),
    ("[tokenizer]\nencoding = \"no_such_encoding\"\n", ""),
])
def test_config_check_fails_with_one_line_and_exit_78(tmp_path, body, message):
    path = tmp_path / "bad.toml"
    path.write_text(body)
    r = Cli().fails("config", "check", "--config", str(path))
    assert r.code == 78
    assert len(r.err.strip().splitlines()) == 1
    assert r.err.startswith("mood-poller: ") and message in r.err
    assert r.out == ""


def test_config_check_on_a_missing_file(tmp_path):
    r = Cli().fails("config", "check", "--config", str(tmp_path / "nope.toml"))
    assert r.code == 78 and "cannot read" in r.err


# -- the example config --------------------------------------------------------------------------

def every_option() -> dict[str, dict]:
    """Every option ``poller/config.py`` reads, with its default, in the file's layout."""
    defaults = config.Config()
    out = {"database": {"url": None}, "tokenizer": {"encoding": defaults.encoding}}
    for section, cls in config.SECTIONS.items():
        out[section] = {f.name: getattr(getattr(defaults, section), f.name)
                        for f in dataclasses.fields(cls)}
    return out


def test_the_example_config_covers_every_option_with_its_default():
    example = tomllib.loads(EXAMPLE.read_text())
    wanted = every_option()
    assert {s: sorted(v) for s, v in example.items()} == {s: sorted(v) for s, v in wanted.items()}
    for section, values in wanted.items():
        for key, default in values.items():
            if default is not None:
                assert example[section][key] == default, f"{section}.{key}"
    assert example["database"]["url"] == "sqlite:////var/lib/mood-poller/moods.db"


def test_the_example_config_explains_each_option_in_a_comment():
    lines = EXAMPLE.read_text().splitlines()
    for i, line in enumerate(lines):
        if "=" in line and not line.startswith("#") and not line.startswith("["):
            assert lines[i - 1].startswith("#"), f"no comment above {line!r}"


def test_the_example_config_passes_config_check():
    out = Cli()("config", "check", "--config", str(EXAMPLE)).out
    assert out.startswith(f"# config OK: {EXAMPLE}")
    assert tomllib.loads(out)["poller"]["lease"] == 30.0


# -- systemd units and the cron line ------------------------------------------------------------

def unit(name: str) -> tuple[configparser.RawConfigParser, dict[str, list[str]]]:
    """The unit parsed as INI, and every (section.key -> values) with repeats kept."""
    return units.parse((KIT / name).read_text())


def test_the_service_unit_runs_the_loop_restarts_on_failure_and_is_hardened():
    u, multi = unit("mood-poller.service")
    s = u["Service"]
    # `init`, then the loop in the same main process (see tests/test_kit.py).
    shell, dash_c, script = shlex.split(s["ExecStart"])
    assert (shell, dash_c) == ("/bin/sh", "-c")
    assert script == ("/opt/mood-poller/bin/mood-poller init && "
                      "exec /opt/mood-poller/bin/mood-poller run")
    assert s["Restart"] == "on-failure"
    assert "78" in s["RestartPreventExitStatus"].split()
    assert s["User"] == "mood-poller"
    assert s["NoNewPrivileges"] == "yes" and s["ProtectSystem"] == "strict"
    assert s["PrivateTmp"] == "yes" and s["ProtectHome"] == "yes"
    assert "/var/lib/mood-poller" in s["ReadWritePaths"].split()
    assert s["KillMode"] == "mixed"  # SIGTERM to the poller alone: it ends the turns itself
    assert float(s["TimeoutStopSec"]) > config.PollerConfig().shutdown_grace + 10
    assert "MOOD_POLLER_CONFIG=/etc/mood-poller/config.toml" in multi["Service.Environment"]
    assert u["Install"]["WantedBy"] == "multi-user.target"
    assert "agent" in (KIT / "mood-poller.service").read_text().lower()  # the note on agents' needs


def test_the_timer_and_oneshot_pair_run_tick():
    svc, _ = unit("mood-poller-tick.service")
    assert svc["Service"]["Type"] == "oneshot"
    assert svc["Service"]["ExecStart"].split()[-1] == "tick"
    assert svc["Service"]["User"] == "mood-poller"
    assert svc["Service"]["ProtectSystem"] == "strict"
    timer, _ = unit("mood-poller-tick.timer")
    t = timer["Timer"]
    assert t["Unit"] == "mood-poller-tick.service"
    assert "OnUnitInactiveSec" in t or "OnCalendar" in t
    assert timer["Install"]["WantedBy"] == "timers.target"
    assert "Service" not in timer


def test_the_kit_files_ship_in_the_wheel():
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    globs = cfg["options.package_data"]["poller.kit"].replace(",", " ").split()
    for path in KIT.iterdir():
        if path.name == "__pycache__":
            continue
        assert any(fnmatch.fnmatch(path.name, g) for g in globs), path.name


def test_every_package_of_the_source_ships_in_the_wheel():
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    listed = set(cfg["options"]["packages"].split())
    found = {".".join(p.parent.relative_to(REPO).parts)
             for root in ("poller", "wiki_rules") for p in (REPO / root).rglob("__init__.py")
             if "__pycache__" not in p.parts}
    found.discard("poller.kit")  # from memory-lane/, by package_dir
    assert found - listed == set()
