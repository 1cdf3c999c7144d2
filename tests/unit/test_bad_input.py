"""Bad input from outside: one line on stderr naming the problem, a non-zero exit,
no traceback, and the database exactly as it was.

Here, the pure part (no database, no process); the rest sits under the same name
in the other layers.
"""

from __future__ import annotations


import pytest

from support.cli import Cli


# -- non-finite and huge seconds ----------------------------------------------------------------

@pytest.mark.parametrize("body,message", [
    ("[poller]\ninterval = nan\n", "poller.interval must be a finite number"),
    ("[poller]\ninterval = inf\n", "poller.interval must be a finite number"),
    ("[wiki]\ntimeout = -inf\n", "wiki.timeout must be a finite number"),
    ("[poller]\nlook_timeout = 1e300\n", "poller.look_timeout must be at most"),
    ("[wake]\nprompt_cap_chars = 99999999999999999999\n", ""),
])
def test_config_values_must_be_finite(tmp_path, sqlite_url, body, message):
    path = tmp_path / "config.toml"
    path.write_text(body)
    for args in (("config", "check"), ("mood", "list")):
        r = Cli(sqlite_url, str(path)).fails(*args)
        assert r.code == 78 and message in r.err and len(r.err.strip().splitlines()) == 1


def test_a_binary_config_file_is_one_line_and_exit_78(tmp_path, sqlite_url):
    path = tmp_path / "config.toml"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe[wiki]\n")
    for args in (("config", "check"), ("init",)):
        r = Cli(sqlite_url, str(path)).fails(*args)
        assert r.code == 78 and "is not UTF-8 text" in r.err
        assert len(r.err.strip().splitlines()) == 1
