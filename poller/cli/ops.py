"""Operator commands: ``config check``.

``config check`` loads the configuration exactly as ``run`` and ``tick`` do
(flags, environment, file, defaults), checks that the tokenizer it names
loads offline, and prints every resolved value as TOML, secrets masked, so
the output can be read, diffed or saved as a starting config.  A broken file
is one line on stderr and exit code 78 (``EX_CONFIG``), the code the systemd
unit in ``memory-lane/`` treats as "don't restart".  ``--connect`` then tries
what the configuration points at (database, wiki, summarizer endpoint) and
exits 75 (``EX_TEMPFAIL``) if any of them could not be reached.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import click

from poller import errors, tokens

from poller.config import SECTIONS, Config, warnings
from poller.config import load as load_config
from poller.cli import App, common, pass_app
from poller.secure import mask_text, mask_url


@click.group("config")
def config_group() -> None:
    """Check and show the configuration."""


@config_group.command("check")
@click.option("--config", "path", metavar="PATH", type=click.Path(dir_okay=False),
              help="The TOML file to check (default: the global --config, then "
                   "MOOD_POLLER_CONFIG, then none).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the resolved values as JSON, with a \"sources\" map (where each "
                   "value came from).")
@click.option("--connect", is_flag=True,
              help="Also try the database (open, SELECT 1), the wiki (fetch the dials page) and "
                   "the summarizer endpoint, each within its configured timeout; one line per "
                   "check, and exit 75 if any failed.")
@pass_app
@click.pass_context
def check(ctx: click.Context, app: App, path: str | None, as_json: bool, connect: bool) -> None:
    """Validate a config file and print the resolved values (secrets masked).

    Values that came from the environment or a flag are marked (# from
    MOOD_POLLER_DB).  A broken value is one line and exit 78; a secret
    written in the file, or a file holding one that every user may read, is
    a warning on stderr.
    """
    cfg = load_config(path, db_url=app._db_url) if path else app.config
    check_database_url(cfg)
    try:
        tokens.encoding(cfg.encoding)
    except errors.TokenizerError as exc:
        # tiktoken's own message runs to several lines; an operator needs the first.
        raise errors.TokenizerError(str(exc).strip().splitlines()[0]) from exc
    from poller.turns import sandbox

    for warning in [*warnings(cfg), *bridge_warnings(cfg),
                    sandbox.state(cfg.poller.sandbox).warning()]:
        if warning:
            common.echo(f"mood-poller: warning: {warning}", err=True)
    resolved = sectioned(cfg)
    results = connect_checks(cfg) if connect else []
    if as_json:
        out = {**resolved, "sources": dict(sorted(cfg.sources.items())),
               "sandbox": sandbox.describe(cfg.poller.sandbox)}
        if connect:
            out["connect"] = [{"check": r.name, "status": r.status, "detail": r.detail}
                              for r in results]
        common.echo_json(out)
    else:
        click.echo(f"# config OK: {cfg.source or 'no config file (defaults and environment)'}")
        click.echo(render_toml(resolved, cfg.sources))
        if connect:
            click.echo("")
            for r in results:
                common.echo(f"# {r.line()}")
    failed = [r.name for r in results if r.status == "failed"]
    if failed:
        common.echo(f"mood-poller: cannot reach {', '.join(failed)}", err=True)
        if any(r.lasting for r in results if r.status == "failed"):
            ctx.exit(errors.StoreError.exit_code)  # 78: only the operator can fix it
        ctx.exit(errors.StoreBusy.exit_code)  # 75: it may work when tried again


def bridge_warnings(cfg: Config) -> list[str]:
    """Every ``[bridges.*]`` section of the config file checked as its bridge checks it
    (ConfigError, exit 78, for a wrong one); what is only missing here, as warnings."""
    if not cfg.source:
        return []
    import tomllib

    from poller.bridges import matrix

    with open(cfg.source, "rb") as fh:  # load() read it already: it is there and valid
        data = tomllib.load(fh)
    return matrix.validate(data, cfg.source)


def check_database_url(cfg: Config) -> None:
    """ConfigError (exit 78), one line with the URL masked, if SQLAlchemy cannot read it."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        make_url(cfg.db_url)
    except (ArgumentError, ValueError, TypeError):
        where = cfg.sources.get("database.url", "default")
        origin = f" (from {where})" if where not in ("default", "file") else ""
        raise errors.ConfigError(f"config: database.url{origin} is not a database URL: "
                                 f"{mask_url(cfg.db_url)!r}") from None


def sectioned(cfg: Config) -> dict[str, dict]:
    """The resolved values in the config file's own layout, secrets and passwords masked."""
    from poller.store import db

    masked = cfg.masked()
    out = {"database": {"url": db.safe_url(cfg.db_url)},
           "tokenizer": {"encoding": masked["encoding"]}}
    for section in SECTIONS:
        # Any URL (the summarizer's, the wiki's) may carry a password or a key too.
        out[section] = {key: mask_url(value) if isinstance(value, str) and "://" in value else value
                        for key, value in masked[section].items()}
    return out


def render_toml(sections: dict[str, dict], sources: dict[str, str] | None = None) -> str:
    """*sections* as TOML; a value that came from the environment or a flag has a
    trailing ``# from MOOD_POLLER_DB``-style comment."""
    sources = sources or {}
    blocks = []
    for name, values in sections.items():
        lines = [f"[{name}]"]
        for key, v in values.items():
            origin = sources.get(f"{name}.{key}", "default")
            tail = "" if origin in ("default", "file") else f"  # from {origin}"
            lines.append(f"{key} = {_toml_value(v)}{tail}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value), ensure_ascii=False)  # a valid TOML basic string


# -- config check --connect ----------------------------------------------------------------------

@dataclass(frozen=True)
class Reached:
    """One --connect check: ok, failed or skipped, and a line saying why (secrets masked)."""

    name: str
    status: str  # ok | failed | skipped
    detail: str
    lasting: bool = False  # failed for a cause that waiting will not remove (exit 78, not 75)

    def line(self) -> str:
        if self.status == "failed":
            return f"{self.name}: failed: {self.detail}"
        return f"{self.name}: {self.status} ({self.detail})"


def connect_checks(cfg: Config) -> list[Reached]:
    return [reach_database(cfg), reach_wiki(cfg), reach_summarizer(cfg), reach_mail(cfg)]


def reach_database(cfg: Config) -> Reached:
    """Open the database and run SELECT 1; a SQLite file that is not there yet is not made."""
    from pathlib import Path

    from sqlalchemy.engine import make_url

    from poller.store import db

    where = db.safe_url(cfg.db_url)
    parsed = make_url(cfg.db_url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database and database != ":memory:" and not database.startswith("file:") \
                and not Path(database).expanduser().exists():
            return Reached("database", "failed", f"no database file at {database} "
                                                 "(`mood-poller init` creates it)", lasting=True)
    try:
        engine = db.make_engine(cfg.db_url, create=False)  # connects and runs SELECT 1
    except errors.PollerError as exc:
        return Reached("database", "failed", mask_text(str(exc)),
                       lasting=exc.exit_code == errors.StoreError.exit_code)
    engine.dispose()
    return Reached("database", "ok", f"{where} answered SELECT 1")


def reach_wiki(cfg: Config) -> Reached:
    """Fetch the dials page within wiki.timeout; skipped with no wiki.site."""
    if not cfg.wiki.site:
        return Reached("wiki", "skipped", "no wiki configured (wiki.site is empty)")
    from wiki_rules.source import build_wiki
    from wiki_rules.wiki import PageMissing

    wiki = build_wiki(cfg.wiki)
    try:
        page = wiki.fetch(cfg.wiki.title)
    except PageMissing:
        return Reached("wiki", "ok", f"{mask_url(wiki.site)} answered, but {cfg.wiki.title!r} "
                                     "does not exist yet (`mood-poller dials --seed-page` "
                                     "creates it)")
    except errors.WikiError as exc:
        lines = str(exc).strip().splitlines() or ["no reason given"]
        return Reached("wiki", "failed", mask_text(lines[0]))
    return Reached("wiki", "ok", f"{cfg.wiki.title!r} revision {page.revid} from "
                                 f"{mask_url(wiki.site)}")


def reach_summarizer(cfg: Config) -> Reached:
    """An HTTP GET of the endpoint's model list within summarizer.timeout; skipped unless
    summarizer.kind is llm.  Any answer but a refused key or a server error is ok."""
    sc = cfg.summarizer
    if sc.kind != "llm":
        return Reached("summarizer", "skipped", f"summarizer.kind is {sc.kind}, not llm")
    import httpx

    base = sc.url.rstrip("/")
    url = (base if base.endswith("/v1") else base + "/v1") + "/models"
    shown = mask_url(url)
    headers = {"Authorization": f"Bearer {sc.api_key}"} if sc.api_key else {}
    try:
        with httpx.Client(timeout=sc.timeout) as client:
            response = client.get(url, headers=headers)
    except httpx.TimeoutException:
        return Reached("summarizer", "failed", f"{shown} gave no answer within {sc.timeout:g}s")
    except httpx.HTTPError as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return Reached("summarizer", "failed", f"{shown} is unreachable: {mask_text(reason)}")
    code = response.status_code
    if code in (401, 403):
        return Reached("summarizer", "failed", f"{shown} answered HTTP {code}: the API key "
                                               "(summarizer.api_key) was refused")
    if code >= 500:
        return Reached("summarizer", "failed", f"{shown} answered HTTP {code}")
    return Reached("summarizer", "ok", f"{shown} answered HTTP {code}")


def reach_mail(cfg: Config) -> Reached:
    """Connect to the mail server (TLS verified) and log in, then leave: nothing is sent.
    It checks that the server answers and takes the login, not that mail is delivered."""
    if not cfg.mail.host:
        return Reached("mail", "skipped", "no mail server configured (mail.host is empty)")
    import smtplib

    from poller.schedules import mail

    where = f"{cfg.mail.host}:{cfg.mail.port}"
    try:
        with mail.connect(cfg.mail):
            pass
    except (OSError, smtplib.SMTPException) as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return Reached("mail", "failed", f"{where}: {mask_text(reason)}")
    return Reached("mail", "ok", f"{where} answered" + (" and took the login" if cfg.mail.user
                                                        else "; nothing was sent"))


COMMANDS = [config_group]
