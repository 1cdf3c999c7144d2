"""``mood-poller demo``: the main job on a throwaway database (see :mod:`poller.demo`)."""

from __future__ import annotations

import click

from poller.cli import common


@click.command()
@click.option("--dir", "directory", metavar="PATH", type=click.Path(file_okay=False),
              help="Where to put the demo database (default: a new temporary directory).")
@click.option("--serve", "serve", is_flag=True,
              help="Then leave the web page running on the demo's Moods (127.0.0.1), with a "
                   "sign-in link, until Ctrl-C.")
@click.option("--port", type=click.IntRange(0, 65535), default=8470, show_default=True,
              help="--serve: the port (0: any free one).")
def demo(directory: str | None, serve: bool, port: int) -> None:
    """Play a short scripted conversation through the poller and print each wake and reply.

    Uses its own throwaway SQLite database (never --db) and the bundled
    example agent; no network.
    """
    import poller.demo

    summary = poller.demo.run(directory, echo=common.echo)
    if serve:
        poller.demo.serve(summary["db_url"], port, echo=click.echo)


COMMANDS = [demo]
