"""Typed, frozen configuration, built once at the CLI edge and passed down.

Precedence, highest first: command-line flags (``--db``), environment
variables (``MOOD_POLLER_DB``, ``MOOD_POLLER_CONFIG`` and the secret variables
below), the TOML config file, then the defaults named here.  Secrets (the wiki
bot password, the summarizer API key) may come from the file or from the
environment, never from the command line, and are masked whenever printed.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path

from poller import errors
from poller.tokens import DEFAULT_ENCODING

ENV_DB = "MOOD_POLLER_DB"
ENV_CONFIG = "MOOD_POLLER_CONFIG"
ENV_WIKI_PASSWORD = "MOOD_POLLER_WIKI_BOT_PASSWORD"
ENV_SUMMARIZER_KEY = "MOOD_POLLER_SUMMARIZER_API_KEY"
ENV_SCREEN_KEY = "MOOD_POLLER_SCREEN_API_KEY"
ENV_LAUNCH = "MOOD_POLLER_LAUNCH"
ENV_SANDBOX = "MOOD_POLLER_SANDBOX"
ENV_SANDBOX_WRITABLE = "MOOD_POLLER_SANDBOX_WRITABLE"
SANDBOXES = ("auto", "bwrap", "off")
ENV_MAIL_PASSWORD = "MOOD_POLLER_MAIL_PASSWORD"  # read only when mail is sent
LAUNCHERS = ("auto", "process", "thread")
SECRET_FIELDS = {"bot_password", "api_key"}

HOUR_S = 3600.0
MAX_SECONDS = 1e9  # every float option is seconds; about 31 years is more than any of them needs
MAX_INT = 2**63 - 1


def data_dir() -> Path:
    """``$XDG_DATA_HOME/memory-lane`` (``~/.local/share/memory-lane`` by default)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "memory-lane"


def default_db_url() -> str:
    return f"sqlite:///{data_dir() / 'moods.db'}"


@dataclass(frozen=True)
class WikiConfig:
    """Where the dial wording lives (``wiki_rules``)."""

    site: str = ""  # host name, e.g. "wiki.example.org"; empty: built-in wording only
    scheme: str = "https"
    path: str = "/w/"  # the directory holding api.php
    title: str = "Cryptograss:Moods/Dials"
    ttl: float = 300.0  # seconds a fetched copy is fresh
    timeout: float = 5.0  # seconds for any one wiki request
    bot_user: str = ""  # "User@botname", for `dials --seed-page`
    bot_password: str = field(default="", repr=False)  # secret; or env MOOD_POLLER_WIKI_BOT_PASSWORD
    max_chars: int = 1200  # cap on each dial level's text


@dataclass(frozen=True)
class WakeConfig:
    """What every wake carries and how big it may get."""

    # The footer's links.  Empty: derived from the wiki (its index.php, pages
    # beside the dials page) when wiki.site is set; else the line is left out.
    etiquette_url: str = ""
    todo_pattern: str = ""  # must contain {slug}
    prompt_cap_chars: int = 100_000  # hard cap on the whole wake
    post_cap_tokens: int = 2_000  # one post in the catch-up is clipped past this
    summary_tokens: int = 300  # budget of the digest of older posts


@dataclass(frozen=True)
class SummarizerConfig:
    """How posts older than the catch-up budget are summarized."""

    kind: str = "extractive"  # extractive | llm | none
    url: str = ""  # OpenAI-compatible base URL, e.g. http://127.0.0.1:8080
    model: str = ""
    api_key: str = field(default="", repr=False)  # secret; or env MOOD_POLLER_SUMMARIZER_API_KEY
    timeout: float = 5.0  # seconds; the summary is made while the wake is being recorded


@dataclass(frozen=True)
class ScreenConfig:
    """An optional cheap model asked, before a consider, whether the agent is needed."""

    url: str = ""  # OpenAI-compatible base URL; empty: no screen, every due consider wakes
    model: str = ""
    api_key: str = field(default="", repr=False)  # secret; or env MOOD_POLLER_SCREEN_API_KEY
    timeout: float = 3.0  # seconds; a screen that does not answer lets the wake through
    # Only considers whose wake is at least this big are screened: asking costs about
    # 150 tokens, more than a small wake (an agent's session sees only what is new) saves.
    min_wake_tokens: int = 1_000


@dataclass(frozen=True)
class PollerConfig:
    """The loop's knobs (the per-Mood dials are settings, not config)."""

    interval: float = 1.0  # seconds between cycles of `run`
    bot_chain_cap: int = 3  # agent-to-agent mentions without a person in between
    look_timeout: float = 900.0  # seconds before a look-only turn is killed
    full_timeout: float = HOUR_S  # seconds for full-tool turns; 0 = no limit
    silence_limit: float = 600.0  # a full-tool turn silent this long is cut off; 0 = none
    shutdown_grace: float = 10.0  # seconds running turns get on SIGTERM
    hold_renew: float = 300.0  # a hold is re-announced after this long
    person_recent: float = 12 * HOUR_S  # quiet looks need a person this recent
    greet_window: float = 12 * HOUR_S  # arrivals: no greeting twice in this window
    arrival_window: float = 1800.0  # sign-ins older than this are not arrivals
    lease: float = 30.0  # SQLite single-poller lease, renewed each cycle
    turn_stale: float = 60.0  # a turn on another machine with no heartbeat this long is closed
    return_floor: float = 20.0  # absences past due when `run` starts come back this long after
    # Variables passed to agents beyond PATH, HOME, LANG...: in the file a list of
    # names or one comma-separated string; held here as the comma-separated string.
    agent_env: str = ""
    launch: str = "auto"  # auto: in the poller, but a runner process per turn for `tick` (no --wait)
    # Agent processes in a bubblewrap namespace (poller.turns.sandbox): auto (when bwrap is
    # installed and usable), bwrap (always; a turn that cannot be sandboxed fails) or off.
    sandbox: str = "auto"
    # Paths every sandboxed turn may write, whatever its tier (a shared log directory):
    # in the file a list of absolute paths; held here joined with ":".
    sandbox_writable: str = ""
    # US dollars per million tokens, to price the turns of agents that report no cost
    # (command and HTTP agents): the wake's tokens in, the reply's out; 0: free.
    usd_per_mtok_in: float = 0.0
    usd_per_mtok_out: float = 0.0


@dataclass(frozen=True)
class MailConfig:
    """The SMTP server check-in mail goes out through (consent invitations, the one
    contact message).  The password comes only from the environment,
    MOOD_POLLER_MAIL_PASSWORD, read when mail is sent."""

    host: str = ""  # empty: no mail server, so mail waits in the outbox and arming is refused
    port: int = 587
    starttls: bool = True  # upgrade with STARTTLS, certificate verified
    tls: bool = False  # implicit TLS from the start (port 465), certificate verified
    user: str = ""  # log in as this user (with the password from the environment)
    sender: str = ""  # the From: address
    timeout: float = 30.0  # seconds for the SMTP conversation


@dataclass(frozen=True)
class Config:
    db_url: str = field(default_factory=default_db_url)
    encoding: str = DEFAULT_ENCODING
    wiki: WikiConfig = field(default_factory=WikiConfig)
    wake: WakeConfig = field(default_factory=WakeConfig)
    summarizer: SummarizerConfig = field(default_factory=SummarizerConfig)
    screen: ScreenConfig = field(default_factory=ScreenConfig)
    poller: PollerConfig = field(default_factory=PollerConfig)
    mail: MailConfig = field(default_factory=MailConfig)
    source: str = ""  # path of the file it was read from, if any
    # Where each value came from, by "section.key" ("database.url",
    # "wiki.timeout"...): "default", "file", "--db", the environment variable's
    # name, or "wiki.site" for footer links derived from the wiki.
    sources: typing.Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    # The secrets written in the file itself ("wiki.bot_password", "database.url"...).
    file_secrets: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def masked(self) -> dict:
        """Resolved values as a dict, secrets replaced by '***' when set."""

        def walk(obj):
            out = {}
            for f in dataclasses.fields(obj):
                value = getattr(obj, f.name)
                if dataclasses.is_dataclass(value):
                    value = walk(value)
                elif f.name in SECRET_FIELDS and value:
                    value = "***"
                out[f.name] = value
            return out

        return walk(self)


SECTIONS = {
    "wiki": WikiConfig,
    "wake": WakeConfig,
    "summarizer": SummarizerConfig,
    "screen": ScreenConfig,
    "poller": PollerConfig,
    "mail": MailConfig,
}

# Every value config.load reads: its place in the file ("section.key"), and the
# environment variable that overrides it, if one does.
ENV_OVERRIDES = {
    "database.url": ENV_DB,
    "wiki.bot_password": ENV_WIKI_PASSWORD,
    "summarizer.api_key": ENV_SUMMARIZER_KEY,
    "screen.api_key": ENV_SCREEN_KEY,
    "poller.launch": ENV_LAUNCH,
    "poller.sandbox": ENV_SANDBOX,
    "poller.sandbox_writable": ENV_SANDBOX_WRITABLE,
}
SUMMARIZER_KINDS = ("extractive", "llm", "none")
WIKI_SCHEMES = ("http", "https")


@dataclass(frozen=True)
class Rule:
    """What one option may hold: its type and, where it means something, a range,
    a choice of words or a shape."""

    type: type
    min: float | None = None  # the least value allowed
    above: float | None = None  # values must be greater than this
    max: float | None = None
    choices: tuple[str, ...] = ()
    shape: str = ""  # "url" (empty or http/https), "host", "path", "pattern", "names", "text"
    unit: str = ""  # said after a number in messages: "seconds", "characters"...
    secret: bool = False  # never echoed in an error


def _seconds(*, min: float | None = None, above: float | None = None) -> Rule:
    return Rule(float, min=min, above=above, max=MAX_SECONDS, unit="seconds")


def _count(least: int, unit: str = "") -> Rule:
    return Rule(int, min=least, max=MAX_INT, unit=unit)


RULES: dict[str, Rule] = {
    "database.url": Rule(str, shape="database", secret=True),
    "tokenizer.encoding": Rule(str, shape="text"),
    "wiki.site": Rule(str, shape="host"),
    "wiki.scheme": Rule(str, choices=WIKI_SCHEMES),
    "wiki.path": Rule(str, shape="path"),
    "wiki.title": Rule(str, shape="text"),
    "wiki.ttl": _seconds(min=0),
    "wiki.timeout": _seconds(above=0),
    "wiki.bot_user": Rule(str),
    "wiki.bot_password": Rule(str, secret=True),
    "wiki.max_chars": _count(1, "characters"),
    "wake.etiquette_url": Rule(str, shape="url"),
    "wake.todo_pattern": Rule(str, shape="pattern"),
    "wake.prompt_cap_chars": _count(2_000, "characters"),
    "wake.post_cap_tokens": _count(1, "tokens"),
    "wake.summary_tokens": _count(0, "tokens"),
    "summarizer.kind": Rule(str, choices=SUMMARIZER_KINDS),
    "summarizer.url": Rule(str, shape="url"),
    "summarizer.model": Rule(str),
    "summarizer.api_key": Rule(str, secret=True),
    "summarizer.timeout": _seconds(above=0),
    "screen.url": Rule(str, shape="url"),
    "screen.model": Rule(str),
    "screen.api_key": Rule(str, secret=True),
    "screen.timeout": _seconds(above=0),
    "screen.min_wake_tokens": _count(0, "tokens"),
    "poller.interval": _seconds(above=0),
    "poller.bot_chain_cap": _count(0),
    "poller.look_timeout": _seconds(above=0),
    "poller.full_timeout": _seconds(min=0),
    "poller.silence_limit": _seconds(min=0),
    "poller.shutdown_grace": _seconds(min=0),
    "poller.hold_renew": _seconds(above=0),
    "poller.person_recent": _seconds(min=0),
    "poller.greet_window": _seconds(min=0),
    "poller.arrival_window": _seconds(min=0),
    "poller.lease": _seconds(above=0),
    "poller.turn_stale": _seconds(above=0),
    "poller.return_floor": _seconds(min=0),
    "poller.agent_env": Rule(str, shape="names"),
    "poller.launch": Rule(str, choices=LAUNCHERS),
    "poller.sandbox": Rule(str, choices=SANDBOXES),
    "poller.sandbox_writable": Rule(str, shape="paths"),
    "poller.usd_per_mtok_in": Rule(float, min=0, max=1e6, unit="US dollars"),
    "poller.usd_per_mtok_out": Rule(float, min=0, max=1e6, unit="US dollars"),
    "mail.host": Rule(str, shape="host"),
    "mail.port": Rule(int, min=1, max=65535),
    "mail.starttls": Rule(bool),
    "mail.tls": Rule(bool),
    "mail.user": Rule(str),
    "mail.sender": Rule(str, shape="address"),
    "mail.timeout": _seconds(above=0),
}

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)(:[0-9]{1,5})?")
_DB_URL = re.compile(r"[A-Za-z][A-Za-z0-9+._-]*://")


def _shown(name: str, value, rule: Rule) -> str:
    """*value* as an error may show it: never a secret, a URL's credentials masked."""
    if not isinstance(value, str) and rule.secret:
        return f"a value of type {type(value).__name__} (not shown: it may be a secret)"
    if rule.secret and not (name == "database.url" and "://" in value):
        return "a value not shown (it may be a secret)"
    if isinstance(value, str) and (rule.secret or "://" in value):
        from poller.secure import mask_url

        return repr(mask_url(value))
    return repr(value)


def _type_name(t: type) -> str:
    return t.__name__


def check_value(name: str, value, where: str = ""):
    """*value* of the option *name* ("section.key") as the config holds it, or
    ConfigError naming what is wrong (and, for a value from the environment, where
    it came from: *where*)."""
    rule = RULES[name]
    label = f"{name} (from {where})" if where else name
    if name == "poller.agent_env" and isinstance(value, list):
        if not all(isinstance(item, str) for item in value):
            raise errors.ConfigError(f"config: {label} must be a list of variable names, got "
                                     f"{value!r}")
        value = ",".join(item.strip() for item in value)
    if rule.shape == "paths" and isinstance(value, list):
        if not all(isinstance(item, str) for item in value):
            raise errors.ConfigError(f"config: {label} must be a list of absolute paths, got "
                                     f"{value!r}")
        value = ":".join(value)
    if rule.type is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, rule.type) or (rule.type is not bool and isinstance(value, bool)):
        want = _type_name(rule.type) + (" or a list of names" if rule.shape == "names" else "")
        raise errors.ConfigError(f"config: {label} must be {want}, got {_shown(name, value, rule)}")
    if rule.type in (int, float):
        _check_number(label, value, rule)
    if rule.choices and value not in rule.choices:
        words = ", ".join(rule.choices[:-1]) + f" or {rule.choices[-1]}"
        raise errors.ConfigError(f"config: {label} must be {words}, got {_shown(name, value, rule)}")
    if isinstance(value, str):
        problem = _shape_problem(value, rule)
        if problem:
            raise errors.ConfigError(f"config: {label} {problem}, got {_shown(name, value, rule)}")
    return value


def _check_number(label: str, value, rule: Rule) -> None:
    unit = f" ({rule.unit})" if rule.unit else ""
    if isinstance(value, float) and not math.isfinite(value):
        raise errors.ConfigError(f"config: {label} must be a finite number, got {value!r}")
    if rule.above is not None and not value > rule.above:
        raise errors.ConfigError(f"config: {label} must be above {rule.above:g}{unit}, got {value!r}")
    if rule.min is not None and value < rule.min:
        if rule.min == 0:
            raise errors.ConfigError(f"config: {label} must not be negative, got {value!r}")
        raise errors.ConfigError(f"config: {label} must be at least {rule.min:g}{unit}, "
                                 f"got {value!r}")
    if rule.max is not None and value > rule.max:
        top = f"{rule.max:,.0f}" if rule.type is float else str(int(rule.max))
        raise errors.ConfigError(f"config: {label} must be at most {top}{unit}, got {value!r}")


def _shape_problem(value: str, rule: Rule) -> str:
    """Why *value* does not have the rule's shape, or ""."""
    if any(ord(c) < 0x20 or ord(c) == 0x7f for c in value):
        return "must hold no control characters"
    shape = rule.shape
    if shape == "text" and not value.strip():
        return "must not be empty"
    if shape == "database":
        if not _DB_URL.match(value):
            return "must be a database URL (e.g. sqlite:////var/lib/mood-poller/moods.db)"
    elif shape == "host" and value:
        if "://" in value or "/" in value:
            return "must be a host name (e.g. wiki.example.org), not a URL"
        if not _HOST.fullmatch(value):
            return "must be a host name (e.g. wiki.example.org)"
    elif shape == "path" and not (value.startswith("/") and value.endswith("/")):
        return "must be the directory holding api.php, starting and ending with / (e.g. /w/)"
    elif shape == "url" and value:
        return _url_problem(value)
    elif shape == "pattern" and value:
        if "{slug}" not in value:
            return "must contain {slug}"
        try:
            filled = value.format(slug="slug")
        except (KeyError, IndexError, ValueError):
            return "may hold no placeholder but {slug} (write {{ and }} for braces)"
        return _url_problem(filled)
    elif shape == "address" and value:
        if not re.fullmatch(r"[^@\s<>]+@[^@\s<>]+", value):
            return "must be an e-mail address (e.g. poller@example.org)"
    elif shape == "paths":
        bad = [p for p in value.split(":") if p and not p.startswith("/")]
        if bad:
            return f"must hold absolute paths ({bad[0]!r} is not one)"
    elif shape == "names":
        names = [n.strip() for n in value.split(",") if n.strip()]
        bad = [n for n in names if not _ENV_NAME.fullmatch(n)]
        if bad:
            return f"must name environment variables ({bad[0]!r} is not a variable name)"
    return ""


def _url_problem(value: str) -> str:
    import urllib.parse

    try:
        parts = urllib.parse.urlsplit(value)
        parts.port  # noqa: B018  (raises ValueError for a bad port)
    except ValueError:
        return "must be an http:// or https:// URL"
    if parts.scheme not in ("http", "https") or not parts.hostname or " " in value:
        return "must be an http:// or https:// URL"
    return ""


def _coerce(section: str, cls, raw: dict, sources: dict, file_secrets: list):
    if not isinstance(raw, dict):
        raise errors.ConfigError(f"config: [{section}] must be a table")
    known = {f.name for f in dataclasses.fields(cls)}
    values = {}
    for key, value in raw.items():
        if key not in known:
            raise errors.ConfigError(f"config: unknown option {section}.{key}")
        name = f"{section}.{key}"
        values[key] = check_value(name, value)
        sources[name] = "file"
        if key in SECRET_FIELDS and values[key]:
            file_secrets.append(name)
    return cls(**values)


def _validate(cfg: Config) -> None:
    """What needs two values at once (each value alone was checked as it was read)."""
    if cfg.mail.host and not cfg.mail.sender:
        raise errors.ConfigError("config: mail.host needs mail.sender (the From: address)")
    if cfg.mail.tls and cfg.mail.starttls:
        raise errors.ConfigError("config: mail.tls and mail.starttls exclude each other "
                                 "(implicit TLS, or STARTTLS)")
    if cfg.summarizer.kind == "llm" and not (cfg.summarizer.url and cfg.summarizer.model):
        raise errors.ConfigError("config: summarizer.kind = 'llm' needs summarizer.url and summarizer.model")
    if bool(cfg.screen.url) != bool(cfg.screen.model):
        raise errors.ConfigError("config: a screen needs both screen.url and screen.model")
    if (cfg.summarizer.kind == "llm" or cfg.screen.url) and not _models_installed():
        raise errors.ConfigError("config: the LLM summarizer and the screen need the models "
                                 "extra: pip install 'mood-poller[models]'")


def _models_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("pydantic_ai") is not None


def derived_links(wiki: WikiConfig) -> dict[str, str]:
    """The footer's links on the configured wiki: pages beside the dials page
    (``Cryptograss:Moods/Dials`` -> ``Cryptograss:Moods/Etiquette`` and
    ``Cryptograss:Moods/{slug}/todo``), through its ``index.php``, which every
    MediaWiki serves whatever its short-URL set-up.  None without a wiki."""
    if not wiki.site:
        return {}
    import urllib.parse

    base = wiki.title.rpartition("/")[0] or wiki.title

    def page(title: str) -> str:
        quoted = urllib.parse.quote(title.replace(" ", "_"), safe=":/{}")
        return f"{wiki.scheme}://{wiki.site}{wiki.path}index.php?title={quoted}"

    return {"etiquette_url": page(f"{base}/Etiquette"), "todo_pattern": page(f"{base}/{{slug}}/todo")}


def load(path: str | os.PathLike | None = None, db_url: str | None = None,
         env: typing.Mapping[str, str] | None = None) -> Config:
    """Build the Config from a TOML file (or none), the environment and flags."""
    env = os.environ if env is None else env
    path = path or env.get(ENV_CONFIG) or None
    raw: dict = {}
    if path:
        try:
            with open(path, "rb") as fh:
                raw = tomllib.load(fh)
        except OSError as exc:
            raise errors.ConfigError(f"config: cannot read {path}: {exc.strerror}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise errors.ConfigError(f"config: {path} is not valid TOML: {exc}") from exc
        except UnicodeDecodeError as exc:
            raise errors.ConfigError(
                f"config: {path} is not UTF-8 text (byte {exc.start} is not valid UTF-8)") from exc
    kwargs: dict = {}
    sources: dict[str, str] = {}
    file_secrets: list[str] = []
    for key, value in raw.items():
        if key in SECTIONS:
            kwargs[key] = _coerce(key, SECTIONS[key], value, sources, file_secrets)
        elif key == "database":
            if not isinstance(value, dict) or set(value) - {"url"}:
                raise errors.ConfigError("config: [database] takes only url")
            if "url" in value:
                kwargs["db_url"] = check_value("database.url", value["url"])
                sources["database.url"] = "file"
                if _holds_credentials(kwargs["db_url"]):
                    file_secrets.append("database.url")
        elif key == "tokenizer":
            if not isinstance(value, dict) or set(value) - {"encoding"}:
                raise errors.ConfigError("config: [tokenizer] takes only encoding")
            if "encoding" in value:
                kwargs["encoding"] = check_value("tokenizer.encoding", value["encoding"])
                sources["tokenizer.encoding"] = "file"
        elif key == "bridges":
            continue  # read by `mood-poller bridge` (poller.bridges), which checks it
        else:
            raise errors.ConfigError(f"config: unknown section [{key}]")
    cfg = Config(**kwargs, source=str(path or ""))
    overrides: dict = {}
    for name, var in ENV_OVERRIDES.items():
        if not env.get(var):
            continue
        section, _, key = name.partition(".")
        value = check_value(name, env[var], var)
        sources[name] = var
        if name == "database.url":
            overrides["db_url"] = value
        else:
            current = overrides.get(section, getattr(cfg, section))
            overrides[section] = dataclasses.replace(current, **{key: value})
    if db_url:
        overrides["db_url"] = check_value("database.url", db_url, "--db")
        sources["database.url"] = "--db"
    cfg = dataclasses.replace(cfg, **overrides)
    links = {k: v for k, v in derived_links(cfg.wiki).items() if f"wake.{k}" not in sources}
    if links:
        cfg = dataclasses.replace(cfg, wake=dataclasses.replace(cfg.wake, **links))
        sources.update({f"wake.{k}": "wiki.site" for k in links})
    for name in RULES:
        sources.setdefault(name, "default")
    cfg = dataclasses.replace(cfg, sources=types.MappingProxyType(sources),
                              file_secrets=tuple(file_secrets))
    _validate(cfg)
    return cfg


def _holds_credentials(url: str) -> bool:
    from poller.secure import mask_url

    return mask_url(url) != url


def warnings(cfg: Config) -> list[str]:
    """What is risky, though not wrong, about how the config holds its secrets:
    a file holding one that every user may read, a secret written in the file
    rather than given in the environment.  No warning shows a secret."""
    out = []
    if not cfg.source or not cfg.file_secrets:
        return out
    names = ", ".join(cfg.file_secrets)
    try:
        mode = os.stat(cfg.source).st_mode
    except OSError:
        mode = 0
    if mode & 0o004:
        out.append(f"{cfg.source} holds a secret ({names}) and every user may read it "
                   f"(mode {mode & 0o777:o}): chmod o-r {cfg.source}")
    for name in cfg.file_secrets:
        what = "a password" if name == "database.url" else "a secret"
        out.append(f"{name} in {cfg.source} holds {what}: set {ENV_OVERRIDES[name]} in the "
                   f"environment instead (a file of KEY=value lines, mode 600, that the "
                   f"service reads)")
    return out
