"""Operator commands: ``config check``.

``config check`` loads the configuration exactly as ``run`` and ``tick`` do
(flags, environment, file, defaults), checks that the tokenizer it names
loads offline, and prints every resolved value as TOML, secrets masked, so
the output can be read, diffed or saved as a starting config.  A broken file
is one line on stderr and exit code 78 (``EX_CONFIG``), the code the systemd
unit in ``memory-lane/`` treats as "don't restart".
"""

from __future__ import annotations

import json

import click

from poller import config as config_mod, errors, tokens
from poller.cli import App, common, pass_app
from poller.secure import mask_url


@click.group("config")
def config_group() -> None:
    """Check and show the configuration."""


@config_group.command("check")
@click.option("--config", "path", metavar="PATH", type=click.Path(dir_okay=False),
              help="The TOML file to check (default: the global --config, then "
                   "MOOD_POLLER_CONFIG, then none).")
@click.option("--json", "as_json", is_flag=True, help="Print the resolved values as JSON.")
@pass_app
def check(app: App, path: str | None, as_json: bool) -> None:
    """Validate a config file and print the resolved values (secrets masked)."""
    cfg = config_mod.load(path, db_url=app._db_url) if path else app.config
    try:
        tokens.encoding(cfg.encoding)
    except errors.TokenizerError as exc:
        # tiktoken's own message runs to several lines; an operator needs the first.
        raise errors.TokenizerError(str(exc).strip().splitlines()[0]) from exc
    resolved = sectioned(cfg)
    if as_json:
        common.echo_json(resolved)
        return
    click.echo(f"# config OK: {cfg.source or 'no config file (defaults and environment)'}")
    click.echo(render_toml(resolved))


def sectioned(cfg: config_mod.Config) -> dict[str, dict]:
    """The resolved values in the config file's own layout, secrets and passwords masked."""
    from poller.store import db

    masked = cfg.masked()
    out = {"database": {"url": db.safe_url(cfg.db_url)},
           "tokenizer": {"encoding": masked["encoding"]}}
    for section in config_mod.SECTIONS:
        # Any URL (the summarizer's, the wiki's) may carry a password or a key too.
        out[section] = {key: mask_url(value) if isinstance(value, str) and "://" in value else value
                        for key, value in masked[section].items()}
    return out


def render_toml(sections: dict[str, dict]) -> str:
    blocks = []
    for name, values in sections.items():
        lines = [f"[{name}]"] + [f"{key} = {_toml_value(v)}" for key, v in values.items()]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value), ensure_ascii=False)  # a valid TOML basic string


COMMANDS = [config_group]
