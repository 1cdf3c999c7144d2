"""The command line is consistent: --json on every listing and acting command (and JSON
whenever it is given), help without reStructuredText markup, usage errors exit 2,
``why`` with or without its option names, ``set --help`` naming every key, and the
``wakes`` filters.

Here, the pure part (no database, no process); the rest sits under the same name
in the other layers.
"""

from __future__ import annotations


import pytest

from support.cli import Cli
from poller import settings
from poller.kinds import WakeKind, WakeStatus
from support.commands import command, every_command

# -- help -----------------------------------------------------------------------------------------

def test_no_help_shows_double_backticks():
    for path, _ in every_command():
        out = Cli()(*path, "--help").out
        assert "Usage:" in out, path
        assert "``" not in out, f"`mood-poller {' '.join(path)} --help` shows ``"


def test_set_help_lists_every_key_with_its_range_and_default():
    out = " ".join(Cli()("set", "--help").out.split())  # unwrapped
    assert "Keys:" in out
    for key in settings.KEYS.values():
        assert f"{key.name} {key.parse.range} (default {key.default}):" in out, key.name
    assert "idle_after 0-604800 seconds (default 3000)" in out
    assert "discretion reserved | normal | chatty (default normal)" in out


def test_the_logging_flags_are_global_options():
    names = {opt for p in command(()).params for opt in p.opts}
    assert {"--log-json", "-v", "--verbose", "-q", "--quiet"} <= names


# -- --json everywhere ----------------------------------------------------------------------------

JSON_COMMANDS = [
    ("tick",), ("preview",), ("scram",), ("wakes",), ("wakes", "show"), ("set",), ("get",),
    ("mood", "add"), ("mood", "list"), ("mood", "archive"), ("person", "add"), ("person", "list"),
    ("agent", "add"), ("agent", "list"), ("post",), ("posts",), ("signin",), ("dials",),
    ("why",), ("status",), ("config", "check"),
]


@pytest.mark.parametrize("path", JSON_COMMANDS, ids=" ".join)
def test_listing_and_acting_commands_take_json(path):
    opts = {opt for p in command(path).params for opt in p.opts}
    assert "--json" in opts


# -- wakes filters --------------------------------------------------------------------------------

def test_the_wakes_filters_offer_every_kind_and_status():
    params = {p.name: p for p in command(("wakes",)).params}
    assert list(params["kind"].type.choices) == [k.value for k in WakeKind]
    assert "cut-off" in params["kind"].type.choices
    assert list(params["status"].type.choices) == [s.value for s in WakeStatus]


# -- logging: global flags, every command ---------------------------------------------------------

def test_every_listing_and_acting_command_takes_json():
    import click

    from poller.cli import cli as root

    missing = []

    def walk(cmd, path):
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(None):
                walk(cmd.get_command(None, name), path + [name])
        elif not any("--json" in getattr(p, "opts", []) for p in cmd.params):
            missing.append(" ".join(path))

    walk(root, [])
    # `run` logs (global --log-json); `demo` is a guided tour printed for people; `mcp`
    # speaks MCP (JSON-RPC) on its stdout.
    assert sorted(missing) == ["demo", "mcp", "run"]
