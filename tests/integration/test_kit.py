"""The operator's kit installed as the README's Operations steps say: systemd units that
``systemd-analyze verify`` accepts and that restart on exit 75 but not 78, the service user
from ``mood-poller.sysusers``, its folders from ``mood-poller.tmpfiles`` (readable by that
user, where the old ``install -d -m 750`` layout was not), the cron line (reads the env
file, dates every log line) and its logrotate snippet.

Everything runs without a running systemd: ``systemd-analyze verify`` on copies of the
units, ``systemd-sysusers`` and ``systemd-tmpfiles`` with ``--root`` on a temporary tree.
The tests run as root and switch to a throwaway system user where a user's view matters.

Here, the part on real databases with the CLI in process; the rest sits under the
same name in the other layers.
"""

from __future__ import annotations

import re
import shutil
import stat
import subprocess
from pathlib import Path
from support.kit import EX_CONFIG, KIT, USER, cron_job, need
from support.kit import as_user, root_dir, throwaway_user  # noqa: F401  (fixtures)


# -- as the service user --------------------------------------------------------------------------

def old_layout(root: Path) -> Path:
    """What the old steps made: ``install -d -m 750 /etc/mood-poller``, then ``cp``."""
    folder = root / "etc" / "mood-poller"
    subprocess.run(["install", "-d", "-m", "750", str(folder)], check=True)
    config = folder / "config.toml"
    shutil.copy(KIT / "config.example.toml", config)
    return config


def test_config_check_as_the_service_user_fails_on_the_old_layout(as_user, root_dir):
    config = old_layout(root_dir)
    r = as_user.run(as_user.python + ["-m", "poller", "config", "check", "--config", str(config)],
                    cwd=root_dir)
    assert r.returncode == EX_CONFIG
    assert "Permission denied" in r.stderr and len(r.stderr.strip().splitlines()) == 1


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
