"""Every command the CLI offers, found by walking its click groups."""

from __future__ import annotations

import click


def every_command() -> list[tuple[tuple[str, ...], click.Command]]:
    from poller.cli import cli

    out = []

    def walk(command: click.Command, path: tuple[str, ...]) -> None:
        out.append((path, command))
        for name in getattr(command, "commands", {}):
            walk(command.commands[name], path + (name,))

    walk(cli, ())
    return out


def command(path: tuple[str, ...]) -> click.Command:
    return dict(every_command())[path]
