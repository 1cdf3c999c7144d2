"""``mood-poller demo``: the main job on a throwaway database (see :mod:`poller.demo`)."""

from __future__ import annotations

import click

from poller.cli import common


@click.command()
@click.option("--dir", "directory", metavar="PATH", type=click.Path(file_okay=False),
              help="Where to put the demo database, and keep it (default: a temporary "
                   "directory, removed when the demo ends).")
@click.option("--serve", "serve", is_flag=True,
              help="Then leave the web page running on the demo's Moods (127.0.0.1), with a "
                   "sign-in link, until Ctrl-C.")
@click.option("--port", type=click.IntRange(0, 65535), default=8470, show_default=True,
              help="--serve: the port (0: any free one).")
@click.option("--model", metavar="PROVIDER:MODEL",
              help="Add sage, a language model agent (as `agent add --model`), which answers "
                   "one more question at the end; its key comes from the environment.")
@click.option("--base-url", metavar="URL", help="--model: the provider's base URL.")
@click.option("--api-key-env", metavar="VAR", help="--model: the variable holding the key.")
def demo(directory: str | None, serve: bool, port: int, model: str | None,
         base_url: str | None, api_key_env: str | None) -> None:
    """Play a short scripted conversation through the poller and print each wake and reply.

    Uses its own throwaway SQLite database (never --db) and the bundled
    example agent; no network (but to the model's provider, with --model).
    """
    import poller.demo
    from poller import errors
    from poller.cli.people import model_options

    options = None
    if model is not None:
        from poller.llm import providers

        missing = providers.parse(model, base_url or "", api_key_env or "").missing_key()
        if missing:
            raise errors.UserError(f"demo --model: {missing}, or give --base-url for a local "
                                   f"server")
        options = {k: v for k, v in model_options(model, base_url, api_key_env).items() if v}
    import shutil
    import tempfile

    made = directory is None
    where = tempfile.mkdtemp(prefix="mood-poller-demo-") if made else directory
    try:
        summary = poller.demo.run(where, echo=common.echo, model=options, kept=not made)
        if serve:
            poller.demo.serve(summary["db_url"], port, echo=click.echo)
    finally:
        if made:  # a throwaway: nothing of it stays behind
            shutil.rmtree(where, ignore_errors=True)


COMMANDS = [demo]
