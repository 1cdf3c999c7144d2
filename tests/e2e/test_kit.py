"""The operator's kit installed as the README's Operations steps say: systemd units that
``systemd-analyze verify`` accepts and that restart on exit 75 but not 78, the service user
from ``mood-poller.sysusers``, its folders from ``mood-poller.tmpfiles`` (readable by that
user, where the old ``install -d -m 750`` layout was not), the cron line (reads the env
file, dates every log line) and its logrotate snippet.

Everything runs without a running systemd: ``systemd-analyze verify`` on copies of the
units, ``systemd-sysusers`` and ``systemd-tmpfiles`` with ``--root`` on a temporary tree.
The tests run as root and switch to a throwaway system user where a user's view matters.

Here, the part run as processes; the rest sits under the same name in the other
layers.
"""

from __future__ import annotations

import configparser
import os
import pwd
import re
import shlex
import shutil
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from support.cli import Cli
from support.machine import REPO
from support.kit import (BINARY, EX_CONFIG, EX_TEMPFAIL, KIT, UNITS, USER, cron_job,
                         installed_script, need, parse_unit, tmpfiles, verify)
from support.kit import as_user, root_dir, throwaway_user  # noqa: F401  (fixtures)

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d) ")
@pytest.fixture
def closed_port():
    """A 127.0.0.1 port that refuses connections: bound, never listening."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


# -- systemd-analyze verify -----------------------------------------------------------------------

def test_systemd_analyze_verify_accepts_every_unit(tmp_path):
    need("systemd-analyze")
    assert verify(tmp_path, {name: (KIT / name).read_text() for name in UNITS}) == []


def test_systemd_analyze_verify_here_would_catch_a_broken_unit(tmp_path):
    """The check above is worth something on this machine: it speaks up about a bad key
    and about a command that is not there."""
    need("systemd-analyze")
    service = (KIT / "mood-poller.service").read_text()
    assert any("NoSuchKey" in line for line in
               verify(tmp_path, {"mood-poller.service":
                                 service.replace("[Service]\n", "[Service]\nNoSuchKey=1\n")}))
    assert any("/nonexistent/mood-poller" in line for line in
               verify(tmp_path, {"mood-poller-tick.service":
                                 (KIT / "mood-poller-tick.service").read_text()
                                 .replace(BINARY, "/nonexistent/mood-poller")}))


# -- the service restarts on 75, not on 78 --------------------------------------------------------

def restarts(unit: configparser.RawConfigParser, code: int) -> bool:
    """Whether systemd restarts the service after its main process exits with *code*
    (systemd.service(5): Restart=, RestartPreventExitStatus=, RestartForceExitStatus=)."""
    s = unit["Service"]
    prevent = s.get("RestartPreventExitStatus", "").split()
    force = s.get("RestartForceExitStatus", "").split()
    if str(code) in prevent:
        return False
    if str(code) in force:
        return True
    success = code == 0 or str(code) in s.get("SuccessExitStatus", "").split()
    return {"no": False, "always": True, "on-success": success,
            "on-failure": not success, "on-abnormal": False,
            "on-abort": False, "on-watchdog": False}[s.get("Restart", "no")]


def exec_start(tmp_path: Path, text: str, **env: str) -> tuple[list[str], dict[str, str], str]:
    """The unit's ExecStart= argv, environment and working directory as systemd would start
    it, the paths it names moved into *tmp_path*; *env* as if from its EnvironmentFile=."""
    config = tmp_path / "config.toml"
    if not config.exists():
        shutil.copy(KIT / "config.example.toml", config)
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    moved = (text.replace(BINARY, installed_script())
             .replace("/etc/mood-poller/config.toml", str(config))
             .replace("/var/lib/mood-poller", str(state)))
    unit, multi = parse_unit(moved)
    environ = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8"}
    for assignment in multi.get("Service.Environment", []):
        for item in shlex.split(assignment):
            key, _, value = item.partition("=")
            environ[key] = value
    environ.update(env)
    return shlex.split(unit["Service"]["ExecStart"]), environ, unit["Service"]["WorkingDirectory"]


def run_exec_start(tmp_path: Path, text: str, **env: str) -> subprocess.CompletedProcess:
    argv, environ, cwd = exec_start(tmp_path, text, **env)
    return subprocess.run(argv, env=environ, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_the_service_restarts_when_postgresql_is_away_and_not_on_a_broken_config(tmp_path,
                                                                                  closed_port):
    text = (KIT / "mood-poller.service").read_text()
    unit, multi = parse_unit(text)
    s = unit["Service"]
    # RestartPreventExitStatus= looks only at the main process: nothing that can exit 78
    # may run before it.
    assert not any(BINARY in v for key in ("Service.ExecStartPre", "Service.ExecStartPost",
                                           "Service.ExecCondition") for v in multi.get(key, []))
    assert "init" in s["ExecStart"] and s["ExecStart"].rstrip("'\"").endswith(" run")
    assert float(s["RestartSec"]) >= 1
    assert unit["Unit"].get("StartLimitIntervalSec") == "0"  # a long outage never ends the retries

    away = run_exec_start(tmp_path, text, MOOD_POLLER_DB=f"postgresql://mood@127.0.0.1:{closed_port}/m")
    assert away.returncode == EX_TEMPFAIL, away.stderr
    assert "cannot open database" in away.stderr
    assert restarts(unit, away.returncode)

    (tmp_path / "config.toml").write_text("[poller\n")
    broken = run_exec_start(tmp_path, text)
    assert broken.returncode == EX_CONFIG, broken.stderr
    assert not restarts(unit, broken.returncode)
    assert restarts(unit, 1) and not restarts(unit, 0)


def test_the_service_starts_init_then_becomes_the_loop(tmp_path):
    """With the database there, ExecStart= creates the schema, then the shell's process
    becomes ``run``: the SIGTERM systemd sends to the main process stops the poller."""
    db = tmp_path / "state" / "moods.db"
    argv, environ, cwd = exec_start(tmp_path, (KIT / "mood-poller.service").read_text(),
                                    MOOD_POLLER_DB=f"sqlite:///{db}")
    main = subprocess.Popen(argv, env=environ, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert "schema empty ->" in main.stdout.readline()
        for line in main.stderr:  # the loop's first log line says it runs
            if "running every" in line:
                break
        else:
            pytest.fail("the loop never said it runs")
        with open(f"/proc/{main.pid}/cmdline", "rb") as fh:
            assert fh.read().split(b"\0")[-2:] == [b"run", b""]  # no shell left in between
        main.terminate()
        assert main.wait(timeout=60) == 0
    finally:
        if main.poll() is None:
            main.kill()
            main.wait()
    assert db.exists()


# -- the service user and its folders --------------------------------------------------------------

def owner_mode(path: Path) -> tuple[int, int, str]:
    st = path.stat()
    return st.st_uid, st.st_gid, oct(stat.S_IMODE(st.st_mode))


def test_sysusers_creates_the_system_user_the_units_run_as(root_dir):
    need("systemd-sysusers")
    (root_dir / "etc").mkdir()
    r = subprocess.run(["systemd-sysusers", f"--root={root_dir}", str(KIT / "mood-poller.sysusers")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    (entry,) = [line.split(":") for line in (root_dir / "etc" / "passwd").read_text().splitlines()
                if line.startswith(f"{USER}:")]
    assert entry[5] == "/var/lib/mood-poller" and entry[6] == "/usr/sbin/nologin"
    uid, gid = int(entry[2]), int(entry[3])
    assert 0 < uid < 1000 and 0 < gid < 1000  # a system user
    assert f"{USER}:x:{gid}:" in (root_dir / "etc" / "group").read_text()
    for name in [u for u in UNITS if u.endswith(".service")]:
        unit, _ = parse_unit((KIT / name).read_text())
        assert unit["Service"]["User"] == USER and unit["Service"]["Group"] == USER


def test_tmpfiles_lays_out_the_folders_and_the_env_file(root_dir):
    etc = root_dir / "etc"
    etc.mkdir()
    (etc / "passwd").write_text(f"{USER}:x:990:991::/var/lib/mood-poller:/usr/sbin/nologin\n")
    (etc / "group").write_text(f"{USER}:x:991:\n")
    tmpfiles(root_dir)
    assert owner_mode(etc / "mood-poller") == (0, 991, "0o750")
    assert owner_mode(etc / "mood-poller" / "env") == (0, 991, "0o640")
    assert owner_mode(root_dir / "var" / "lib" / "mood-poller") == (990, 991, "0o750")
    assert owner_mode(root_dir / "var" / "log" / "mood-poller") == (990, 991, "0o750")
    # Running it again puts modes back and keeps what the operator wrote.
    env = etc / "mood-poller" / "env"
    env.write_text("MOOD_POLLER_DB=sqlite:////var/lib/mood-poller/moods.db\n")
    env.chmod(0o644)
    os.chown(etc / "mood-poller", 0, 0)
    tmpfiles(root_dir)
    assert owner_mode(env) == (0, 991, "0o640") and "MOOD_POLLER_DB" in env.read_text()
    assert owner_mode(etc / "mood-poller") == (0, 991, "0o750")
    # The paths the units and the cron line use are the ones it makes.
    for name in [u for u in UNITS if u.endswith(".service")]:
        unit, _ = parse_unit((KIT / name).read_text())
        assert unit["Service"]["WorkingDirectory"] == "/var/lib/mood-poller"
        assert unit["Service"]["EnvironmentFile"].lstrip("-") == "/etc/mood-poller/env"
    cron = (KIT / "mood-poller.cron").read_text()
    assert "/etc/mood-poller/env" in cron and ">>/var/log/mood-poller/tick.log" in cron


# -- as the service user --------------------------------------------------------------------------

def documented_layout(root: Path, user: pwd.struct_passwd) -> Path:
    """The README's layout under *root*: the shipped tmpfiles.d lines, with ``mood-poller``
    standing for *user*, and the example config installed mode 0640 root:mood-poller."""
    etc = root / "etc"
    etc.mkdir()
    (etc / "passwd").write_text(f"{USER}:x:{user.pw_uid}:{user.pw_gid}::/var/lib/mood-poller:"
                                "/usr/sbin/nologin\n")
    (etc / "group").write_text(f"{USER}:x:{user.pw_gid}:\n")
    tmpfiles(root)
    config = etc / "mood-poller" / "config.toml"
    shutil.copy(KIT / "config.example.toml", config)
    os.chown(config, 0, user.pw_gid)
    config.chmod(0o640)
    return config


def test_config_check_as_the_service_user_on_the_documented_layout(as_user, root_dir):
    config = documented_layout(root_dir, as_user.user)
    r = as_user.run(as_user.python + ["-m", "poller", "config", "check", "--config", str(config)],
                    cwd=root_dir)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"# config OK: {config}")
    env = root_dir / "etc" / "mood-poller" / "env"
    r = as_user.run(["sh", "-c", f'cat "{env}" && ! test -w "{env}" && ! test -w "{config}"'])
    assert r.returncode == 0, r.stderr  # it reads both, and can change neither


# -- the cron line and its log --------------------------------------------------------------------

def test_the_cron_line_reads_the_env_file_and_dates_every_log_line(as_user, root_dir, closed_port):
    """The job as cron runs it (sh, as the service user, on the documented layout)."""
    user = as_user.user
    config = documented_layout(root_dir, user)
    state = root_dir / "var" / "lib" / "mood-poller"
    log = root_dir / "var" / "log" / "mood-poller" / "tick.log"
    env_file = root_dir / "etc" / "mood-poller" / "env"
    cron_env, _, command = cron_job()
    command = (command.replace(BINARY, shlex.join(as_user.python + ["-m", "poller"]))
               .replace("/etc/mood-poller", str(root_dir / "etc" / "mood-poller"))
               .replace("/var/log/mood-poller", str(log.parent)))
    # cron's own variables, then the file's (with the paths moved)
    environ = {"PATH": "/usr/bin:/bin", "HOME": str(state), "LOGNAME": user.pw_name,
               "LANG": "C.UTF-8"}
    environ.update({k: v.replace("/etc/mood-poller/config.toml", str(config))
                    for k, v in cron_env.items()})

    def cron() -> None:
        r = as_user.run([cron_env["SHELL"], "-c", command], cwd=state, env=environ)
        assert r.returncode == 0 and r.stdout == r.stderr == "", r.stdout + r.stderr

    # 1. The database named only in the env file is away: one dated error line.
    env_file.write_text(f"MOOD_POLLER_DB='postgresql://mood:pw@127.0.0.1:{closed_port}/moods'\n")
    cron()
    first = log.read_text().splitlines()
    assert len(first) == 1 and "cannot open database postgresql://mood:***@127.0.0.1" in first[0]

    # 2. A database with a mention waiting: the poller's log lines and tick's own output.
    url = f"sqlite:///{state / 'moods.db'}"
    admin = Cli(url)
    admin("init")
    admin("mood", "add", "lobby")
    admin("person", "add", "ada", "--trust", "full")
    admin("agent", "add", "bot", "--command", "echo hello")
    admin("tick")
    admin("post", "lobby", "--as", "ada", "@bot are you there?")
    for path in state.iterdir():
        os.chown(path, user.pw_uid, user.pw_gid)
    env_file.write_text(f"MOOD_POLLER_DB={url}\nMOOD_POLLER_LAUNCH=thread\n")
    cron()
    lines = log.read_text().splitlines()
    assert lines[0] == first[0]
    later = "\n".join(lines[1:])
    assert "bot in lobby: mention woke" in later  # a log line of the poller's
    assert "woke bot in lobby: mention" in later  # a line tick prints on stdout
    undated = [line for line in lines if not RFC3339.match(line)]
    assert undated == []
    assert "hello" in admin("posts", "lobby").out  # the turn ran as the service user


# -- a unit for every long-running process -------------------------------------------------------

LONG_RUNNING = {"mood-poller.service": ["run"], "mood-poller-serve.service": ["serve"],
                "mood-poller-serve-with-poller.service": ["serve", "--with-poller"],
                "mood-poller-matrix.service": ["bridge", "matrix"],
                "mood-poller-webhooks.service": ["bridge", "webhooks"]}


@pytest.mark.parametrize("name", sorted(LONG_RUNNING))
def test_every_long_running_process_has_a_unit_that_restarts_on_75_not_78(name):
    unit, _ = parse_unit((KIT / name).read_text())
    words = shlex.split(unit["Service"]["ExecStart"].split("exec ")[-1].rstrip("'"))
    assert words[0] == BINARY and words[1:1 + len(LONG_RUNNING[name])] == LONG_RUNNING[name]
    assert unit["Service"]["User"] == USER
    assert restarts(unit, EX_TEMPFAIL) and not restarts(unit, EX_CONFIG)
    assert unit["Install"]["WantedBy"] == "multi-user.target"


def test_the_one_process_unit_excludes_the_other_pollers():
    unit, _ = parse_unit((KIT / "mood-poller-serve-with-poller.service").read_text())
    assert set(unit["Unit"]["Conflicts"].split()) == {"mood-poller.service",
                                                      "mood-poller-tick.timer",
                                                      "mood-poller-serve.service"}


@pytest.mark.parametrize("name", ["mood-poller-serve.service",
                                  "mood-poller-serve-with-poller.service"])
def test_a_serve_unit_starts_the_front_door(tmp_path, name):
    import json
    import urllib.error
    import urllib.request

    from support.waiting import wait_for

    db = tmp_path / "state" / "moods.db"
    text = (KIT / name).read_text().replace("--port 8470", "--port 0 --json")
    argv, environ, cwd = exec_start(tmp_path, text, MOOD_POLLER_DB=f"sqlite:///{db}")
    main = subprocess.Popen(argv, env=environ, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = main.stdout.readline()
        while line and not line.startswith("{"):  # init's line comes first
            line = main.stdout.readline()
        url = json.loads(line)["url"]
        assert json.loads(line)["with_poller"] == ("--with-poller" in text)
        def health() -> tuple[int, dict]:
            try:
                with urllib.request.urlopen(url.rstrip("/") + "/healthz", timeout=30) as resp:
                    return resp.status, json.loads(resp.read())
            except urllib.error.HTTPError as exc:  # 503: no poller has cycled (yet)
                return exc.code, json.loads(exc.read())

        if "--with-poller" in text:  # healthy once its own poller has cycled
            wait_for(lambda: health()[0] == 200, what="its poller to cycle")
        else:  # the front door alone answers, and says no poller cycles here
            status, body = health()
            assert (status, body["database"]) == (503, "ok")
        main.terminate()
        assert main.wait(timeout=60) == 0
    finally:
        if main.poll() is None:
            main.kill()
            main.wait()


def test_serve_with_poller_beside_run_on_sqlite_says_the_lease_is_held(tmp_path):
    from support.runs import start_run, stop
    from support.waiting import wait_for

    url = f"sqlite:///{tmp_path / 'moods.db'}"
    Cli(url)("init")
    run = start_run(url, tmp_path, now=None)
    serve = None
    try:
        wait_for(lambda: "running every" in (tmp_path / "run.log").read_text(),
                 what="run to start")
        log = open(tmp_path / "serve.log", "w")
        serve = subprocess.Popen([sys.executable, "-m", "poller", "--db", url, "serve",
                                  "--with-poller", "--port", "0"], stdout=log, stderr=log,
                                 cwd=tmp_path)
        said = wait_for(lambda: [line for line in (tmp_path / "serve.log").read_text()
                                 .splitlines() if "another poller holds the lease" in line],
                        what="serve to say the lease is held")
        assert said[0].endswith("; waiting")  # one line, naming the holder
    finally:
        if serve is not None:
            serve.terminate()
            serve.wait(timeout=60)
        stop(run)


# -- README's "Running under systemd", as written ----------------------------------------------


def readme_systemd_lines() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("### Running under systemd", 1)[1].split("\n### ", 1)[0]
    return re.findall(r"(?m)^    (\S.*)$", section)


def run_into(root: Path, line: str) -> subprocess.CompletedProcess:
    """*line* with /etc under *root*; systemctl offline (``--root``): nothing here runs a
    service manager, so ``daemon-reload`` and ``--now`` (which only a running one does)
    are left out, and what enabling leaves behind is what the test checks."""
    line = line.replace(" /etc/", f" {root}/etc/")
    if line.startswith("systemctl daemon-reload && "):
        line = line.split("&& ", 1)[1]
    if line.startswith("systemctl "):
        line = line.replace("systemctl ", f"systemctl --root={root} ", 1).replace(" --now", "")
    env = dict(os.environ, KIT=str(KIT))
    return subprocess.run(line, shell=True, env=env, capture_output=True, text=True, timeout=60)


def test_the_readmes_systemd_lines_install_and_enable_the_units(tmp_path):
    need("systemctl")
    lines = readme_systemd_lines()
    wanted = [l for l in lines if not l.startswith("journalctl ")]
    assert any(l.startswith("install -m 644 $KIT/mood-poller.service") for l in wanted)
    root = tmp_path / "root"
    for d in ("etc/systemd/system", "etc/cron.d", "etc/logrotate.d"):
        (root / d).mkdir(parents=True)
    for line in wanted:
        r = run_into(root, line)
        assert r.returncode == 0, f"{line}: {r.stderr}"
    wants = root / "etc/systemd/system/multi-user.target.wants/mood-poller.service"
    assert wants.is_symlink()
    assert (root / "etc/cron.d/mood-poller").read_text() == (KIT / "mood-poller.cron").read_text()
    assert (root / "etc/logrotate.d/mood-poller").exists()
    # Every unit the table names is in the kit, and enabling each combination works.
    text = (REPO / "README.md").read_text().split("### Running under systemd", 1)[1]
    table = text.split("Which units to enable", 1)[1].split("\n\n", 2)[1]
    named = set(re.findall(r"`(mood-poller[\w-]*\.(?:service|timer))`", table))
    assert {"mood-poller.service", "mood-poller-serve-with-poller.service",
            "mood-poller-serve.service", "mood-poller-matrix.service",
            "mood-poller-webhooks.service"} <= named
    for unit in sorted(named):
        assert (KIT / unit).exists(), unit
        one = tmp_path / unit
        (one / "etc/systemd/system").mkdir(parents=True)
        shutil.copy(KIT / unit, one / "etc/systemd/system" / unit)
        r = subprocess.run(["systemctl", f"--root={one}", "enable", unit], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, f"{unit}: {r.stderr}"
