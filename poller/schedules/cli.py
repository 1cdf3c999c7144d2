"""``alarm add | list | remove`` and ``checkin setup | status | pause | resume | cancel |
arm | disarm | done | accept``."""

from __future__ import annotations

import click

from poller.cli import App, common, pass_app

TZ_HELP = "An IANA time zone, e.g. Europe/Berlin (required: no naive times)."


def _warn(warnings: list[str]) -> None:
    for w in warnings:
        click.echo(f"warning: {w}", err=True)


# -- alarms --------------------------------------------------------------------------------


@click.group()
def alarm() -> None:
    """Wake an agent in a Mood at a time, in an IANA zone.

    Once (--at), daily (--daily) or by a cron expression (--cron)."""


@alarm.command("add")
@click.option("--agent", required=True, metavar="HANDLE", help="Who is woken.")
@click.option("--mood", required=True, metavar="SLUG", help="Where.")
@click.option("--at", "at", metavar='"YYYY-MM-DD HH:MM"', help="Once, at this local time.")
@click.option("--daily", metavar="HH:MM", help="Every day at this local time.")
@click.option("--cron", metavar='"M H DOM MON DOW"', help="By a five-field cron expression.")
@click.option("--tz", required=True, metavar="ZONE", help=TZ_HELP)
@click.option("--note", default="", help="What the wake reminds the agent of (up to 500 characters).")
@click.option("--lateness-cutoff-minutes", "cutoff", type=int, default=60, show_default=True,
              help="A wake later than this after the firing only says it was noticed late "
                   "(15–4320).")
@click.option("--by", default="operator", help="Who set it, for the record.")
@common.json_option
@common.now_option
@pass_app
def alarm_add(app: App, agent: str, mood: str, at: str | None, daily: str | None,
              cron: str | None, tz: str, note: str, cutoff: int, by: str, as_json: bool) -> None:
    """Add an alarm; warns when a time falls in a daylight-saving gap or repeats."""
    from poller.schedules import alarms
    from poller import errors

    given = [(k, v) for k, v in (("at", at), ("daily", daily), ("cron", cron)) if v is not None]
    if len(given) != 1:
        raise errors.UserError("give exactly one of --at, --daily or --cron")
    view, warnings = alarms.add_named(app.store, agent=agent, mood=mood, now=app.now(),
                                      kind=given[0][0], when=given[0][1], tz=tz, note=note,
                                      set_by=by, cutoff=cutoff)
    _warn(warnings)
    if as_json:
        common.echo_json(dict(view, warnings=warnings))
        return
    common.echo(f"added alarm {view['id']}: {view['kind']} {view['spec']} {view['tz']}, "
                f"first due {view['next']}")


@alarm.command("list")
@click.option("--agent", metavar="HANDLE", help="Only this agent's.")
@click.option("--mood", metavar="SLUG", help="Only in this Mood.")
@click.option("--all", "include_removed", is_flag=True, help="Removed alarms too.")
@common.json_option
@pass_app
def alarm_list(app: App, agent: str | None, mood: str | None, include_removed: bool,
               as_json: bool) -> None:
    """List alarms and when each is next due."""
    from poller.schedules import alarms

    found = alarms.listing(app.store, agent, mood, include_removed)
    if as_json:
        common.echo_json(found)
        return
    common.table([[str(a["id"]), a["agent"], a["mood"], f"{a['kind']} {a['spec']}", a["tz"],
                   a["next"] or ("removed" if a["removed_at"] else "done"), a["note"][:40]]
                  for a in found], ["ID", "AGENT", "MOOD", "WHEN", "ZONE", "NEXT", "NOTE"])


@alarm.command("remove")
@click.argument("alarm_id", type=common.WHOLE)
@common.json_option
@common.now_option
@pass_app
def alarm_remove(app: App, alarm_id: int, as_json: bool) -> None:
    """Remove the alarm ALARM_ID: it fires no more."""
    from poller.schedules import alarms

    view = alarms.remove(app.store, alarm_id, app.now())
    if as_json:
        common.echo_json(view)
        return
    click.echo(f"removed alarm {alarm_id}")


# -- check-in agreements ---------------------------------------------------------------------


@click.group()
def checkin() -> None:
    """Check-in agreements (not an emergency service).

    A person promises to check in by a time; if they miss it their agent tells them, and
    only if they armed it may the agent then write once to one contact who agreed."""


def _show(view: dict, as_json: bool, head: str = "") -> None:
    if as_json:
        common.echo_json(view)
        return
    if head:
        common.echo(head)
    common.echo(f"{view['person']} with {view['agent']} in {view['mood']}: {view['kind']} "
                f"{view['time']} {view['tz']}, {view['status']}")
    common.echo(f"next deadline: {view['next_deadline'] or '-'}")
    for m in view["missed_unprocessed"]:
        common.echo(f"missed (not yet processed): {m}")
    st = view["streak"]
    if st and st["open"]:
        common.echo(f"missed since {st['first_due']} (newest {st['last_due']})"
                    + (f"; grace until {st['grace_until']}" if st["grace_until"] else ""))
    contact = view["contact_email"] or "none"
    common.echo(f"contact: {contact}, {'agreed' if view['consented'] else 'not agreed yet'}; "
                f"contact stage {'armed' if view['armed'] else 'off'}")


@checkin.command("setup")
@click.option("--person", required=True, metavar="HANDLE", help="Who promises to check in.")
@click.option("--agent", required=True, metavar="HANDLE", help="The agent that watches it.")
@click.option("--mood", required=True, metavar="SLUG", help="Where the agent reaches them.")
@click.option("--once", metavar='"YYYY-MM-DD HH:MM"', help="One deadline, local time.")
@click.option("--daily", metavar="HH:MM", help="A deadline every day, local time.")
@click.option("--tz", required=True, metavar="ZONE", help=TZ_HELP)
@click.option("--grace-minutes", "grace", type=int, default=60, show_default=True,
              help="After the person was told, wait this long before the contact stage may "
                   "open (1–1440).")
@click.option("--lateness-cutoff-minutes", "cutoff", type=int, default=120, show_default=True,
              help="A wake later than this after the deadline it answers only says it was "
                   "noticed late (15–4320).")
@click.option("--contact-email", metavar="ADDRESS",
              help="One contact; they get one invitation with a single-use code to agree.")
@common.json_option
@common.now_option
@pass_app
def checkin_setup(app: App, person: str, agent: str, mood: str, once: str | None,
                  daily: str | None, tz: str, grace: int, cutoff: int,
                  contact_email: str | None, as_json: bool) -> None:
    """Set up PERSON's agreement (replacing theirs); the contact stage is off until armed."""
    from poller.schedules import agreements
    from poller import errors

    if (once is None) == (daily is None):
        raise errors.UserError("give exactly one of --once or --daily")
    view = agreements.setup(app.store, person=person, agent=agent, mood=mood,
                            kind="once" if once else "daily", when=once or daily, tz=tz,
                            grace=grace, cutoff=cutoff, contact_email=contact_email, now=app.now())
    _warn(view["warnings"])
    _show(view, as_json, view["not_an_emergency_service"])


def _control(action: str, doc: str):
    @click.option("--person", required=True, metavar="HANDLE", help="Whose agreement.")
    @common.json_option
    @common.now_option
    @pass_app
    def command(app: App, person: str, as_json: bool) -> None:
        from poller.schedules import agreements

        ready = bool(app.config.mail.host)
        _show(agreements.control(app.store, person, action, app.now(), mail_ready=ready), as_json)

    command.__doc__ = doc
    return checkin.command(action)(command)


for _action, _doc in (
        ("pause", "Pause a daily agreement: not a check-in; ends a missed streak, turns the "
                  "contact stage off."),
        ("resume", "Resume a paused agreement (deadlines in the pause are not watched)."),
        ("cancel", "End the agreement and its contact stage (not a check-in)."),
        ("arm", "Turn the contact stage on: needs a contact who agreed, a mail server, and no "
                "missed check-in."),
        ("disarm", "Turn the contact stage off.")):
    _control(_action, _doc)


@checkin.command("status")
@click.option("--person", required=True, metavar="HANDLE", help="Whose agreement.")
@common.json_option
@common.now_option
@pass_app
def checkin_status(app: App, person: str, as_json: bool) -> None:
    """Show PERSON's agreement: next deadline, what is missed, the contact stage."""
    from poller.schedules import agreements

    _show(agreements.status(app.store, person, app.now()), as_json)


@checkin.command("done")
@click.option("--person", required=True, metavar="HANDLE", help="Who checks in.")
@click.option("--for", "for_", required=True, metavar="DEADLINE",
              help='The deadline, as status shows it or as "YYYY-MM-DD HH:MM": the next one '
                   "or the latest that passed.")
@common.json_option
@common.now_option
@pass_app
def checkin_done(app: App, person: str, for_: str, as_json: bool) -> None:
    """A dated check-in: answers the deadline named and closes any missed before it."""
    from poller.schedules import agreements

    view = agreements.done(app.store, person, for_, app.now())
    head = (f"checked in for {view['answered']}" if view["answered"]
            else "answered nothing new")
    _show(view, as_json, head)


@checkin.command("accept")
@common.json_option
@common.now_option
@pass_app
def checkin_accept(app: App, as_json: bool) -> None:
    """The contact agrees: the single-use code from their invitation, read from stdin
    (never from the command line)."""
    import sys

    from poller.schedules import agreements
    from poller import errors

    try:
        code = sys.stdin.buffer.readline().decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise errors.UserError(f"stdin is not valid UTF-8 (byte {exc.start})") from None

    view = agreements.accept(app.store, code, app.now())
    _show(view, as_json, f"{view['contact_email']} agreed to be {view['person']}'s contact")


COMMANDS = [alarm, checkin]
