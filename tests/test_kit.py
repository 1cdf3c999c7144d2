"""The operator's kit installed as the README's Operations steps say: systemd units that
``systemd-analyze verify`` accepts and that restart on exit 75 but not 78, the service user
from ``mood-poller.sysusers``, its folders from ``mood-poller.tmpfiles`` (readable by that
user, where the old ``install -d -m 750`` layout was not), the cron line (reads the env
file, dates every log line) and its logrotate snippet.

Everything runs without a running systemd: ``systemd-analyze verify`` on copies of the
units, ``systemd-sysusers`` and ``systemd-tmpfiles`` with ``--root`` on a temporary tree.
The tests run as root and switch to a throwaway system user where a user's view matters.
"""

from __future__ import annotations

import configparser
import grp
import os
import pwd
import random
import re
import shlex
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from support import units
from support import users
from support.cli import Cli
from support.machine import REPO, unavailable

KIT = REPO / "memory-lane"
UNITS = sorted(p.name for p in KIT.iterdir() if p.suffix in (".service", ".timer"))
BINARY = "/opt/mood-poller/bin/mood-poller"  # where the units and the cron line expect it
USER = "mood-poller"
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d) ")
EX_TEMPFAIL, EX_CONFIG = 75, 78


def need(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{', '.join(missing)} missing in CI: scripts/test.sh must install it")
        unavailable(f"needs {', '.join(missing)}")


def installed_script() -> str:
    """The ``mood-poller`` script of the Python running the tests."""
    beside = Path(sys.executable).parent / "mood-poller"
    found = str(beside) if os.access(beside, os.X_OK) else shutil.which("mood-poller")
    if not found:
        unavailable("no installed mood-poller script")
    return found


def parse_unit(text: str) -> tuple[configparser.RawConfigParser, dict[str, list[str]]]:
    """The unit as INI, and every ``Section.Key`` with its values in order (keys repeat)."""
    return units.parse(text)


@pytest.fixture
def closed_port():
    """A 127.0.0.1 port that refuses connections: bound, never listening."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


# -- systemd-analyze verify -----------------------------------------------------------------------

def verify(tmp_path: Path, texts: dict[str, str]) -> list[str]:
    """What ``systemd-analyze verify`` says about *texts* (name -> unit), the binary the
    units name pointed at the installed script.  Nothing said means nothing wrong."""
    script = installed_script()
    paths = []
    for name, text in texts.items():
        (tmp_path / name).write_text(text.replace(BINARY, script))
        paths.append(str(tmp_path / name))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYSTEMD_")}
    r = subprocess.run(["systemd-analyze", "verify", *paths], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    said = [line for line in (r.stdout + r.stderr).splitlines() if line.strip()]
    assert (r.returncode == 0) or said, "verify failed and said nothing"
    return said if said or r.returncode == 0 else [f"exit {r.returncode}"]


def test_there_are_units_to_verify():
    assert {"mood-poller.service", "mood-poller-tick.service", "mood-poller-tick.timer"} <= set(UNITS)


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


def test_the_tick_unit_and_timer_go_together():
    svc, _ = parse_unit((KIT / "mood-poller-tick.service").read_text())
    timer, _ = parse_unit((KIT / "mood-poller-tick.timer").read_text())
    assert timer["Timer"]["Unit"] == "mood-poller-tick.service"
    assert svc["Service"]["ExecStart"] == f"{BINARY} tick"


# -- the service user and its folders --------------------------------------------------------------

def temp_root() -> Path:
    """A directory every user may enter (pytest's tmp_path is root's alone)."""
    root = Path(tempfile.mkdtemp(prefix="mood-kit-", dir="/tmp"))
    root.chmod(0o755)
    return root


@pytest.fixture
def root_dir():
    root = temp_root()
    yield root
    shutil.rmtree(root, ignore_errors=True)


def ids(root: Path, name: str) -> tuple[int, int]:
    """uid and gid of *name* in *root*'s own /etc/passwd."""
    for line in (root / "etc" / "passwd").read_text().splitlines():
        fields = line.split(":")
        if fields[0] == name:
            return int(fields[2]), int(fields[3])
    raise LookupError(name)


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
    for name in ("mood-poller.service", "mood-poller-tick.service"):
        unit, _ = parse_unit((KIT / name).read_text())
        assert unit["Service"]["User"] == USER and unit["Service"]["Group"] == USER


def tmpfiles(root: Path) -> None:
    need("systemd-tmpfiles")
    r = subprocess.run(["systemd-tmpfiles", "--create", f"--root={root}",
                        str(KIT / "mood-poller.tmpfiles")], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr


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
    for name in ("mood-poller.service", "mood-poller-tick.service"):
        unit, _ = parse_unit((KIT / name).read_text())
        assert unit["Service"]["WorkingDirectory"] == "/var/lib/mood-poller"
        assert unit["Service"]["EnvironmentFile"].lstrip("-") == "/etc/mood-poller/env"
    cron = (KIT / "mood-poller.cron").read_text()
    assert "/etc/mood-poller/env" in cron and ">>/var/log/mood-poller/tick.log" in cron


# -- as the service user --------------------------------------------------------------------------

@dataclass
class AsUser:
    """Runs commands as a throwaway system user, this test session's Python reachable."""

    user: pwd.struct_passwd
    prefix: list[str]  # argv prefix: run what follows as the user
    python: list[str]  # argv of the Python (with the project) as the user sees it

    def run(self, argv: list[str], **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run(self.prefix + argv, capture_output=True, text=True, timeout=180,
                              **kwargs)


@pytest.fixture
def throwaway_user():
    """A system user with a group of its own, created for one test and removed after it."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        unavailable("creating a user and switching to it needs root on Linux")
    need("useradd", "userdel", "setpriv")
    name = f"mpkit{random.randrange(100000)}"
    subprocess.run(["useradd", "--system", "--user-group", "--no-create-home",
                    "--shell", "/usr/sbin/nologin", name], check=True, capture_output=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)
        try:
            grp.getgrnam(name)
            subprocess.run(["groupdel", name], check=False, capture_output=True)
        except KeyError:
            pass


@pytest.fixture
def as_user(throwaway_user):
    """How to run this session's Python as the throwaway user.

    Where the interpreter lives somewhere the user cannot enter (a pyenv under /root,
    say), it is bind-mounted into a shared directory in a private mount namespace.
    """
    user = throwaway_user
    shared = temp_root()
    try:
        prefix, python = users.python_as(user, shared, groups="--init-groups")
        yield AsUser(user, prefix, python)
    finally:
        shutil.rmtree(shared, ignore_errors=True)


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


def old_layout(root: Path) -> Path:
    """What the old steps made: ``install -d -m 750 /etc/mood-poller``, then ``cp``."""
    folder = root / "etc" / "mood-poller"
    subprocess.run(["install", "-d", "-m", "750", str(folder)], check=True)
    config = folder / "config.toml"
    shutil.copy(KIT / "config.example.toml", config)
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


def test_config_check_as_the_service_user_fails_on_the_old_layout(as_user, root_dir):
    config = old_layout(root_dir)
    r = as_user.run(as_user.python + ["-m", "poller", "config", "check", "--config", str(config)],
                    cwd=root_dir)
    assert r.returncode == EX_CONFIG
    assert "Permission denied" in r.stderr and len(r.stderr.strip().splitlines()) == 1


# -- the cron line and its log --------------------------------------------------------------------

def cron_job() -> tuple[dict[str, str], str, str]:
    """The cron file's variables, the job's user and its command."""
    env, jobs = {}, []
    for line in (KIT / "mood-poller.cron").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", line):
            key, _, value = line.partition("=")
            env[key] = value
        else:
            jobs.append(line)
    (job,) = jobs
    fields = job.split(None, 6)
    assert fields[:5] == ["*"] * 5  # every minute
    return env, fields[5], fields[6]


def test_the_cron_line_is_one_cron_can_run():
    env, user, command = cron_job()
    assert user == USER  # /etc/cron.d format: the user field
    assert "%" not in command  # cron would turn it into a newline
    assert env["SHELL"] == "/bin/sh"
    assert env["MOOD_POLLER_CONFIG"] == "/etc/mood-poller/config.toml"
    assert f"{BINARY} tick" in command


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


# -- logrotate -------------------------------------------------------------------------------------

def test_the_logrotate_snippet_rotates_the_cron_log(root_dir):
    need("logrotate")
    _, _, command = cron_job()
    (path,) = re.findall(r">>(\S+)", command)
    text = (KIT / "mood-poller.logrotate").read_text()
    assert text.count(path + " {") == 1  # it names the file the cron line writes
    logs = root_dir / "log"
    logs.mkdir(mode=0o750)
    log = logs / "tick.log"
    log.write_text("2026-01-05T09:00:00+00:00 INFO a line\n")
    conf = root_dir / "logrotate.conf"
    conf.write_text(text.replace(path, str(log)).replace(f"{USER} {USER}", "root root"))
    r = subprocess.run(["logrotate", "--force", "--state", str(root_dir / "state"), str(conf)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert (logs / "tick.log.1").read_text().endswith("a line\n")  # delaycompress: not yet .gz
    assert log.exists() and log.read_text() == ""
    assert oct(stat.S_IMODE(log.stat().st_mode)) == "0o640"
