"""Matrix: rooms as Moods, people by their Matrix ids, agents as users of their own.

This module is the pure part of the bridge: its configuration, the Matrix
ids, the appservice registration file, what a Matrix event means to the store
(:func:`meaning`) and what a reply looks like in a room (:func:`content`).
The running bridge (the appservice's HTTP endpoint, sending, typing) is
:mod:`poller.bridges.matrix_service`.

Mapping (see README, "Bridging Matrix"):

- a room is a Mood (``mood add lobby --matrix-room '!id:server'``);
- a person is a Matrix user (``person add --matrix @ada:server``); a sender
  seen for the first time becomes a person with ``default_trust``;
- each agent is the user ``@<user_prefix><handle>:<server_name>``, display name
  its handle;
- a mention is what Matrix calls one: the agent's user in
  ``m.mentions.user_ids``, or a reply to the agent's own message; ``@room`` is
  nobody's mention; a room marked legacy also reads bare names in the body
  of a message without ``m.mentions``;
- a join is a sign-in, an edit (``m.replace``) changes the stored text and
  never wakes, a redaction removes the text from later wakes.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any, Optional

from poller import errors
from poller.kinds import Trust
from poller.store.bridges import Incoming

NAME = "matrix"
ENV_AS_TOKEN = "MOOD_POLLER_MATRIX_AS_TOKEN"
ENV_HS_TOKEN = "MOOD_POLLER_MATRIX_HS_TOKEN"
ENV_BOT_TOKEN = "MOOD_POLLER_MATRIX_BOT_TOKEN"
USER_RE = re.compile(r"@[a-z0-9._=/+-]+:[A-Za-z0-9.-]+(:[0-9]{1,5})?")
# Room ids from room version 12 on carry no server name ('!abc'); aliases always do.
ROOM_RE = re.compile(r"![^:\s]{1,200}(:[A-Za-z0-9.-]+(:[0-9]{1,5})?)?"
                     r"|#[^:\s]{1,200}:[A-Za-z0-9.-]+(:[0-9]{1,5})?")
MODES = ("appservice", "bot")


@dataclass(frozen=True)
class MatrixConfig:
    """The ``[bridges.matrix]`` section of the bridge's config file."""

    homeserver: str = ""  # the client-server API's base URL, e.g. http://127.0.0.1:8008
    server_name: str = ""  # the part after ':' in user ids, e.g. example.org
    mode: str = "appservice"  # appservice | bot
    listen_host: str = "127.0.0.1"  # where the homeserver sends transactions (appservice)
    listen_port: int = 29330
    url: str = ""  # how the homeserver reaches us; default http://listen_host:listen_port
    as_token: str = field(default="", repr=False)  # secret; or env MOOD_POLLER_MATRIX_AS_TOKEN
    hs_token: str = field(default="", repr=False)  # secret; or env MOOD_POLLER_MATRIX_HS_TOKEN
    id: str = "mood-poller"  # the appservice's id in the registration
    user_prefix: str = "mood_"  # agents are @<prefix><handle>:<server_name>
    bot_localpart: str = "mood-poller"
    bot_user: str = ""  # bot mode: the bot account's user id
    bot_token: str = field(default="", repr=False)  # bot mode; or env MOOD_POLLER_MATRIX_BOT_TOKEN
    default_trust: str = Trust.NONE  # for senders nobody added
    poll: float = 0.2  # seconds between looks at the outbox and at running turns
    typing_renew: float = 20.0  # a typing notification lasts 30 s; renewed this often
    max_attempts: int = 60  # sends of one item before it is failed (about half an hour)


def load(path: str, environ=None) -> MatrixConfig:
    """The bridge's config from the TOML file *path*; secrets may come from the environment."""
    environ = os.environ if environ is None else environ
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        raise errors.ConfigError(f"cannot read the bridge config {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise errors.ConfigError(f"the bridge config {path} is not valid TOML: {exc}") from None
    section = data.get("bridges", {}).get("matrix")
    if not isinstance(section, dict):
        raise errors.ConfigError(f"{path} has no [bridges.matrix] section")
    return check(_build(section, environ), path)


_KIND_NAMES = {str: "a string", int: "a whole number", float: "a number", bool: "true or false"}


def _build(section: dict, environ) -> MatrixConfig:
    known = {f.name: f for f in dataclasses.fields(MatrixConfig)}
    values: dict[str, Any] = {}
    for key, value in section.items():
        if key not in known:
            raise errors.ConfigError(f"unknown option bridges.matrix.{key}")
        default = known[key].default
        want = str if isinstance(default, str) else type(default)  # a Trust is a string option
        if want is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, want) or isinstance(value, bool) != (want is bool):
            raise errors.ConfigError(f"bridges.matrix.{key} must be {_KIND_NAMES[want]}")
        values[key] = value
    for key, env in (("as_token", ENV_AS_TOKEN), ("hs_token", ENV_HS_TOKEN),
                     ("bot_token", ENV_BOT_TOKEN)):
        if environ.get(env):
            values[key] = environ[env]
    return MatrixConfig(**values)


def check(cfg: MatrixConfig, path: str = "", secrets: bool = True) -> MatrixConfig:
    """*cfg*, or ConfigError naming the option that is wrong; with *secrets*, the tokens
    its mode needs must be there too (``config check`` looks at them apart:
    :func:`missing_secrets`, as the environment it runs in may not be the bridge's)."""
    where = f" in {path}" if path else ""
    if not re.fullmatch(r"https?://[^\s/]+(/\S*)?", cfg.homeserver):
        raise errors.ConfigError(f"bridges.matrix.homeserver must be an http(s) URL{where}")
    if not re.fullmatch(r"[A-Za-z0-9.-]+(:[0-9]{1,5})?", cfg.server_name):
        raise errors.ConfigError(f"bridges.matrix.server_name must be a server name{where}")
    if cfg.mode not in MODES:
        raise errors.ConfigError(f"bridges.matrix.mode must be appservice or bot{where}")
    if cfg.default_trust not in tuple(Trust):
        raise errors.ConfigError(f"bridges.matrix.default_trust must be full, look or none{where}")
    if not re.fullmatch(r"[a-z0-9._=-]{1,32}", cfg.user_prefix):
        raise errors.ConfigError(f"bridges.matrix.user_prefix must be lower-case letters, "
                                 f"digits or ._=-{where}")
    if not 0 < cfg.poll <= 60 or not 1 <= cfg.typing_renew <= 29:
        raise errors.ConfigError(f"bridges.matrix.poll must be in (0, 60] and typing_renew "
                                 f"in [1, 29]{where}")
    if not 1 <= cfg.max_attempts <= 1_000_000:
        raise errors.ConfigError(f"bridges.matrix.max_attempts must be from 1 to 1000000{where}")
    missing = missing_secrets(cfg) if secrets else []
    if missing:
        raise errors.ConfigError(f"the Matrix bridge needs {' and '.join(missing)} "
                                 f"(or their bridges.matrix options){where}")
    return cfg


def missing_secrets(cfg: MatrixConfig) -> list[str]:
    """What the bridge's mode needs and *cfg* lacks: the variables to set."""
    if cfg.mode == "appservice" and not (cfg.as_token and cfg.hs_token):
        return [ENV_AS_TOKEN, ENV_HS_TOKEN]
    if cfg.mode == "bot" and not (cfg.bot_token and USER_RE.fullmatch(cfg.bot_user)):
        return [ENV_BOT_TOKEN + " and bridges.matrix.bot_user"]
    return []


def validate(data: dict, path: str, environ=None) -> list[str]:
    """``config check`` of a config file's ``[bridges.*]`` sections (*data*: the whole file
    as TOML): ConfigError for an unknown bridge or a wrong option; the warnings (tokens
    missing from this environment) as lines."""
    bridges = data.get("bridges", {})
    if not isinstance(bridges, dict):
        raise errors.ConfigError("config: [bridges] must be a table")
    for name in bridges:
        if name != "matrix":
            raise errors.ConfigError(f"config: unknown bridge section [bridges.{name}] "
                                     "(known: matrix)")
    section = bridges.get("matrix")
    if section is None:
        return []
    if not isinstance(section, dict):
        raise errors.ConfigError("config: [bridges.matrix] must be a table")
    cfg = check(_build(section, os.environ if environ is None else environ), path, secrets=False)
    missing = missing_secrets(cfg)
    return ([f"the Matrix bridge needs {' and '.join(missing)} in its environment (not set "
             "here)"] if missing else [])


# -- Ids --------------------------------------------------------------------------------


def check_user(user_id: str) -> str:
    if not USER_RE.fullmatch(user_id or ""):
        raise errors.UserError(f"{user_id!r} is not a Matrix user id (like @ada:example.org)")
    return user_id


def check_room(room: str) -> str:
    if not ROOM_RE.fullmatch(room or ""):
        raise errors.UserError(f"{room!r} is not a Matrix room id or alias "
                               "(like !abc:example.org or #lobby:example.org)")
    return room


def localpart(user_id: str) -> str:
    return user_id[1:].split(":", 1)[0]


def agent_user(cfg: MatrixConfig, handle: str) -> str:
    return f"@{cfg.user_prefix}{handle.lower()}:{cfg.server_name}"


def agent_of(cfg: MatrixConfig, user_id: str) -> Optional[str]:
    """The handle of the agent whose user *user_id* is, or None (not ours)."""
    prefix = f"@{cfg.user_prefix}"
    suffix = f":{cfg.server_name}"
    if user_id.startswith(prefix) and user_id.endswith(suffix):
        return user_id[len(prefix):-len(suffix)] or None
    return None


def ours(cfg: MatrixConfig, user_id: str) -> bool:
    """A user the bridge speaks as (an agent, the appservice's bot, the bot account)."""
    bot = f"@{cfg.bot_localpart}:{cfg.server_name}"
    return agent_of(cfg, user_id) is not None or user_id in (bot, cfg.bot_user)


def registration(cfg: MatrixConfig) -> dict:
    """The appservice registration the homeserver loads (``app_service_config_files``)."""
    server = re.escape(cfg.server_name)
    return {
        "id": cfg.id,
        "url": cfg.url or f"http://{cfg.listen_host}:{cfg.listen_port}",
        "as_token": cfg.as_token,
        "hs_token": cfg.hs_token,
        "sender_localpart": cfg.bot_localpart,
        "namespaces": {"users": [{"exclusive": True,
                                  "regex": f"@{re.escape(cfg.user_prefix)}.*:{server}"}],
                       "aliases": [], "rooms": []},
        "rate_limited": False,
        "receive_ephemeral": True,  # people's typing (it holds considers back)
    }


def write_registration(cfg: MatrixConfig, path: str) -> None:
    """Write the registration file, readable by its owner only (it holds both tokens)."""
    import yaml

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(registration(cfg), f, sort_keys=False)


# -- What an event means ----------------------------------------------------------------


@dataclass(frozen=True)
class Meaning:
    """One Matrix event as the store takes it: a message, a join, an edit, a redaction,
    an invitation for one of our users, or nothing (None)."""

    kind: str  # message | join | edit | redact | invite | typing | react
    event_id: str
    room: str
    sender: str
    message: Optional[Incoming] = None
    target: str = ""  # edit/redact: the event changed; invite: our user invited
    body: str = ""  # edit: the new text; react: the reaction's key (an emoji)


@dataclass(frozen=True)
class Refused:
    """An event that cannot be taken in, and why: recorded, then acknowledged, so that
    one member's malformed event never holds back the room's others."""

    ref: str  # its event id, or (none usable) ``sha256:`` and a digest of the event
    room: str  # its room id, when it has a usable one
    reason: str  # the field it got wrong, e.g. "content.m.relates_to is not an object"


MAX_ID = 255  # the spec's bound for event, room and user ids
REF_MAX = 64  # what the store keeps as a refused event's name


class _Malformed(Exception):
    """A field of an event has the wrong shape; the message names the field."""


class _Fields:
    """One JSON object of an event, read field by field: a missing or null field is its
    default, a field of the wrong type is :class:`_Malformed` naming it."""

    _NAMES = {str: "a string", dict: "an object", list: "a list", bool: "true or false"}

    def __init__(self, data: Any, where: str = "") -> None:
        if not isinstance(data, dict):
            raise _Malformed(f"{where.rstrip('.') or 'the event'} is not an object")
        self.data, self.where = data, where

    def _get(self, key: str, want: type, default: Any) -> Any:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, want):
            raise _Malformed(f"{self.where}{key} is not {self._NAMES[want]}")
        return value

    def text(self, key: str, default: str = "") -> str:
        return _text(self._get(key, str, default), self.where + key)

    def id(self, key: str) -> str:
        value = self.text(key)
        if len(value) > MAX_ID:
            raise _Malformed(f"{self.where}{key} is longer than {MAX_ID} characters")
        return value

    def user(self, key: str) -> str:
        value = self.id(key)
        if not re.fullmatch(r"@[^:\s]+:\S+", value):
            raise _Malformed(f"{self.where}{key} is not a Matrix user id")
        return value

    def obj(self, key: str) -> "_Fields":
        return _Fields(self._get(key, dict, {}), f"{self.where}{key}.")

    def ids(self, key: str) -> list[str]:
        values = self._get(key, list, [])
        if not all(isinstance(v, str) for v in values):
            raise _Malformed(f"{self.where}{key} holds something that is not a string")
        return [_text(v, self.where + key) for v in values]

    def flag(self, key: str) -> bool:
        return self._get(key, bool, False)

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None


def _text(value: str, where: str) -> str:
    if "\x00" in value:
        raise _Malformed(f"{where} holds a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _Malformed(f"{where} is not valid Unicode (a lone surrogate)") from None
    return value


def meaning(cfg: MatrixConfig, event: Any) -> Meaning | Refused | None:
    """What *event* (a client-server event as JSON) means here: a :class:`Meaning`, None
    for what we ignore, or :class:`Refused` (why it cannot be taken in).  Pure; the one
    place an event's shape is judged."""
    try:
        return _meaning(cfg, _Fields(event))
    except _Malformed as exc:
        return Refused(_ref(event), _room_of(event), str(exc))


def _meaning(cfg: MatrixConfig, f: _Fields) -> Optional[Meaning]:
    etype, room = f.text("type"), f.id("room_id")
    if etype == "m.typing":  # an ephemeral event: who is typing in the room now
        people = [u for u in f.obj("content").ids("user_ids") if not ours(cfg, u)]
        return Meaning("typing", "", room, people[0]) if people and room else None
    if etype not in ("m.room.member", "m.room.redaction", "m.room.message", "m.reaction"):
        return None
    eid, sender, content = f.id("event_id"), f.user("sender"), f.obj("content")
    if not eid:
        raise _Malformed(f"a {etype} needs an event_id")
    if etype == "m.room.member":
        return _member(cfg, f, eid, room, sender, content)
    if ours(cfg, sender):
        return None  # our own messages, echoed back
    if etype == "m.reaction":  # an emoji on an event: ✅ / ❌ answer an approval notice
        relates = content.obj("m.relates_to")
        key, target = relates.text("key"), relates.id("event_id")
        if relates.text("rel_type") != "m.annotation" or not key or not target:
            return None
        return Meaning("react", eid, room, sender, target=target, body=key[:32])
    if etype == "m.room.redaction":  # `redacts` moved into the content in room version 11
        target = f.id("redacts") or content.id("redacts")
        return Meaning("redact", eid, room, sender, target=target) if target else None
    if content.text("msgtype") not in ("m.text", "m.emote"):
        return None  # notices are bots talking: never a wake
    relates = content.obj("m.relates_to")
    if relates.text("rel_type") == "m.replace":
        body, target = content.obj("m.new_content").text("body"), relates.id("event_id")
        if not body or not target:
            return None
        return Meaning("edit", eid, room, sender, target=target, body=body)
    body = content.text("body")
    if not body.strip():
        return None
    return Meaning("message", eid, room, sender,
                   _incoming(cfg, f, eid, room, sender, body, content, relates))


def _ref(event: Any) -> str:
    """A refused event's name: its event id when it has a usable one, else a digest."""
    import hashlib
    import json

    eid = event.get("event_id") if isinstance(event, dict) else None
    if isinstance(eid, str) and 0 < len(eid) <= REF_MAX and eid.isprintable():
        try:
            return _text(eid, "event_id")
        except _Malformed:
            pass
    raw = json.dumps(event, sort_keys=True, default=repr).encode()
    return "sha256:" + hashlib.sha256(raw).hexdigest()[:REF_MAX - 7]


def _room_of(event: Any) -> str:
    try:
        return _Fields(event).id("room_id")
    except _Malformed:
        return ""


def transaction_events(body: Any) -> list:
    """The events of an appservice transaction (timeline, then ephemeral); a body of
    another shape is a :class:`errors.UserError`.  Each event is judged by :func:`meaning`."""
    if not isinstance(body, dict):
        raise errors.UserError("a transaction is a JSON object")
    events = []
    for key in ("events", "ephemeral", "de.sorunome.msc2409.ephemeral"):
        part = body.get(key)
        if part is not None and not isinstance(part, list):
            raise errors.UserError(f"the transaction's {key} is not a list")
        if key != "de.sorunome.msc2409.ephemeral" or not body.get("ephemeral"):
            events += part or []
    return events


def _sent_at(f: _Fields):
    import datetime as dt

    ts = f.data.get("origin_server_ts")
    if not isinstance(ts, int) or isinstance(ts, bool) or not 0 < ts < 2**53:
        return None
    return dt.datetime.fromtimestamp(ts / 1000, dt.timezone.utc)


def _incoming(cfg, f: _Fields, eid, room, sender, body, content: _Fields,
              relates: _Fields) -> Incoming:
    mentions = None
    if content.has("m.mentions"):
        ids = content.obj("m.mentions").ids("user_ids")
        mentions = tuple(h for h in (agent_of(cfg, u) for u in ids) if h)
    thread = relates.id("event_id") if relates.text("rel_type") == "m.thread" else None
    reply = relates.obj("m.in_reply_to").id("event_id") or None
    if thread and relates.flag("is_falling_back"):
        reply = None  # a thread's fallback reply is not a reply to anyone
    return Incoming(eid, room, sender, localpart(sender), _strip_fallback(body, reply),
                    mentions, reply, thread or None, _sent_at(f))


def _strip_fallback(body: str, reply: Optional[str]) -> str:
    """Older clients quote the message replied to ("> <@x> ..." lines): drop the quote."""
    if not reply or not body.startswith("> "):
        return body
    lines = body.split("\n")
    while lines and lines[0].startswith(">"):
        lines.pop(0)
    rest = "\n".join(lines).strip()
    return rest or body


def _member(cfg, f: _Fields, eid, room, sender, content: _Fields) -> Optional[Meaning]:
    membership = content.text("membership")
    before = f.obj("unsigned").obj("prev_content").text("membership")
    target = f.user("state_key")
    if membership == "invite" and agent_of(cfg, target):
        return Meaning("invite", eid, room, sender, target=target)
    if membership == "join" and before != "join" and not ours(cfg, target):
        return Meaning("join", eid, room, target)
    return None


# -- What a reply looks like ---------------------------------------------------------------


def render(markdown: str) -> str:
    """Markdown to the HTML of ``formatted_body``, rendered as the web page renders a post
    (raw HTML in the text stays text; post references stay text: a room has no posts'
    ids)."""
    from poller import markup

    return markup.to_html(markdown, post_links=False)


def content(event: str, text: str, reply: Optional[Any] = None) -> dict:
    """The ``m.room.message`` content for an outbox item: an agent's reply as ``m.text``
    (answering *reply*, a :class:`poller.store.bridges.ReplyTarget`, in its thread), the
    service's notes as ``m.notice``."""
    if event != "reply":
        return {"msgtype": "m.notice", "body": text}
    # The people it answers are pinged (m.mentions), nobody else: an agent's words naming
    # someone do not ping them.
    pinged = {"user_ids": list(reply.askers)} if reply is not None and reply.askers else {}
    out: dict[str, Any] = {"msgtype": "m.text", "body": text, "format": "org.matrix.custom.html",
                           "formatted_body": render(text), "m.mentions": pinged}
    if reply is not None:
        relates: dict[str, Any] = {"m.in_reply_to": {"event_id": reply.external_id}}
        if reply.thread:
            relates.update({"rel_type": "m.thread", "event_id": reply.thread,
                            "is_falling_back": False})
        out["m.relates_to"] = relates
    return out
