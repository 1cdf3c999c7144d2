"""``tick``, ``run``, ``wakes``, ``why``, ``status`` and ``scram``: the main job."""

from __future__ import annotations

import signal

import click

from poller import errors, law, secure
from poller.cli import App, common, pass_app
from poller.kinds import ANSWERED, WakeKind, WakeStatus, names
from poller.text import money, when


def _poller(app: App, detach: bool, only: str | None = None, without: str | None = None):
    from poller.cycle import loop
    from poller.scope import Scope
    from wiki_rules.source import DialSource

    scope = Scope.parse(only, without)
    if not scope.everything:
        scope.check({m.slug for m in app.store.moods()})
    dials = DialSource.from_config(app.config, app.engine())
    return loop.Poller(app.store, app.config, dials=dials.current, detach=detach, scope=scope)


def scope_options(command):
    """``--moods`` and ``--exclude-moods``: the Moods this poller serves."""
    command = click.option("--exclude-moods", "without", metavar="SLUG,...",
                           help="Serve every Mood but these.")(command)
    return click.option("--moods", "only", metavar="SLUG,...",
                        help="Serve only these Moods (another poller may serve the rest).")(command)


@click.command()
@common.now_option
@click.option("--wait", is_flag=True, help="Return only after the turns it started have settled.")
@click.option("--dry-run", is_flag=True, help="Print the wakes it would send; change nothing.")
@click.option("--log-json", is_flag=True, help="Log lines as JSON (as the global --log-json).")
@click.option("-v", "--verbose", is_flag=True, help="Log repeated decisions too (as the global -v).")
@common.quiet_option
@common.json_meta_option("Print a report of the cycle as JSON: the wakes with their ids, the "
                         "decisions, the posts read, whether the emergency stop held it, what "
                         "was abandoned or set aside.")
@scope_options
@pass_app
def tick(app: App, wait: bool, dry_run: bool, log_json: bool, verbose: bool,
         only: str | None, without: str | None) -> None:
    """Run one cycle of the poller (for cron)."""
    secure.undumpable()  # agents may not read this process's secrets
    app.setup_logging(json_lines=log_json, verbose=verbose, quiet=common.quiet_given(), loop=True)
    as_json = common.json_given()
    at = app.now()
    poller = _poller(app, detach=not wait, only=only, without=without)
    import sqlalchemy as sa

    try:
        report = poller.tick(at, dry_run=dry_run)
    except sa.exc.SQLAlchemyError as exc:
        # The step that failed was rolled back; what committed before it stands
        # (wakes recorded were started), and the next tick carries on.  A busy
        # or unreachable database is temporary (exit 75): cron tries again.
        from poller.cli import database_error

        known = database_error(exc)
        first = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
        unreachable = any(w in first.lower() for w in (
            "could not connect", "connection refused", "server closed the connection",
            "connection timed out", "terminating connection"))
        if isinstance(known, errors.StoreBusy) or unreachable:
            raise errors.StoreBusy(f"the cycle stopped partway (its failed step was rolled "
                                   f"back); try again: {first}") from exc
        raise errors.StoreError(f"the cycle stopped partway (its failed step was rolled back): "
                                f"{first}") from exc
    finally:
        poller.release()
    if as_json:
        if report.started and (wait or not poller.launcher.detaches):
            poller.wait()
        common.echo_json(tick_report(report, dry_run))
        return
    if not report.started:
        click.echo(f"another poller holds the lock ({report.holder}); nothing done")
        return
    if report.scram:
        click.echo("emergency stop is set: nothing woken (`mood-poller scram --lift` resumes)")
    for w in report.wakes:
        if dry_run:
            common.echo(f"--- would wake {w.agent} in {w.mood} ({w.kind}, tools {w.tools}, "
                       f"answers {w.answers or '-'})")
            common.echo(w.text)
        else:
            common.echo(f"woke {w.agent} in {w.mood}: {w.kind} (wake {w.wake_id}, tools {w.tools})")
    if wait or not poller.launcher.detaches:
        poller.wait()  # turns run inside this process, or --wait asked for them
    if dry_run:
        click.echo(f"dry run: {len(report.wakes)} wake(s), nothing changed")


def tick_report(report, dry_run: bool) -> dict:
    """``tick --json``: what one cycle did."""
    return {
        "started": report.started,
        "holder": report.holder or None,  # the poller holding the lock when not started
        "dry_run": dry_run,
        "scram": report.scram,
        "posts_read": report.posts_read,
        "signins_read": report.signins_read,
        "due": report.due,
        "recovered": report.recovered,
        "abandoned": report.abandoned,
        "quarantined": report.quarantined,
        "wakes": [{"id": w.wake_id, "agent": w.agent, "mood": w.mood, "kind": w.kind,
                   "tools": w.tools, "answers": list(w.answers),
                   **({"text": w.text} if dry_run else {})} for w in report.wakes],
        "decisions": [{"agent": agent, "mood": mood, "kind": kind, "code": code}
                      for agent, mood, kind, code in report.decisions],
    }


@click.command()
@click.option("--interval", type=common.SECONDS, default=None, metavar="SECONDS",
              help="Seconds between cycles (default: poller.interval, 1 s).")
@click.option("--log-json", is_flag=True, help="Log lines as JSON (as the global --log-json).")
@click.option("-v", "--verbose", is_flag=True, help="Log repeated decisions too (as the global -v).")
@common.quiet_option
@common.now_option
@scope_options
@pass_app
def run(app: App, interval: float | None, log_json: bool, verbose: bool, only: str | None,
        without: str | None) -> None:
    """Run the poller until SIGTERM or SIGINT (for systemd)."""
    secure.undumpable()  # agents may not read this process's secrets
    app.setup_logging(json_lines=log_json, verbose=verbose, quiet=common.quiet_given(), loop=True)
    interval = app.config.poller.interval if interval is None else interval
    if interval <= 0:
        raise errors.UserError("--interval must be positive")
    from poller.clock import Clock

    clock = Clock.starting_at(app.now()) if app.clock.fixed else app.clock  # --now checked
    poller = _poller(app, detach=False, only=only, without=without)
    from poller.store import bell

    stop = bell.Stop()  # set from the signal handler: no lock may be taken there
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    import logging

    logging.getLogger("poller").info("poller %s running every %gs, serving %s Moods",
                                     poller.holder, interval, poller.scope.describe(),
                                     extra={"action": "run_started"})
    from poller.turns import sandbox

    sandbox.log_warning(app.config.poller.sandbox)
    poller.run(interval, stop, clock)
    logging.getLogger("poller").info("poller stopped", extra={"action": "run_stopped"})


@click.group(invoke_without_command=True)
@click.option("--mood", metavar="SLUG", help="Only this Mood.")
@click.option("--agent", metavar="HANDLE", help="Only this agent.")
@click.option("--kind", type=click.Choice(names(WakeKind)), help="Only this kind.")
@click.option("--status", type=click.Choice(names(WakeStatus)), help="Only wakes in this state.")
@click.option("--since", metavar="ISO8601", help="Only wakes recorded at or after this time.")
@click.option("--limit", type=common.WHOLE, default=50, show_default=True, help="How many, newest first.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def wakes(ctx: click.Context, mood: str | None, agent: str | None, kind: str | None,
          status: str | None, since: str | None, limit: int, as_json: bool) -> None:
    """List recent wakes ('wakes show ID' prints one in full)."""
    if ctx.invoked_subcommand is not None:
        return
    from poller import observe
    from poller.text import parse_time

    app: App = ctx.obj
    since_at = parse_time(since, "--since") if since else None
    rows = observe.wakes(app.store, mood=mood, agent=agent, kind=kind, limit=limit,
                         status=status, since=since_at)
    if as_json:
        common.echo_json(rows)
        return
    common.table([[w["id"], when(w["created_at"]), w["agent"], w["mood"], w["kind"], w["tools"],
                   w["status"], ",".join(map(str, w["answers"])) or "-"] for w in rows],
                 ["ID", "AT", "AGENT", "MOOD", "KIND", "TOOLS", "STATUS", "ANSWERS"])


@wakes.command("show")
@click.argument("wake_id", type=common.WHOLE)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def wakes_show(app: App, wake_id: int, as_json: bool) -> None:
    """Print the full text of wake WAKE_ID."""
    from poller import observe

    w = observe.wake(app.store, wake_id)
    if as_json:
        common.echo_json(w)
        return
    common.echo(f"wake {w['id']}: {w['agent']} in {w['mood']}, {w['kind']}, tools {w['tools']}, "
               f"{w['status']}, dials {w['dial_source']}, {w['prompt_tokens']} tokens")
    u = w.get("usage") or {}
    spent = ", ".join(filter(None, [
        u.get("tokens_in") is not None and f"{u['tokens_in']} tokens in",
        u.get("tokens_out") is not None and f"{u['tokens_out']} out",
        u.get("cost_usd") is not None and money(u["cost_usd"])]))
    if spent:
        common.echo(f"turn: {spent}")
    if w["error"]:
        common.echo(f"note: {w['error']}")
    if w.get("progress"):
        common.echo(f"now: {w['progress']}")
    for a in w.get("approvals") or ():
        by = f" by {a['decided_by'] or 'an operator'} ({a['via']})" if a["via"] in (
            "post", "page", "cli", "matrix") else ""
        why = f": {a['reason']}" if a["reason"] else ""
        common.echo(f"approval #{a['id']}: {a['tool']} ({a['input']}) {a['status']}{by}{why}")
    common.echo(w["text"])


@click.command()
@click.argument("handle_arg", metavar="[HANDLE SLUG]", required=False)
@click.argument("slug_arg", metavar="", required=False)
@click.option("--agent", "handle", metavar="HANDLE", help="The agent (or give HANDLE).")
@click.option("--mood", "slug", metavar="SLUG", help="The Mood (or give SLUG).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@common.now_option
@pass_app
def why(app: App, handle_arg: str | None, slug_arg: str | None, handle: str | None,
        slug: str | None, as_json: bool) -> None:
    """Why did (or didn't) HANDLE wake in SLUG? The latest decision per kind.

    Name them as HANDLE SLUG or as --agent HANDLE --mood SLUG.
    """
    from poller import observe

    handle = common.one_of(handle_arg, handle, "HANDLE", "--agent")
    slug = common.one_of(slug_arg, slug, "SLUG", "--mood")

    answer = observe.why(app.store, slug, handle, app.now())
    if as_json:
        common.echo_json(answer)
        return
    if answer["scram"]:
        s = answer["scram"]
        common.echo(f"EMERGENCY STOP set by {s['by'] or 'someone'} at {when(s['at'])}: "
                    "nothing wakes")
    if answer["hold"]:
        h = answer["hold"]
        common.echo(f"holding {h['owed']} mention(s) since {when(h['since'])}: {h['reason']}")
    if answer["left_unanswered"]:
        ids = ", ".join(f"#p-{p}" for p in answer["left_unanswered"])
        common.echo(f"left unanswered by a cut-off turn: {ids} (the next mention here or the "
                    f"follow-up answers them)")
    if answer["in_flight"]:
        common.echo(f"at work here now: wake {answer['in_flight']}")
    if answer["away"]:
        common.echo(f"away from the screen: {answer['away']['line']} (left from "
                    f"{answer['away']['mood']})")
    for kind, d in answer["decisions"].items():
        tail = f", next due {when(d['next_due'])}" if d["next_due"] else ""
        seen = f" (x{d['count']}, last {when(d['last_at'])})" if d["count"] > 1 else ""
        turn = d.get("turn")
        ended = ""
        if turn and turn["status"] not in ANSWERED:
            ended = f" -> {turn['status'].replace('_', ' ')}" + (f" ({turn['error']})"
                                                                  if turn["error"] else "")
        elif turn:
            ended = f" -> {turn['status']}"
        common.echo(f"{kind:9} {d['code']}{ended} at {when(d['at'])}{seen}{tail}"
                    + (f": {d['sentence']}" if d["sentence"] else ""))
    if answer["floor"]:
        f = answer["floor"]
        common.echo(f"the floor is @{f['holder']}'s; initiative order now: " + ", ".join(
            f"@{x['agent']} {x['score']:g}" for x in f["order"]))
    if not answer["decisions"]:
        if not answer["first_cycle_run"]:
            common.echo("no decisions yet: the poller has not run its first cycle on this store "
                        "(run `mood-poller tick` or `mood-poller run`)")
        elif answer["mentions_before_first_cycle"]:
            common.echo(f"no decisions yet: {answer['mentions_before_first_cycle']} mention(s) "
                        f"here were posted before the poller's first cycle, and what came "
                        f"before it is history, never answered")
        else:
            common.echo("no decisions yet: nothing has been due for this agent here")
    _unheard(answer.get("untrusted_mentions"))
    for q in answer["quarantined"]:
        common.echo(f"set aside: {q['kind']} {q['ref']} ({q['count']}x, last "
                    f"{when(q['last_at'])}): {q['error']}")
    t = answer["timers"]
    common.echo("timers: " + ", ".join(f"{k} {when(v)}" for k, v in t.items() if v)
                if any(t.values())
               else "timers: none set")


def _unheard(u: dict | None) -> None:
    if u:
        common.echo(f"not heard: {u['count']} mention(s) here by people with trust none "
                    f"(newest: post {u['post_id']} by {u['sender']}); their mentions are just "
                    f"text (`mood-poller person trust HANDLE look` to hear them)")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@common.now_option
@pass_app
def status(app: App, as_json: bool) -> None:
    """Agents (idle / at work / held), turns in flight, holds and next due times."""
    from poller import observe

    from poller.turns import sandbox

    from poller.web.health import bridge_facts

    st = observe.status(app.store, app.now())
    st["sandbox"] = sandbox.describe(app.config.poller.sandbox)
    st["bridges"] = bridge_facts(app.store, app.now())
    if as_json:
        common.echo_json(st)
        return
    common.echo(sandbox.line(app.config.poller.sandbox))
    if st["scram"]:
        common.echo(f"EMERGENCY STOP set by {st['scram']['by'] or 'someone'} at "
                    f"{when(st['scram']['at'])}")
    for a in st["agents"]:
        where = ", ".join(a["at_work"]) or "-"
        held = ", ".join(f"{h['mood']} ({h['reason']})" for h in a["held"]) or "-"
        out = f" ({a['away']['line']})" if a["away"] else ""
        common.echo(f"{a['handle']}: {a['state']}{out}; at work in {where}; holding in {held}; "
                    f"{a['owed']} mention(s) owed"
                    + (f", {a['left_unanswered']} left unanswered by a cut-off turn"
                       if a["left_unanswered"] else "")
                    + _spent_line(a["spent_24h"]))
    common.echo(f"turns in flight: {len(st['in_flight'])}")
    for w in st["in_flight"]:
        doing = f": {w['progress']}" if w["progress"] else ""
        common.echo(f"  wake {w['id']} {w['agent']} in {w['mood']} ({w['kind']}) {w['status']} "
                    f"since {when(w['since'])}{doing}")
    for a in st["approvals"]:
        common.echo(f"waiting for approval: #{a['id']} {a['agent']} in {a['mood']} asks for "
                    f"{a['tool']} ({a['input']}), since {when(a['asked_at'])}; "
                    f"`mood-poller approve {a['id']}` or `deny {a['id']}`")
    for q in st["quarantined"]:
        where = f" in {q['mood']}" if q["mood"] else ""
        common.echo(f"set aside: {q['kind']} {q['ref']}{where} ({q['count']}x, last "
                    f"{when(q['last_at'])}): {q['error']}")
    common.echo("next due: " + (", ".join(f"{d['agent']}@{d['mood']} {when(d['due_at'])}"
                                          for d in st["next_due"]) or "nothing"))
    for d in st["scheduled"]:
        common.echo(f"scheduled: {d['what']} {d['agent']}@{d['mood']} {d['local']}")
    for u in st["undelivered"]:
        item = "mail" if u["what"] == "mail" else f"outbox item ({u['what']})"
        common.echo(f"undelivered: {item} {u['id']} to {u['to']} {u['status']} ({u['event']}): "
                    f"{u['error']}")
    for p in st["pollers"]:
        common.echo(f"poller {p['holder']} serves {p['serves']} (last cycle {when(p['at'])})")
    from poller.web.health import bridge_detail

    for b in st["bridges"]:
        common.echo(f"bridge {b['bridge']} {b['state']}"
                    + (f" ({b['holder']}) serves {b['serves']}" if b["holder"] else "")
                    + f": {bridge_detail(b)}")
    for slug, holders in st["served_by"].items():
        common.echo(f"  {slug}: {', '.join(holders) or 'no running poller'}")


@click.command()
@click.option("--lift", is_flag=True, help="Lift the emergency stop.")
@click.option("--by", metavar="HANDLE", help="Who is setting or lifting it.")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON: whether the stop is set, lifted, and how many turns it ended.")
@common.now_option
@pass_app
def scram(app: App, lift: bool, by: str | None, as_json: bool) -> None:
    """Emergency stop: wake nothing anywhere and end running turns."""
    from poller import observe

    if lift:
        lifted = observe.lift_scram(app.store, app.now())
        if as_json:
            common.echo_json({"scram": False, "lifted": lifted, "turns_ended": 0})
            return
        click.echo("emergency stop lifted; what was owed is still owed" if lifted
                   else "no emergency stop was set")
        return
    ended = observe.set_scram(app.store, by, app.now())
    if as_json:
        common.echo_json({"scram": True, "lifted": False, "turns_ended": ended})
        return
    click.echo(f"emergency stop set; {ended} running turn(s) ended")


COMMANDS = [tick, run, wakes, why, status, scram]


def _spent_line(spent: dict) -> str:
    """What an agent's turns of the last 24 hours cost, where anything was counted."""
    if not (spent["tokens_in"] or spent["tokens_out"] or spent["usd"]):
        return ""
    return (f"; last 24 h: {spent['tokens_in']:,} tokens in, {spent['tokens_out']:,} out, "
            f"{money(spent['usd'])}")
