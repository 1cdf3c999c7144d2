"""``person add | list`` and ``agent add | list``."""

from __future__ import annotations

import click

from poller import errors
from poller.cli import App, common, pass_app
from poller.secure import mask_text, mask_url


@click.group()
def person() -> None:
    """Add people and set how far they are trusted."""


@person.command("add")
@click.argument("handle")
@click.option("--trust", type=click.Choice(["full", "look", "none"]), default="look",
              show_default=True, help="full: may wake full-tool turns; look: look-only; "
              "none: a mention is just text.")
@common.now_option
@pass_app
def person_add(app: App, handle: str, trust: str) -> None:
    """Add the person HANDLE."""
    p = app.store.add_person(handle, trust, app.now())
    click.echo(f"added person {p.handle} (trust {p.trust})")


@person.command("trust")
@click.argument("handle")
@click.argument("level", type=click.Choice(["full", "look", "none"]))
@pass_app
def person_trust(app: App, handle: str, level: str) -> None:
    """Change how far HANDLE is trusted."""
    p = app.store.set_trust(handle, level)
    click.echo(f"{p.handle} now has trust {p.trust}")


@person.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def person_list(app: App, as_json: bool) -> None:
    """List people."""
    people = app.store.people()
    if as_json:
        common.echo_json([p.to_json() for p in people])
        return
    common.table([[p.handle, p.trust] for p in people], ["HANDLE", "TRUST"])


@click.group()
def agent() -> None:
    """Add agents and say how each is woken."""


@agent.command("add")
@click.argument("handle")
@click.option("--command", "command", metavar="CMD",
              help="Run CMD (through the shell) with the wake on stdin; stdout is the reply.")
@click.option("--claude-code", is_flag=True,
              help="Run Claude Code (claude -p, stream-json), resuming its session per Mood.")
@click.option("--session-dir", type=click.Path(file_okay=False), metavar="DIR",
              help="--claude-code: the directory Claude Code runs in (its sessions live there).")
@click.option("--model", metavar="M", help="--claude-code: the model to ask for.")
@click.option("--permission-mode", metavar="MODE",
              help="--claude-code: permission mode of full-tool turns (default: acceptEdits). "
                   "Look-only turns always run read-only.")
@click.option("--claude-bin", metavar="PATH", help="--claude-code: the claude executable (default: claude).")
@click.option("--url", metavar="URL", help="POST each wake as JSON to URL; the reply comes back.")
@click.option("--header", "headers", multiple=True, metavar="K:V",
              help="--url: a request header (repeatable). Values are kept secret; write "
              "Name:${VAR} to read the value from the poller's environment at send time.")
@click.option("--timeout", type=float, metavar="SECONDS",
              help="Kill a turn after this long (default: 900 s look-only, no limit with full tools).")
@click.option("--workdir", type=click.Path(file_okay=False), help="Working directory of the turn.")
@click.option("--run-as", "run_as", metavar="USER",
              help="--command, --claude-code: run the agent as this Unix user, so it can read "
                   "neither the poller's files nor its processes (the poller needs root or "
                   "CAP_SETUID and CAP_SETGID).")
@common.now_option
@pass_app
def agent_add(app: App, handle: str, command: str | None, claude_code: bool,
              session_dir: str | None, model: str | None, permission_mode: str | None,
              claude_bin: str | None, url: str | None, headers: tuple[str, ...],
              timeout: float | None, workdir: str | None, run_as: str | None) -> None:
    """Add the agent HANDLE and how it is woken: --command, --claude-code or --url."""
    waker, options = waker_options(command=command, claude_code=claude_code,
                                   session_dir=session_dir, model=model,
                                   permission_mode=permission_mode, claude_bin=claude_bin,
                                   url=url, headers=headers)
    if run_as is not None:
        options = {**options, "run_as": run_as}
    a = app.store.add_agent(handle, app.now(), waker=waker, command=command, url=url,
                            timeout=timeout, workdir=workdir, options=options)
    click.echo(f"added agent {a.handle} ({a.waker})"
               + (f", run as {a.options['run_as']}" if a.options.get("run_as") else ""))


PERMISSION_MODES = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions", "auto")


def waker_options(*, command, claude_code, url, headers, **claude) -> tuple[str, dict]:
    """Which waker the options name, and its stored options; UserError if they clash."""
    chosen = [name for name, on in (("--command", command), ("--claude-code", claude_code),
                                    ("--url", url)) if on]
    if len(chosen) != 1:
        raise errors.UserError("give exactly one of --command, --claude-code or --url"
                               + (f" (got {', '.join(chosen)})" if chosen else ""))
    given = {k: v for k, v in claude.items() if v}
    if given and not claude_code:
        flags = ", ".join("--" + k.replace("_", "-") for k in given)
        raise errors.UserError(f"{flags} only apply with --claude-code")
    if headers and not url:
        raise errors.UserError("--header only applies with --url")
    if claude_code:
        mode = given.get("permission_mode")
        if mode and mode not in PERMISSION_MODES:
            raise errors.UserError(f"--permission-mode must be one of {', '.join(PERMISSION_MODES)}")
        if "claude_bin" in given:
            given["bin"] = given.pop("claude_bin")
        return "claude-code", given
    if command:
        return "command", {}
    if not url.startswith(("http://", "https://")):
        raise errors.UserError(f"--url must start with http:// or https://, got {url!r}")
    return "url", {"headers": parse_headers(headers)} if headers else {}


def parse_headers(items) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition(":")
        name = name.strip()
        if not sep or not name or any(c in name for c in " \t\r\n") or any(c in value for c in "\r\n"):
            # Never echo the value: it may be a credential.
            raise errors.UserError(f"--header must look like Name:value (got a header named {name[:40]!r})")
        out[name] = value.strip()
    return out


@agent.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def agent_list(app: App, as_json: bool) -> None:
    """List agents and their wakers."""
    agents = app.store.agents()
    if as_json:
        common.echo_json([_masked(a.to_json()) for a in agents])
        return
    common.table([[a.handle, a.waker, _target(a), f"{a.timeout:g}s" if a.timeout else "default"]
                  for a in agents],
                 ["HANDLE", "WAKER", "TARGET", "TIMEOUT"])


def _masked(row: dict) -> dict:
    """An agent's JSON with credentials in its URL or command masked."""
    if row.get("url"):
        row["url"] = mask_url(row["url"], keep_user=False)
    if row.get("command"):
        row["command"] = mask_text(row["command"])
    return row


def _target(a) -> str:
    target = mask_text(a.command) if a.command else (
        mask_url(a.url, keep_user=False) if a.url else _claude_target(a))
    run_as = (a.options or {}).get("run_as")
    return f"{target} (as {run_as})" if run_as else target


def _claude_target(a) -> str:
    opts = a.options or {}
    if a.waker != "claude-code":
        return ""
    return " ".join(filter(None, [opts.get("bin", "claude"), opts.get("model") and f"--model {opts['model']}",
                                  opts.get("session_dir") and f"in {opts['session_dir']}"]))


COMMANDS = [person, agent]
