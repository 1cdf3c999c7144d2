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
ENV_LAUNCH = "MOOD_POLLER_LAUNCH"
LAUNCHERS = ("process", "thread")
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

    etiquette_url: str = "https://wiki.example.org/wiki/Cryptograss:Moods/Etiquette"
    todo_pattern: str = "https://wiki.example.org/wiki/Cryptograss:Moods/{slug}/todo"
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
class PollerConfig:
    """The loop's knobs (the per-Mood dials are settings, not config)."""

    interval: float = 1.0  # seconds between cycles of `run`
    bot_chain_cap: int = 3  # agent-to-agent mentions without a person in between
    look_timeout: float = 900.0  # seconds before a look-only turn is killed
    full_timeout: float = 0.0  # seconds for full-tool turns; 0 = no limit
    shutdown_grace: float = 10.0  # seconds running turns get on SIGTERM
    hold_renew: float = 300.0  # a hold is re-announced after this long
    person_recent: float = 12 * HOUR_S  # quiet looks need a person this recent
    greet_window: float = 12 * HOUR_S  # arrivals: no greeting twice in this window
    arrival_window: float = 1800.0  # sign-ins older than this are not arrivals
    lease: float = 30.0  # SQLite single-poller lease, renewed each cycle
    turn_stale: float = 60.0  # a turn on another machine with no heartbeat this long is closed
    agent_env: str = ""  # comma-separated variables passed to agents beyond PATH, HOME, LANG...
    launch: str = "process"  # process: a runner process per turn; thread: turns run in the poller


@dataclass(frozen=True)
class Config:
    db_url: str = field(default_factory=default_db_url)
    encoding: str = DEFAULT_ENCODING
    wiki: WikiConfig = field(default_factory=WikiConfig)
    wake: WakeConfig = field(default_factory=WakeConfig)
    summarizer: SummarizerConfig = field(default_factory=SummarizerConfig)
    poller: PollerConfig = field(default_factory=PollerConfig)
    source: str = ""  # path of the file it was read from, if any

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
    "poller": PollerConfig,
}


def _coerce(section: str, cls, raw: dict):
    if not isinstance(raw, dict):
        raise errors.ConfigError(f"config: [{section}] must be a table")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    values = {}
    for key, value in raw.items():
        if key not in known:
            raise errors.ConfigError(f"config: unknown option {section}.{key}")
        want = hints[key]
        if isinstance(want, types.UnionType):
            want = typing.get_args(want)[0]
        if want is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, want) or (want is int and isinstance(value, bool)):
            shown = ("a value (not shown: it is a secret)" if key in SECRET_FIELDS
                     else f"{value!r}")
            raise errors.ConfigError(
                f"config: {section}.{key} must be {want.__name__}, got {shown}"
            )
        if want is float and not math.isfinite(value):
            raise errors.ConfigError(f"config: {section}.{key} must be a finite number, got {value!r}")
        if want in (int, float) and value < 0:
            raise errors.ConfigError(f"config: {section}.{key} must not be negative")
        if want is float and value > MAX_SECONDS:
            raise errors.ConfigError(
                f"config: {section}.{key} must be at most {MAX_SECONDS:,.0f} (seconds), got {value!r}")
        if want is int and value > MAX_INT:
            raise errors.ConfigError(f"config: {section}.{key} must be at most {MAX_INT}, got {value!r}")
        values[key] = value
    return cls(**values)


def _validate(cfg: Config) -> None:
    if cfg.summarizer.kind not in ("extractive", "llm", "none"):
        raise errors.ConfigError(
            f"config: summarizer.kind must be extractive, llm or none, got {cfg.summarizer.kind!r}"
        )
    if cfg.summarizer.kind == "llm" and not (cfg.summarizer.url and cfg.summarizer.model):
        raise errors.ConfigError("config: summarizer.kind = 'llm' needs summarizer.url and summarizer.model")
    if cfg.wiki.scheme not in ("http", "https"):
        raise errors.ConfigError(f"config: wiki.scheme must be http or https, got {cfg.wiki.scheme!r}")
    if "{slug}" not in cfg.wake.todo_pattern:
        raise errors.ConfigError("config: wake.todo_pattern must contain {slug}")
    if cfg.wake.prompt_cap_chars < 2_000:
        raise errors.ConfigError("config: wake.prompt_cap_chars must be at least 2000")
    if cfg.poller.interval <= 0:
        raise errors.ConfigError("config: poller.interval must be positive")
    if cfg.poller.launch not in LAUNCHERS:
        raise errors.ConfigError(
            f"config: poller.launch must be {' or '.join(LAUNCHERS)}, got {cfg.poller.launch!r}")


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
    for key, value in raw.items():
        if key in SECTIONS:
            kwargs[key] = _coerce(key, SECTIONS[key], value)
        elif key == "database":
            if not isinstance(value, dict) or set(value) - {"url"}:
                raise errors.ConfigError("config: [database] takes only url")
            if "url" in value:
                kwargs["db_url"] = str(value["url"])
        elif key == "tokenizer":
            if not isinstance(value, dict) or set(value) - {"encoding"}:
                raise errors.ConfigError("config: [tokenizer] takes only encoding")
            if "encoding" in value:
                kwargs["encoding"] = str(value["encoding"])
        else:
            raise errors.ConfigError(f"config: unknown section [{key}]")
    cfg = Config(**kwargs, source=str(path or ""))
    secrets = {}
    if env.get(ENV_WIKI_PASSWORD):
        secrets["wiki"] = dataclasses.replace(cfg.wiki, bot_password=env[ENV_WIKI_PASSWORD])
    if env.get(ENV_SUMMARIZER_KEY):
        secrets["summarizer"] = dataclasses.replace(cfg.summarizer, api_key=env[ENV_SUMMARIZER_KEY])
    if env.get(ENV_LAUNCH):
        secrets["poller"] = dataclasses.replace(cfg.poller, launch=env[ENV_LAUNCH])
    url = db_url or env.get(ENV_DB) or None
    if url:
        secrets["db_url"] = url
    cfg = dataclasses.replace(cfg, **secrets)
    _validate(cfg)
    return cfg
