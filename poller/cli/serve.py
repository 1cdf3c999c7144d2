"""``serve``: the front door (API, event stream, pages); ``health``: is the poller alive?"""

from __future__ import annotations

import json
import sys

import click

from poller import errors, secure
from poller.cli import App, common, pass_app
from poller.text import when


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (only this machine by default).")
@click.option("--port", type=click.IntRange(0, 65535), default=8470, show_default=True,
              help="Port to listen on (0: any free port, printed at start).")
@click.option("--with-poller", is_flag=True,
              help="Run the poller in this process too (one command for a SQLite deployment).")
@click.option("--interval", type=common.SECONDS, default=None, metavar="SECONDS",
              help="--with-poller: seconds between cycles (default: poller.interval, 1 s).")
@click.option("--posts-per-minute", type=click.IntRange(0), default=30, show_default=True,
              help="How many posts one token may make a minute (429 past it; 0: no limit); "
                   "as many sign-ins and typing signals.")
@click.option("--secure-cookie", is_flag=True,
              help="Mark the session cookie Secure (serving behind TLS: browsers then send it "
                   "over HTTPS only).")
@click.option("--json", "as_json", is_flag=True,
              help="Once listening, print one JSON line on stdout: {\"url\": ...}.")
@common.now_option
@pass_app
def serve(app: App, host: str, port: int, with_poller: bool, interval: float | None,
          posts_per_minute: int, secure_cookie: bool, as_json: bool) -> None:
    """Serve the JSON API, the event stream and the web pages on HOST:PORT.

    People sign in with a token from `mood-poller person token HANDLE`.
    Stops on SIGTERM or SIGINT; with --with-poller, running turns get
    poller.shutdown_grace seconds first, as with `run`.
    """
    if with_poller:
        secure.undumpable()  # agents may not read this process's secrets
    app.setup_logging(loop=with_poller)
    if with_poller:
        from poller.turns import sandbox

        sandbox.log_warning(app.config.poller.sandbox)
    interval = app.config.poller.interval if interval is None else interval
    if interval <= 0:
        raise errors.UserError("--interval must be positive")
    from poller.clock import Clock
    from poller.web import serving

    clock = Clock.starting_at(app.now()) if app.clock.fixed else app.clock
    announce = None
    if as_json:
        announce = lambda url: click.echo(json.dumps({"url": url, "with_poller": with_poller}))  # noqa: E731
    if not _loopback(host):
        click.echo(f"mood-poller: serving on {host}, beyond this machine: put TLS in front "
                   "(and give --secure-cookie)", err=True)
    serving.run(app.store, app.config, clock, host=host, port=port, with_poller=with_poller,
                interval=interval, announce=announce, posts_per_minute=posts_per_minute,
                secure_cookie=secure_cookie)


def _loopback(host: str) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@common.now_option
@pass_app
def health(app: App, as_json: bool) -> None:
    """Is the database answering and a poller cycling? Exit 0 if so, 1 if not (for cron)."""
    import poller.web.health
    from wiki_rules.source import DialSource

    dials = DialSource.from_config(app.config, app.engine(check=False))
    from poller.turns import sandbox

    report = poller.web.health.facts(app.store, app.now(), dials)
    report["sandbox"] = sandbox.describe(app.config.poller.sandbox)
    if as_json:
        common.echo_json(report)
    else:
        common.echo(render(report))
    if not report["ok"]:
        common.echo(f"mood-poller: unhealthy: {problem(report)}", err=True)
        sys.exit(1)


def problem(report: dict) -> str:
    """What is wrong, in one line."""
    from poller.web.health import STALE_INTERVALS

    p = report["poller"]
    if p is None:
        return f"the database: {report['database']}"
    if p["last_cycle_at"] is None:
        return "no poller has recorded a cycle on this database"
    if p["state"] != "ok":
        return (f"the last cycle was {p['age_seconds']:g} s ago, over {STALE_INTERVALS} "
                f"intervals of {p['interval']:g} s")
    down = [b for b in report.get("bridges", []) if b["state"] != "ok"]
    from poller.web.health import bridge_detail

    return "; ".join(f"the {b['bridge']} bridge is {b['state']} ({bridge_detail(b)})"
                     for b in down)


def render(report: dict) -> str:
    lines = [f"database: {report['database']}"]
    p = report["poller"]
    if p is not None:
        if p["last_cycle_at"] is None:
            lines.append("poller:   no cycle recorded here (`serve --with-poller` records "
                         "each; `run` does not yet)")
        else:
            lines.append(f"poller:   {p['state']}: last cycle {max(p['age_seconds'], 0):g} s ago at "
                         f"{when(p['last_cycle_at'])} (every {p['interval']:g} s; took "
                         f"{p['cycle_seconds']:g} s)")
    if report["dials"] is not None:
        lines.append(f"dials:    {report['dials']['source']}")
    from poller.web.health import bridge_detail

    for b in report.get("bridges", []):
        lines.append(f"bridge:   {b['bridge']} {b['state']}: "
                     + (f"{b['serves']}; " if b["last_beat_at"] else "") + bridge_detail(b))
    if report.get("sandbox") is not None:
        from poller.turns import sandbox

        lines.append(sandbox.line(report["sandbox"]["mode"]))
    lines.append("ok" if report["ok"] else "NOT OK")
    return "\n".join(lines)


COMMANDS = [serve, health]
