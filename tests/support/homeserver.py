"""A real Synapse homeserver for the test session, on a loopback port.

The YAML is written here (much faster than ``--generate-config``): a client
listener on 127.0.0.1 only, no federation, no URL previews,
metrics or stats, ``bcrypt_rounds: 4`` and every rate limit raised so tests
never see a 429.  Users are registered through ``registration_shared_secret``
(the admin API's HMAC), and the appservice registration the bridge command
writes is loaded at start-up.  Start-up takes about ten seconds, so one
server serves the whole session; each test makes rooms and users of its own.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import httpx

from support.waiting import HANG_GUARD_S, wait_for

SERVER_NAME = "test.local"
RATE = {"per_second": 100000, "burst_count": 100000}
RATE_LIMITS = {
    "rc_message": RATE, "rc_registration": RATE, "rc_joins": {"local": RATE, "remote": RATE},
    "rc_joins_per_room": RATE, "rc_invites": {"per_room": RATE, "per_user": RATE,
                                              "per_issuer": RATE},
    "rc_login": {"address": RATE, "account": RATE, "failed_attempts": RATE},
    "rc_admin_redaction": RATE, "rc_3pid_validation": RATE, "rc_room_creation": RATE,
    "rc_presence": {"per_user": RATE}, "rc_delayed_event_mgmt": RATE, "rc_reports": RATE,
    "rc_federation": {"window_size": 1000, "sleep_limit": 1000, "sleep_delay": 1,
                      "reject_limit": 100000, "concurrent": 1000},
}


def config_yaml(root: str, port: int, shared_secret: str, appservices: list[str]) -> dict:
    return {
        "server_name": SERVER_NAME,
        "pid_file": os.path.join(root, "homeserver.pid"),
        "listeners": [{"port": port, "bind_addresses": ["127.0.0.1"], "type": "http",
                       "tls": False, "x_forwarded": False,
                       "resources": [{"names": ["client"], "compress": False}]}],
        "database": {"name": "sqlite3", "args": {"database": os.path.join(root, "hs.db")}},
        "media_store_path": os.path.join(root, "media"),
        "signing_key_path": os.path.join(root, "signing.key"),
        "report_stats": False,
        "registration_shared_secret": shared_secret,
        "macaroon_secret_key": secrets.token_hex(16),
        "form_secret": secrets.token_hex(16),
        "trusted_key_servers": [],
        "federation_domain_whitelist": [],
        "presence": {"enabled": True},  # an agent out on an activity shows it
        "url_preview_enabled": False,
        "enable_metrics": False,
        "stats": {"enabled": False},
        "bcrypt_rounds": 4,
        "suppress_key_server_warning": True,
        "app_service_config_files": appservices,
        "log_config": os.path.join(root, "log.yaml"),
        **RATE_LIMITS,
    }


LOG_YAML = """version: 1
formatters:
  plain: {format: '%%(asctime)s %%(levelname)s %%(name)s %%(message)s'}
handlers:
  file: {class: logging.FileHandler, filename: %s, formatter: plain}
root: {level: WARNING, handlers: [file]}
disable_existing_loggers: false
"""


@dataclass
class Synapse:
    root: str
    port: int
    shared_secret: str
    appservices: list[str]
    proc: subprocess.Popen | None = None
    _users: int = field(default=0)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        import yaml

        path = os.path.join(self.root, "homeserver.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(config_yaml(self.root, self.port, self.shared_secret,
                                       self.appservices), f)
        with open(os.path.join(self.root, "log.yaml"), "w") as f:
            f.write(LOG_YAML % os.path.join(self.root, "homeserver.log"))
        self._signing_key()
        out = open(os.path.join(self.root, "stdout.log"), "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "synapse.app.homeserver",
                                      "--config-path", path], stdout=out, stderr=out,
                                     cwd=self.root, start_new_session=True)
        wait_for(self._up, what="Synapse to answer", interval=0.2)

    def _signing_key(self) -> None:
        path = os.path.join(self.root, "signing.key")
        if os.path.exists(path):
            return
        import signedjson.key

        with open(path, "w") as f:
            signedjson.key.write_signing_keys(f, [signedjson.key.generate_signing_key("a")])

    def _up(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            log = open(os.path.join(self.root, "stdout.log")).read()[-3000:]
            raise AssertionError(f"Synapse exited with {self.proc.returncode}: {log}")
        try:
            return httpx.get(f"{self.url}/_matrix/client/versions", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=HANG_GUARD_S)

    def register(self, localpart: str | None = None) -> "User":
        """A new user with an access token, through the shared-secret admin API."""
        self._users += 1
        localpart = localpart or f"u{os.getpid()}x{self._users}"
        password = secrets.token_hex(8)
        api = f"{self.url}/_synapse/admin/v1/register"
        nonce = httpx.get(api, timeout=30).json()["nonce"]
        mac = hmac.new(self.shared_secret.encode(), digestmod=hashlib.sha1)
        mac.update(b"\x00".join([nonce.encode(), localpart.encode(), password.encode(),
                                 b"notadmin"]))
        body = {"nonce": nonce, "username": localpart, "password": password,
                "admin": False, "mac": mac.hexdigest()}
        r = httpx.post(api, json=body, timeout=30)
        r.raise_for_status()
        return User(self.url, r.json()["user_id"], r.json()["access_token"])


@dataclass
class User:
    """A person's Matrix client: just the client-server API calls the tests make."""

    base: str
    user_id: str
    token: str
    _txn: int = 0

    def call(self, method: str, path: str, body: dict | None = None, **params) -> dict:
        r = httpx.request(method, f"{self.base}/_matrix/client/v3{path}", json=body,
                          params=params or None, timeout=30,
                          headers={"Authorization": f"Bearer {self.token}"})
        if r.status_code >= 400:
            raise AssertionError(f"{method} {path}: {r.status_code} {r.text}")
        return r.json()

    def create_room(self, invite: list[str] = ()) -> str:
        return self.call("POST", "/createRoom", {"preset": "public_chat",
                                                 "invite": list(invite)})["room_id"]

    def join(self, room: str) -> None:
        self.call("POST", f"/join/{room}", {})

    def send(self, room: str, content: dict, etype: str = "m.room.message") -> str:
        self._txn += 1
        txn = f"t{time.time_ns()}x{self._txn}"
        return self.call("PUT", f"/rooms/{room}/send/{etype}/{txn}", content)["event_id"]

    def messages(self, room: str) -> list[dict]:
        """Every message event in the room, oldest first."""
        out = self.call("GET", f"/rooms/{room}/messages", dir="b", limit=1000)
        return [e for e in reversed(out["chunk"]) if e["type"] == "m.room.message"]


def start(appservices: list[str], port: int, shared_secret: str) -> Synapse:
    root = tempfile.mkdtemp(prefix="mood-synapse-")
    hs = Synapse(root, port, shared_secret, appservices)
    try:
        hs.start()
    except BaseException:
        hs.stop()
        shutil.rmtree(root, ignore_errors=True)
        raise
    return hs
