"""``mood-poller demo``: the main job on a throwaway database (see :mod:`poller.demo`)."""

from __future__ import annotations

import click

from poller.cli import common


@click.command()
@click.option("--dir", "directory", metavar="PATH", type=click.Path(file_okay=False),
              help="Where to put the demo database (default: a new temporary directory).")
def demo(directory: str | None) -> None:
    """Play a short scripted conversation through the poller and print each wake and reply.

    Uses its own throwaway SQLite database (never --db) and the bundled
    example agent; no network.
    """
    from poller import demo as demo_mod

    demo_mod.run(directory, echo=common.echo)


COMMANDS = [demo]
