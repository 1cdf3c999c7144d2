"""``bridge matrix | webhooks`` and ``outbox [--failed] | outbox retry ID``."""

from __future__ import annotations

import click

from poller.cli import App, common, pass_app


@click.group()
def bridge() -> None:
    """Run a bridge: Matrix rooms as Moods, or signed webhooks."""


@bridge.command("matrix")
@click.option("--config", "bridge_config", metavar="PATH", type=click.Path(dir_okay=False),
              help="The TOML file with the [bridges.matrix] section (default: the global "
                   "--config, or MOOD_POLLER_CONFIG).")
@click.option("--write-registration", "registration", metavar="PATH",
              type=click.Path(dir_okay=False),
              help="Write the appservice registration file for the homeserver (mode 600) "
                   "and exit.")
@click.option("--json", "as_json", is_flag=True, help="With --write-registration: print JSON.")
@common.now_option
@pass_app
def bridge_matrix(app: App, bridge_config: str | None, registration: str | None,
                  as_json: bool) -> None:
    """Bridge Matrix rooms to Moods until SIGTERM or SIGINT."""
    import os

    from poller import config, errors
    from poller.bridges import matrix

    path = bridge_config or app._config_path or os.environ.get(config.ENV_CONFIG)
    if not path:
        raise click.UsageError("give the bridge's config: --config PATH (a TOML file with a "
                               "[bridges.matrix] section)")
    cfg = matrix.load(path)
    try:
        import mautrix  # noqa: F401
        import yaml  # noqa: F401
    except ImportError:
        raise errors.ConfigError("the Matrix bridge needs its libraries: "
                                 "pip install 'mood-poller[matrix]'") from None
    if registration:
        if cfg.mode != "appservice":
            raise click.UsageError("--write-registration is for mode = \"appservice\"")
        matrix.write_registration(cfg, registration)
        if as_json:
            common.echo_json({"registration": registration, "id": cfg.id})
            return
        click.echo(f"wrote {registration}: add it to the homeserver's app_service_config_files")
        return
    from poller.bridges import matrix_service

    matrix_service.main(app.store, cfg, _running_clock(app))


@bridge.command("webhooks")
@click.option("--once", is_flag=True, help="Deliver what is due now, then exit.")
@click.option("--timeout", type=common.SECONDS, default=10.0, show_default=True,
              help="Seconds one request may take (connect, send, answer).")
@click.option("--max-attempts", type=common.WHOLE, default=60, show_default=True,
              help="Attempts before an item is failed (it then waits for `outbox retry`).")
@click.option("--json", "as_json", is_flag=True, help="With --once: print JSON.")
@common.now_option
@pass_app
def bridge_webhooks(app: App, once: bool, timeout: float, max_attempts: int,
                    as_json: bool) -> None:
    """Deliver the Moods' webhooks until SIGTERM or SIGINT."""
    from poller.bridges import webhooks

    n = webhooks.main(app.store, _running_clock(app), once=once, timeout=timeout,
                      max_attempts=max_attempts)
    if once and as_json:
        common.echo_json({"delivered": n})
    elif once:
        click.echo(f"delivered {n} webhook event(s)")


def _running_clock(app: App):
    from poller.clock import Clock

    return Clock.starting_at(app.now()) if app.clock.fixed else app.clock


@click.group(invoke_without_command=True)
@click.option("--failed", is_flag=True, help="Only the items whose attempts ran out.")
@click.option("--limit", type=common.WHOLE, default=50, show_default=True,
              help="How many of the newest items.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def outbox(ctx: click.Context, failed: bool, limit: int, as_json: bool) -> None:
    """What the bridges are to deliver, have delivered, or gave up on."""
    if ctx.invoked_subcommand is not None:
        return
    import poller.store.outbox

    app = ctx.find_object(App)
    items = poller.store.outbox.items(app.store, failed=failed, limit=limit)
    if as_json:
        common.echo_json([i.to_json() for i in items])
        return
    common.table([[str(i.id), i.bridge, i.mood, i.event, i.status, str(i.attempts),
                   i.external_id or "", i.last_error] for i in items],
                 ["ID", "BRIDGE", "MOOD", "EVENT", "STATUS", "TRIES", "SENT AS", "LAST ERROR"])
    counts = poller.store.outbox.counts(app.store)
    click.echo(", ".join(f"{counts.get(s, 0)} {s}" for s in ("pending", "sent", "failed")))


@outbox.command("retry")
@click.argument("item_id", metavar="ID", type=common.WHOLE)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@common.now_option
@pass_app
def outbox_retry(app: App, item_id: int, as_json: bool) -> None:
    """Send the failed outbox item ID again (now, with its attempts reset)."""
    import poller.store.outbox

    item = poller.store.outbox.retry(app.store, item_id, app.now())
    if as_json:
        common.echo_json(item.to_json())
        return
    click.echo(f"outbox item {item.id} is pending again")


COMMANDS = [bridge, outbox]
