"""``dials``: the dial wording agents are told, where it came from, and seeding its page."""

from __future__ import annotations

import click

from poller.cli import App, common, pass_app
from poller.cli.common import echo_json


@click.command()
@click.option("--refresh", is_flag=True, help="Fetch the page now, whatever the cache's age.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--seed-page", is_flag=True,
              help="Create the wiki page from the shipped starting text, as the configured "
                   "bot user (password from the config file or "
                   "MOOD_POLLER_WIKI_BOT_PASSWORD).")
@click.option("--force", is_flag=True, help="With --seed-page: replace the page if it exists.")
@common.now_option
@pass_app
@click.pass_context
def dials(ctx: click.Context, app: App, refresh: bool, as_json: bool, seed_page: bool,
          force: bool) -> None:
    """Show what each discretion and verbosity level tells agents, and its source."""
    from wiki_rules import report

    if force and not seed_page:
        raise click.UsageError("--force only goes with --seed-page")
    if seed_page:
        revid = report.seed_page(app.config, overwrite=force)
        click.echo(f"wrote {app.config.wiki.title} revision {revid}", err=as_json)
        refresh = True
    status, ok = report.show(app.config, app.engine(), app.now(), refresh=refresh)
    if as_json:
        echo_json(report.as_dict(status))
    else:
        common.echo(report.render(status))
    if not ok:
        why = str(status.error or ("no wiki configured (wiki.site is empty)" if not status.site
                                   else "the wiki did not answer")).strip().splitlines()
        common.echo(f"mood-poller: the dials page could not be refreshed: "
                    f"{why[0] if why else 'no reason given'}", err=True)
        ctx.exit(1)


COMMANDS = [dials]
