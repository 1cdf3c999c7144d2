"""The CLI contract: names, output shapes, and a clear one-line error for bad input.

Here, the pure part (no database, no process); the rest sits under the same name
in the other layers.
"""

from __future__ import annotations


import pytest

from support.cli import Cli


@pytest.mark.parametrize("body,message", [
    ("this is = not toml [", "not valid TOML"),
    ("[wiki]\ntimeout = 'soon'\n", "wiki.timeout must be float"),
    ("[wiki]\ncolour = 'blue'\n", "unknown option wiki.colour"),
    ("[nonsense]\n", "unknown section"),
    ("[summarizer]\nkind = 'llm'\n", "needs summarizer.url"),
])
def test_invalid_config_file(tmp_path, sqlite_url, body, message):
    path = tmp_path / "config.toml"
    path.write_text(body)
    r = Cli(sqlite_url, str(path)).fails("init")
    assert message in r.err
    assert r.code == 78


def test_version_and_help_on_every_command():
    from poller import __version__
    from poller.cli import cli as group

    assert __version__ in Cli()("--version").out
    for name, command in group.commands.items():
        assert "Usage" in Cli()(name, "--help").out
        for sub in getattr(command, "commands", {}):
            assert "Usage" in Cli()(name, sub, "--help").out
