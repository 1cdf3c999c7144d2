"""The operator's kit installed as the README's Operations steps say: systemd units that
``systemd-analyze verify`` accepts and that restart on exit 75 but not 78, the service user
from ``mood-poller.sysusers``, its folders from ``mood-poller.tmpfiles`` (readable by that
user, where the old ``install -d -m 750`` layout was not), the cron line (reads the env
file, dates every log line) and its logrotate snippet.

Everything runs without a running systemd: ``systemd-analyze verify`` on copies of the
units, ``systemd-sysusers`` and ``systemd-tmpfiles`` with ``--root`` on a temporary tree.
The tests run as root and switch to a throwaway system user where a user's view matters.

Here, the pure part (no database, no process); the rest sits under the same name
in the other layers.
"""

from __future__ import annotations
from support.kit import BINARY, KIT, UNITS, USER, cron_job, parse_unit


# -- systemd-analyze verify -----------------------------------------------------------------------

def test_there_are_units_to_verify():
    assert {"mood-poller.service", "mood-poller-tick.service", "mood-poller-tick.timer"} <= set(UNITS)


# -- the service restarts on 75, not on 78 --------------------------------------------------------

def test_the_tick_unit_and_timer_go_together():
    svc, _ = parse_unit((KIT / "mood-poller-tick.service").read_text())
    timer, _ = parse_unit((KIT / "mood-poller-tick.timer").read_text())
    assert timer["Timer"]["Unit"] == "mood-poller-tick.service"
    assert svc["Service"]["ExecStart"] == f"{BINARY} tick"


# -- the cron line and its log --------------------------------------------------------------------

def test_the_cron_line_is_one_cron_can_run():
    env, user, command = cron_job()
    assert user == USER  # /etc/cron.d format: the user field
    assert "%" not in command  # cron would turn it into a newline
    assert env["SHELL"] == "/bin/sh"
    assert env["MOOD_POLLER_CONFIG"] == "/etc/mood-poller/config.toml"
    assert f"{BINARY} tick" in command
