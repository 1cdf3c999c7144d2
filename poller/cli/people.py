"""``person add | trust | set | remove | list`` and ``agent add | set | remove | list``."""

from __future__ import annotations

import contextvars
import re

import click

from poller import errors
from poller.cli import App, common, pass_app
from poller.secure import mask_text, mask_url
from poller.turns import registry


@click.group()
def person() -> None:
    """Add people and set how far they are trusted."""


@person.command("add")
@click.argument("handle", required=False)
@click.option("--trust", type=click.Choice(["full", "look", "none"]), default="look",
              show_default=True, help="full: may wake full-tool turns; look: look-only; "
              "none: a mention is just text.")
@click.option("--operator", is_flag=True,
              help="May use the operators' pages and API (agents, wakes, why, the emergency "
                   "stop) of `mood-poller serve`.")
@click.option("--matrix", "matrix_id", metavar="@USER:SERVER",
              help="Their Matrix user id (the Matrix bridge knows them by it); HANDLE may "
                   "then be left out (made from the id).")
@click.option("--json", "as_json", is_flag=True, help="Print the new person as JSON.")
@common.now_option
@pass_app
def person_add(app: App, handle: str | None, trust: str, operator: bool,
               matrix_id: str | None, as_json: bool) -> None:
    """Add the person HANDLE."""
    if matrix_id is not None:
        p = _add_matrix_person(app, handle, matrix_id, trust)
    elif not handle:
        raise click.UsageError("give the person's HANDLE (or --matrix @user:server)")
    else:
        p = app.store.add_person(handle, trust, app.now())
    if operator:
        from poller.store import access

        access.set_operator(app.store, p.handle, True)
    if as_json:
        common.echo_json(p.to_json() | {"operator": operator})
        return
    click.echo(f"added person {p.handle} (trust {p.trust}{', operator' if operator else ''})")


def _add_matrix_person(app: App, handle: str | None, matrix_id: str, trust: str):
    from poller.bridges import matrix
    from poller.store import bridges

    matrix.check_user(matrix_id)
    return bridges.add_linked_person(app.store, matrix.NAME, handle, matrix_id,
                                     matrix.localpart(matrix_id), trust, app.now())


@person.command("trust")
@click.argument("handle")
@click.argument("level", type=click.Choice(["full", "look", "none"]))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def person_trust(app: App, handle: str, level: str, as_json: bool) -> None:
    """Change how far HANDLE is trusted."""
    _set_trust(app, handle, level, as_json)


def _set_trust(app: App, handle: str, level: str, as_json: bool) -> None:
    p = app.store.set_trust(handle, level)
    if as_json:
        common.echo_json(p.to_json())
        return
    click.echo(f"{p.handle} now has trust {p.trust}")


@person.command("set")
@click.argument("handle")
@click.option("--trust", "level", type=click.Choice(["full", "look", "none"]),
              help="full: may wake full-tool turns; look: look-only; none: a mention is just text.")
@click.option("--operator/--no-operator", default=None,
              help="Give or take the operator role (the operators' pages and API of `serve`).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def person_set(app: App, handle: str, level: str | None, operator: bool | None,
               as_json: bool) -> None:
    """Change how far HANDLE is trusted (as `person trust`), or their operator role."""
    if level is None and operator is None:
        raise click.UsageError("give --trust LEVEL, --operator or --no-operator")
    if operator is None:
        _set_trust(app, handle, level, as_json)
        return
    from poller.store import access

    access.set_operator(app.store, handle, operator)
    p = app.store.set_trust(handle, level) if level else app.store.participant(handle)
    if as_json:
        common.echo_json(p.to_json() | {"operator": operator})
        return
    click.echo(f"{p.handle} now has trust {p.trust} and is {'' if operator else 'not '}an operator")


@person.command("token")
@click.argument("handle")
@click.option("--revoke", is_flag=True, help="Revoke every token of HANDLE (and end their "
              "web sessions) instead of making a new one.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@common.now_option
@pass_app
def person_token(app: App, handle: str, revoke: bool, as_json: bool) -> None:
    """Print a new token for HANDLE to sign in to `mood-poller serve` with (shown once)."""
    from poller.store import access

    if revoke:
        n = access.revoke_tokens(app.store, handle, app.now())
        if as_json:
            common.echo_json({"handle": handle, "revoked": n})
            return
        click.echo(f"revoked {n} token(s) of {handle}")
        return
    token, _ = access.new_token(app.store, handle, app.now())
    if as_json:
        common.echo_json({"handle": handle, "token": token})
        return
    click.echo(token)
    click.echo(f"a new token for {handle}: it is shown only now (only its hash is kept); "
               f"`mood-poller person token {handle} --revoke` revokes it", err=True)


@person.command("remove")
@click.argument("handle")
@common.now_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def person_remove(app: App, handle: str, as_json: bool) -> None:
    """Remove the person HANDLE: their posts stay, they can post no more, the handle is free."""
    r = app.store.retire_person(handle, app.now())
    if as_json:
        common.echo_json({"removed": r.who.to_json(), "ended_wakes": list(r.ended)})
        return
    click.echo(f"removed person {r.who.handle} (their posts are kept; the handle is free)")


@person.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include people who were removed.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def person_list(app: App, show_all: bool, as_json: bool) -> None:
    """List people."""
    people = app.store.people(include_retired=show_all)
    if as_json:
        from poller.store import access

        operators = access.operators(app.store)
        common.echo_json([p.to_json() | {"operator": p.id in operators} for p in people])
        return
    if show_all:
        common.table([[p.handle, p.trust, _removed(p)] for p in people],
                     ["HANDLE", "TRUST", "REMOVED"])
        return
    common.table([[p.handle, p.trust] for p in people], ["HANDLE", "TRUST"])


def _removed(row) -> str:
    from poller.text import when

    return when(row.retired_at)


@click.group()
def agent() -> None:
    """Add agents and say how each is woken."""


HEADER_HELP = ("--url: a request header (repeatable). Values are kept secret and never shown; "
               "write ${VAR} (anywhere in the value, e.g. 'Authorization:Bearer ${TOKEN}') "
               "to read VAR from the poller's environment at send time.")
ACTIVITIES_HELP = ("Its activities catalog (TOML; the kit's activities.example.toml shows "
                   "every key): what it may step away from the screen to do. A missing file "
                   "or an empty catalog leaves the feature off; an invalid one is refused. "
                   "'' (agent set) forgets it.")


LITERAL_SECRET_HELP = ("Store a header or --option value that looks like a credential as it "
                       "is, in the database, instead of refusing it (prefer ${VAR}).")
MODEL_HELP = ("A language model as the agent: PROVIDER:MODEL (openai, anthropic, ollama, "
              "openrouter; e.g. openai:gpt-4o-mini, ollama:llama3.2). With --claude-code: "
              "the model Claude Code asks for.")
BASE_URL_HELP = ("--model: the provider's base URL, e.g. any OpenAI-compatible server "
                 "(http://127.0.0.1:8080/v1 for llama.cpp's server).")
KEY_ENV_HELP = ("--model: the environment variable the API key is read from at each turn "
                "(default: the provider's own, e.g. OPENAI_API_KEY); the key is never stored.")
WAKER_HELP = ("Wake it with the waker NAME: the poller's own (command, claude-code, url) or one "
              "an installed package registers (entry-point group mood_poller.wakers).")
OPTION_HELP = ("An option of its waker (repeatable), for wakers from other "
               "packages; the poller's own wakers take theirs as the flags here.")


@agent.command("add")
@click.argument("handle")
@click.option("--command", "command", metavar="CMD",
              help="Run CMD (through the shell) with the wake on stdin; stdout is the reply.")
@click.option("--claude-code", is_flag=True,
              help="Run Claude Code (claude -p, stream-json), resuming its session per Mood.")
@click.option("--session-dir", type=click.Path(file_okay=False), metavar="DIR",
              help="--claude-code: the directory Claude Code runs in (its sessions live there).")
@click.option("--model", metavar="M", help=MODEL_HELP)
@click.option("--base-url", metavar="URL", help=BASE_URL_HELP)
@click.option("--api-key-env", metavar="VAR", help=KEY_ENV_HELP)
@click.option("--permission-mode", metavar="MODE",
              help="--claude-code: permission mode of full-tool turns (default: acceptEdits). "
                   "Look-only turns always run read-only.")
@click.option("--claude-bin", metavar="PATH", help="--claude-code: the claude executable (default: claude).")
@click.option("--url", metavar="URL", help="POST each wake as JSON to URL; the reply comes back.")
@click.option("--header", "headers", multiple=True, metavar="K:V", help=HEADER_HELP)
@click.option("--waker", "waker_name", metavar="NAME", help=WAKER_HELP)
@click.option("--option", "option_items", multiple=True, metavar="KEY=VALUE", help=OPTION_HELP)
@click.option("--allow-literal-secret", is_flag=True, help=LITERAL_SECRET_HELP)
@click.option("--timeout", type=float, metavar="SECONDS",
              help="Kill a turn after this long (default: poller.look_timeout, 900 s, look-only; "
                   "poller.full_timeout, 3600 s, with full tools).")
@click.option("--workdir", type=click.Path(file_okay=False), help="Working directory of the turn.")
@click.option("--run-as", "run_as", metavar="USER",
              help="--command, --claude-code: run the agent as this Unix user, so it can read "
                   "neither the poller's files nor its processes (the poller needs root or "
                   "CAP_SETUID and CAP_SETGID).")
@click.option("--network", type=click.Choice(["on", "off"]), default=None,
              help="--command, --claude-code: 'off' runs its turns with no network but "
                   "loopback (in the sandbox, poller.sandbox).")
@click.option("--activities", metavar="FILE.toml", help=ACTIVITIES_HELP)
@click.option("--json", "as_json", is_flag=True,
              help="Print the new agent as JSON (header names only, never their values).")
@common.now_option
@pass_app
def agent_add(app: App, handle: str, as_json: bool, **flags) -> None:
    """Add the agent HANDLE and how it is woken: --command, --claude-code, --url, --model
    PROVIDER:MODEL or --waker."""
    a = add_agent(app.store, app.now(), handle, **flags)
    if as_json:
        common.echo_json(_masked(a.to_json()) | {"away": None})
        return
    click.echo(f"added agent {a.handle} ({a.waker})"
               + (f", run as {a.options['run_as']}" if a.options.get("run_as") else ""))


def add_agent(store, now, handle: str, *, command: str | None = None, claude_code: bool = False,
              session_dir: str | None = None, model: str | None = None,
              base_url: str | None = None, api_key_env: str | None = None,
              permission_mode: str | None = None, claude_bin: str | None = None,
              url: str | None = None, headers: tuple[str, ...] = (),
              waker_name: str | None = None, option_items: tuple[str, ...] = (),
              allow_literal_secret: bool = False, timeout: float | None = None,
              workdir: str | None = None, run_as: str | None = None,
              network: str | None = None, activities: str | None = None):
    """Add the agent HANDLE woken as the flags of `agent add` say, each checked as that
    command checks it (the page's form adds agents with it too)."""
    named = chosen_waker(command=command, claude_code=claude_code, url=url, waker=waker_name,
                         required=model is None)
    kind = registry.kind(named or MODEL_WAKER)
    claude = {k: v for k, v in (("session_dir", session_dir), ("model", model),
                                ("base_url", base_url), ("api_key_env", api_key_env),
                                ("permission_mode", permission_mode),
                                ("claude_bin", claude_bin)) if v}
    refuse_unaccepted(kind, [*claude, *(["headers"] if headers else []),
                             *(["run_as"] if run_as is not None else []),
                             *(["network"] if network is not None else [])])
    options = ({k: v for k, v in model_options(model, base_url, api_key_env).items() if v}
               if kind.name == MODEL_WAKER else claude_options(claude))
    check_url(url)
    note_missing_command(command)
    if headers:
        options["headers"] = parse_headers(headers, allow_literal_secret)
    if run_as is not None:
        options["run_as"] = checked_user(run_as)
    if network == "off":
        options["network"] = "off"
    options.update(waker_option_items(kind, option_items, allow_literal_secret))
    if activities:
        options["activities"] = activities_file(activities)
    return store.add_agent(handle, now, waker=kind.name, command=command, url=url,
                           timeout=timeout, workdir=workdir, options=options, shape=kind)


# Where notes on what was given go: stderr, or the list a caller collects them in (the
# page shows them beside what it did).
NOTES: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("notes", default=None)


def note(line: str) -> None:
    """Say something worth knowing about what was given; it is done all the same."""
    kept = NOTES.get()
    if kept is None:
        click.echo(f"note: {line}", err=True)
    else:
        kept.append(line)


def activities_file(path: str) -> str:
    """The catalog file *path*, made absolute (the poller runs elsewhere) and checked:
    an invalid catalog is refused naming its key and line; a missing one is noted."""
    import os

    from poller.away import catalog

    full = os.path.abspath(os.path.expanduser(path))
    try:
        found = catalog.load(full)
    except catalog.CatalogError as exc:
        raise errors.UserError(f"--activities: {exc}") from None
    if found is None:
        why = "does not exist yet" if not os.path.exists(full) else "has no [[catalog]] entry"
        note(f"{full} {why}: activities stay off until it has one")
    return full


PERMISSION_MODES = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions", "auto")
# The flags that name a waker, and the agent field each fills (a waker's target).
WAKER_FLAGS = (("--command", "command", "command"), ("--claude-code", "claude-code", ""),
               ("--url", "url", "url"))
# Stored option keys as the flags that set them; any other is set with --option KEY=VALUE.
OPTION_FLAGS = {"run_as": "--run-as", "session_dir": "--session-dir", "model": "--model",
                "permission_mode": "--permission-mode", "bin": "--claude-bin",
                "headers": "--header", "activities": "--activities",
                "base_url": "--base-url", "api_key_env": "--api-key-env", "network": "--network"}
# How an option the agent's waker does not take is refused (default: the Claude Code flags').
REFUSALS = {"run_as": "{flags} applies only to agents that run a process ({wakers})",
            "network": "{flags} applies only to agents that run a process ({wakers})",
            "headers": "{flags} only applies with {wakers}"}


# The wakers an agent form offers, the flags each takes (as keyword names of add_agent) and
# what a person calls it.
FORM_FIELDS = {
    "command": ("command", "workdir", "timeout"),
    "claude-code": ("session_dir", "claude_bin", "model", "permission_mode", "timeout"),
    "url": ("url", "headers", "timeout"),
    "model": ("model", "base_url", "api_key_env", "timeout"),
}
FORM_NAMES = {"command": "Command", "claude-code": "Claude Code", "url": "HTTP",
              "model": "Model"}


def naming_flags(waker: str, target: str | None) -> dict:
    """The flags of add_agent that name the waker *waker* (aimed at *target*, for the
    wakers a command or URL aims)."""
    flag = next((f for f, name, _ in WAKER_FLAGS if name == waker), None)
    if flag is None:
        return {}
    return {flag.removeprefix("--").replace("-", "_"): target or "" if flag != "--claude-code"
            else True}


def chosen_waker(*, command, claude_code, url, waker=None, required: bool = True) -> str | None:
    """The waker the flags name (None if none and not *required*); UserError if they clash.

    ``--waker NAME`` names any installed waker; ``--command`` or ``--url`` go with it
    only to fill the field that aims it (``--waker command --command CMD``).
    """
    given = (command, claude_code, url)
    chosen = [(flag, name, field) for (flag, name, field), on in zip(WAKER_FLAGS, given)
              if on is not None and on is not False]
    if waker is not None:
        aim = registry.kind(waker).target
        chosen = [c for c in chosen if not (c[2] and c[2] == aim)] + [("--waker", waker, "")]
    if len(chosen) > 1 or (required and not chosen):
        # A usage error (exit 2), like any other missing or clashing option.
        raise click.UsageError("give exactly one of --command, --claude-code, --url or --waker NAME"
                               + (f" (got {', '.join(c[0] for c in chosen)})" if chosen else ""))
    return chosen[0][1] if chosen else None


def waker_flag(name: str) -> str:
    """The flag that names the waker *name*."""
    return next((flag for flag, waker, _ in WAKER_FLAGS if waker == name), f"--waker {name}")


def refuse_unaccepted(kind, given) -> None:
    """UserError if the waker *kind* does not take one of the options *given* (their
    stored keys), naming the wakers that do take it."""
    given = ["bin" if key == "claude_bin" else key for key in given]
    refused = [key for key in given if key not in kind.accepts]
    if not refused:
        return

    def takers(key: str) -> list[str]:
        return [w.name for w in registry.every() if key in w.accepts]

    first = takers(refused[0])
    same = [key for key in refused if takers(key) == first]
    flags = ", ".join(OPTION_FLAGS.get(key, key) for key in same)
    wakers = ", ".join(map(waker_flag, first)) or "no waker installed here"
    raise errors.UserError(REFUSALS.get(same[0], "{flags} only apply with {wakers}")
                           .format(flags=flags, wakers=wakers))


MODEL_WAKER = "model"


def model_options(model: str | None, base_url: str | None, api_key_env: str | None,
                  before: dict | None = None) -> dict:
    """A model agent's options (provider and model, base URL, key variable), checked;
    *before*: the agent's own, for what is not given.  A key missing from this process's
    environment is noted (the poller's may have it), never read out."""
    from poller.llm import providers

    before = before or {}
    base = base_url if base_url is not None else before.get("base_url") or ""
    key_env = api_key_env if api_key_env is not None else before.get("api_key_env") or ""
    if model is not None and before.get("model") and ":" not in model:
        # A bare model name keeps the agent's provider.
        model = f"{before['model'].split(':', 1)[0]}:{model}"
    spec = providers.parse(model if model is not None else before.get("model", ""), base, key_env)
    missing = spec.missing_key()
    if missing:
        note(f"{missing} (turns fail until it is there)")
    return {"model": spec.label, "base_url": spec.base_url or None,
            "api_key_env": spec.api_key_env or None}


def claude_options(given: dict) -> dict:
    """The Claude Code options given (``claude_bin`` stored as ``bin``); UserError if
    the permission mode is unknown."""
    mode = given.get("permission_mode")
    if mode and mode not in PERMISSION_MODES:
        raise errors.UserError(f"--permission-mode must be one of {', '.join(PERMISSION_MODES)}")
    given = dict(given)
    if "claude_bin" in given:
        given["bin"] = given.pop("claude_bin")
    return given


# What a shell runs without looking for a file: no note for these.
SHELL_WORDS = frozenset(("cd", "exec", "echo", "true", "false", "set", "export", ":", ".",
                         "source", "test", "[", "read", "printf", "eval", "if", "for", "while",
                         "until", "case", "{", "(", "!", "exit", "cat", "env", "command", "time"))


def note_missing_command(command: str | None) -> None:
    """Say (on stderr; the agent is added all the same) when the program a command runs is
    not on this machine: the poller may run elsewhere, or it may be installed later."""
    import os
    import shlex
    import shutil

    if not command:
        return
    try:
        words = shlex.split(command)
    except ValueError:
        return  # the shell will say what is wrong with it
    first = next((w for w in words if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w)), "")
    if not first or first in SHELL_WORDS or any(c in first for c in "$`*?~"):
        return
    if "/" in first:
        if not (os.path.isfile(first) and os.access(first, os.X_OK)):
            note(f"{first} is not an executable file on this machine (its turns fail until it is)")
    elif shutil.which(first) is None:
        note(f"{first} is not found on this PATH (its turns fail unless the poller's PATH "
             "has it)")


def check_url(url: str | None) -> None:
    if url is not None and not url.startswith(("http://", "https://")):
        raise errors.UserError(f"--url must start with http:// or https://, got {url!r}")


def checked_user(name: str) -> str:
    """*name*, a Unix user of this machine (``--run-as``); UserError if there is none."""
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        raise errors.UserError(f"--run-as: there is no Unix user {name!r} "
                               "on this machine") from None
    return name


OPTION_KEY = re.compile(r"[a-z][a-z0-9_]{0,39}")


def waker_option_items(kind, items, allow_literal_secret: bool = False,
                       removable: bool = False) -> dict[str, str | None]:
    """``--option KEY=VALUE`` items as options of the waker *kind*; with *removable*,
    ``KEY=`` maps KEY to None.  A value that looks like a literal credential is
    refused unless *allow_literal_secret*; no message shows a value."""
    out: dict[str, str | None] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not OPTION_KEY.fullmatch(key):
            raise errors.UserError("--option must look like key=value, the key in lower case "
                                   f"(got a key {key[:40]!r})")
        if key in OPTION_FLAGS:
            raise errors.UserError(f"--option {key}: give it as {OPTION_FLAGS[key]}")
        if key not in kind.accepts:
            takes = ", ".join(k for k in kind.accepts if k not in OPTION_FLAGS)
            raise errors.UserError(f"--option {key}: the {kind.name} waker takes no such option"
                                   + (f" (it takes {takes})" if takes else ""))
        why = literal_secret(value)
        if why and not allow_literal_secret:
            raise errors.UserError(f"--option {key}: the value looks like a literal secret "
                                   f"({why}); give --allow-literal-secret to store it in the "
                                   "database as it is")
        out[key] = None if removable and not value else value
    return out


def parse_headers(items, allow_literal_secret: bool = False,
                  removable: bool = False) -> dict[str, str | None]:
    """``Name:value`` items as a dict; with *removable*, ``Name:`` maps Name to None.

    A value that looks like a literal credential is refused unless
    *allow_literal_secret*.  No message ever shows a value.
    """
    out: dict[str, str | None] = {}
    for item in items:
        name, sep, value = item.partition(":")
        name = name.strip()
        if not sep or not name or any(c in name for c in " \t\r\n") or any(c in value for c in "\r\n"):
            # Never echo the value: it may be a credential.
            raise errors.UserError(f"--header must look like Name:value (got a header named {name[:40]!r})")
        value = value.strip()
        if removable and not value:
            out[name] = None
            continue
        why = literal_secret(value)
        if why and not allow_literal_secret:
            scheme = why.split()[1] if why.endswith("credential") else ""
            example = f"{name}:{scheme + ' ' if scheme else ''}${{TOKEN}}"
            raise errors.UserError(
                f"--header {name}: the value looks like a literal secret ({why}); write the "
                f"secret as ${{VAR}} (e.g. '{example}') and set VAR in the poller's "
                "environment, or give --allow-literal-secret to store it in the database")
        out[name] = value
    return out


ENV_REF = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")  # as poller.turns.wakers expands them
SCHEME_TOKEN = re.compile(r"(?i)\b(bearer|basic|token|apikey)\s+(\S+)")
KEY_PREFIXES = re.compile(r"(?<![A-Za-z0-9])(sk-[A-Za-z0-9_-]{8,}|sk_(live|test)_[A-Za-z0-9]{8,}"
                          r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
                          r"|glpat-[A-Za-z0-9_-]{16,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})")
LONG_RUN = re.compile(r"[A-Za-z0-9+/=_.~-]{24,}")
LONG_TOKEN = 12  # characters after "Bearer " or "Basic " that make a literal credential


def literal_secret(value: str) -> str | None:
    """Why *value* looks like a credential written out literally, or None.

    Only the literal text counts: ``${VAR}`` references are read at send time
    and never stored as values.
    """
    literal = ENV_REF.sub(" ", value)
    for m in SCHEME_TOKEN.finditer(literal):
        if len(m.group(2)) >= LONG_TOKEN:
            return f"a {m.group(1).capitalize()} credential"
    if KEY_PREFIXES.search(literal):
        return "an API key"
    for m in LONG_RUN.finditer(literal):
        run = m.group()
        if (any(c.isdigit() for c in run) and any(c.isalpha() for c in run)
                and len(set(run)) >= 10):
            return "a long random-looking string"
    return None


class TimeoutOrDefault(click.ParamType):
    """Seconds, or ``default`` to go back to the configured defaults."""

    name = "seconds"

    def convert(self, value, param, ctx):
        if isinstance(value, float) or value == "default":
            return value
        if str(value).strip().lower() == "default":
            return "default"
        try:
            return float(str(value).strip())
        except ValueError:
            self.fail(f"{value!r} is not a number of seconds or 'default'", param, ctx)


@agent.command("set")
@click.argument("handle")
@click.option("--command", "command", metavar="CMD", help="Wake it by running CMD.")
@click.option("--claude-code", is_flag=True, default=None,
              help="Wake it with Claude Code (claude -p).")
@click.option("--url", metavar="URL", help="Wake it by POSTing to URL.")
@click.option("--session-dir", metavar="DIR", help="--claude-code: its directory ('' clears it).")
@click.option("--model", metavar="M", help=MODEL_HELP + " ('' clears a Claude Code model)")
@click.option("--base-url", metavar="URL", help=BASE_URL_HELP + " ('' clears it)")
@click.option("--api-key-env", metavar="VAR", help=KEY_ENV_HELP + " ('' clears it)")
@click.option("--permission-mode", metavar="MODE",
              help="--claude-code: permission mode of full-tool turns ('' clears it).")
@click.option("--claude-bin", metavar="PATH", help="--claude-code: the claude executable "
              "('' clears it).")
@click.option("--header", "headers", multiple=True, metavar="K:V",
              help=HEADER_HELP + " Name: with no value removes that header; others are kept.")
@click.option("--waker", "waker_name", metavar="NAME", help=WAKER_HELP)
@click.option("--option", "option_items", multiple=True, metavar="KEY=VALUE",
              help=OPTION_HELP + " KEY= with no value removes it.")
@click.option("--allow-literal-secret", is_flag=True, help=LITERAL_SECRET_HELP)
@click.option("--timeout", type=TimeoutOrDefault(), metavar="SECONDS",
              help="Kill a turn after this long ('default': the configured defaults).")
@click.option("--workdir", metavar="DIR", help="Working directory of the turn ('' clears it).")
@click.option("--run-as", "run_as", metavar="USER",
              help="--command, --claude-code: run the agent as this Unix user ('' clears it).")
@click.option("--network", type=click.Choice(["on", "off"]), default=None,
              help="--command, --claude-code: 'off' runs its turns with no network but "
                   "loopback (in the sandbox, poller.sandbox).")
@click.option("--activities", metavar="FILE.toml", help=ACTIVITIES_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def agent_set(app: App, handle: str, as_json: bool, **flags) -> None:
    """Change how the agent HANDLE is woken and its limits; only the options given change.

    A new waker (--command, --claude-code, --url or --waker) drops the old
    one's options; each option is checked as `agent add` checks it.
    """
    change = set_agent(app.store, handle, **flags)
    changed = change.changed()
    if as_json:
        common.echo_json({"agent": change.after.handle,
                          "changed": {OPTION_NAMES.get(w, w): what_changed(change, w)
                                      for w in changed}})
        return
    if not changed:
        click.echo(f"agent {change.after.handle}: nothing changed")
        return
    click.echo(f"changed agent {change.after.handle}:")
    for what in changed:
        common.echo(f"  {OPTION_NAMES.get(what, what)}: {what_changed(change, what)}")


def set_agent(store, handle: str, *, command: str | None = None,
              claude_code: bool | None = None, session_dir: str | None = None,
              model: str | None = None, base_url: str | None = None,
              api_key_env: str | None = None, permission_mode: str | None = None,
              claude_bin: str | None = None, url: str | None = None,
              headers: tuple[str, ...] = (), waker_name: str | None = None,
              option_items: tuple[str, ...] = (), allow_literal_secret: bool = False,
              timeout=None, workdir: str | None = None, run_as: str | None = None,
              network: str | None = None, activities: str | None = None):
    """Change the agent HANDLE as the flags of `agent set` say (None: unchanged), each
    checked as that command checks it; the change (the page's form makes it too)."""
    waker = chosen_waker(command=command, claude_code=claude_code or None, url=url,
                         waker=waker_name, required=False)
    current = store.agent(handle)
    if waker is None and model and current.waker != MODEL_WAKER and not claude_code \
            and ":" in model and current.waker != "claude-code":
        waker = MODEL_WAKER  # --model PROVIDER:MODEL makes it a model agent
    kind = registry.kind(waker or current.waker)
    claude = {k: v for k, v in (("session_dir", session_dir), ("model", model),
                                ("base_url", base_url), ("api_key_env", api_key_env),
                                ("permission_mode", permission_mode),
                                ("claude_bin", claude_bin)) if v is not None}
    # Clearing an option is refused where setting it would be, but for --run-as ''.
    refuse_unaccepted(kind, [*claude, *(["headers"] if headers else []),
                             *(["run_as"] if run_as else []),
                             *(["network"] if network == "off" else [])])
    if kind.name == MODEL_WAKER and (model is not None or base_url is not None
                                     or api_key_env is not None):
        before = current.options if current.waker == MODEL_WAKER else {}
        options: dict = model_options(model, base_url, api_key_env, before)
    elif kind.name == MODEL_WAKER:
        options = {}
    else:
        options = {k: v or None for k, v in claude_options(claude).items()}
    check_url(url)
    note_missing_command(command)
    parsed = parse_headers(headers, allow_literal_secret, removable=True)
    if run_as is not None:
        options["run_as"] = checked_user(run_as) if run_as else None
    if network is not None:
        options["network"] = "off" if network == "off" else None
    options.update(waker_option_items(kind, option_items, allow_literal_secret, removable=True))
    if activities is not None:
        options["activities"] = activities_file(activities) if activities else None
    changes: dict = {}
    if waker is not None:
        changes["waker"] = waker
    if command is not None:
        changes["command"] = command
    if url is not None:
        changes["url"] = url
    if timeout is not None:
        changes["timeout"] = None if timeout == "default" else timeout
    if workdir is not None:
        changes["workdir"] = workdir or None
    if not (changes or options or parsed):
        raise errors.UserError("nothing to change: give --command, --claude-code, --url, "
                               "--model, --waker, --header, --option, --timeout, --workdir, --run-as, "
                               "--network, "
                               "--activities or a Claude Code option")
    return store.set_agent(handle, options=options, headers=parsed, shape=kind, **changes)


# Stored option keys as the flags that set them.
OPTION_NAMES = {"run_as": "run-as", "session_dir": "session-dir",
                "permission_mode": "permission-mode", "bin": "claude-bin"}


def what_changed(change, what: str) -> str:
    """One change as ``old -> new``; a header only as added, changed or removed."""
    if what.startswith("header "):
        name = what[len("header "):]
        old = (change.before.options.get("headers") or {}).get(name)
        new = (change.after.options.get("headers") or {}).get(name)
        return "added" if old is None else "removed" if new is None else "changed"

    def shown(info) -> str:
        value = getattr(info, what) if what in type(change).FIELDS else info.options.get(what)
        if value is None or value == "":
            return "default" if what == "timeout" else "(none)"
        if what == "timeout":
            return f"{value:g} s"
        if what == "command":
            return mask_text(value)
        if what == "url":
            return mask_url(value, keep_user=False)
        return str(value)

    return f"{shown(change.before)} -> {shown(change.after)}"


ENDED_BY_REMOVAL = "its agent was removed by an operator"


@agent.command("remove")
@click.argument("handle")
@click.option("--force", is_flag=True,
              help="End its pending and running turns (recorded as cut off) and remove it.")
@common.now_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def agent_remove(app: App, handle: str, force: bool, as_json: bool) -> None:
    """Remove the agent HANDLE: it is woken no more and its handle is free again.

    Its posts, wakes and decisions are kept.  Refused while a turn of it is
    pending or running, unless --force.
    """
    from poller.cycle.recover import end_turn

    store, now = app.store, app.now()

    def end(s, wake) -> None:
        end_turn(store.counter, s, wake, ENDED_BY_REMOVAL, now, follow_up=False)

    r = store.retire_agent(handle, now, force=force, end_turn=end)
    if as_json:
        common.echo_json({"removed": r.who.to_json(), "ended_wakes": list(r.ended)})
        return
    ended = (f"; ended {len(r.ended)} turn(s) (wake {', '.join(map(str, r.ended))})"
             if r.ended else "")
    click.echo(f"removed agent {r.who.handle}{ended} (its history is kept; the handle is free)")


@agent.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include agents that were removed.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@common.now_option
@pass_app
def agent_list(app: App, show_all: bool, as_json: bool) -> None:
    """List agents and their wakers (header names only, never their values)."""
    from poller import observe

    agents = app.store.agents(include_retired=show_all)
    out = observe.away(app.store, app.now())
    if as_json:
        common.echo_json([_masked(a.to_json()) | {"away": out.get(a.id)} for a in agents])
        return
    rows = [[a.handle, a.waker, _target(a), f"{a.timeout:g}s" if a.timeout else "default"]
            + ([_removed(a)] if show_all else [])
            + ([out[a.id]["line"] if a.id in out else "-"] if out else []) for a in agents]
    common.table(rows, ["HANDLE", "WAKER", "TARGET", "TIMEOUT"] + (["REMOVED"] if show_all else [])
                 + (["AWAY"] if out else []))


def _masked(row: dict) -> dict:
    """An agent's JSON with credentials in its URL or command masked."""
    if row.get("url"):
        row["url"] = mask_url(row["url"], keep_user=False)
    if row.get("command"):
        row["command"] = mask_text(row["command"])
    return row


def _target(a) -> str:
    target = mask_text(a.command) if a.command else (
        mask_url(a.url, keep_user=False) if a.url else _summary(a))
    headers = (a.options or {}).get("headers")
    if headers:
        target += f" (headers: {', '.join(headers)})"
    run_as = (a.options or {}).get("run_as")
    return f"{target} (as {run_as})" if run_as else target


def _summary(a) -> str:
    """What the agent's waker says of an agent aimed by its options alone."""
    kind = registry.find(a.waker)
    return kind.summary(a.options or {}) if kind is not None else f"({a.waker}: not installed here)"


COMMANDS = [person, agent]
