"""The operator's kit (memory-lane/): its systemd units and cron line parsed and verified,
throwaway system users and roots to run them in, and commands run as that user."""

from __future__ import annotations

import configparser
import grp
import os
import pwd
import random
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from support import units, users
from support.machine import REPO, unavailable


KIT = REPO / "memory-lane"


UNITS = sorted(p.name for p in KIT.iterdir() if p.suffix in (".service", ".timer"))


BINARY = "/opt/mood-poller/bin/mood-poller"  # where the units and the cron line expect it


USER = "mood-poller"


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


def tmpfiles(root: Path) -> None:
    need("systemd-tmpfiles")
    r = subprocess.run(["systemd-tmpfiles", "--create", f"--root={root}",
                        str(KIT / "mood-poller.tmpfiles")], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr


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
