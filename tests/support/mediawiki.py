"""A throwaway MediaWiki 1.39 on a loopback port, for tests that need a real wiki.

Uses the Debian ``mediawiki`` package in place (nothing copied): ``install.php``
writes a SQLite database and ``LocalSettings.php`` into a temporary
directory, the ``MW_CONFIG_FILE`` environment variable points PHP at that
file, and PHP's built-in web server serves ``/usr/share/mediawiki`` from its
own process group so it can be stopped (and started again) reliably.

The wiki is called "Testwiki", so ``Cryptograss:Moods/Dials`` is an ordinary
main-namespace title there.  Passwords are generated, passed to PHP by file or
read back from its output, never put on a command line.

Use the session fixture ``mediawiki`` (it skips when the packages are absent,
and fails under ``CI``, where ``.ci/run`` installs them)::

    from support.mediawiki import mediawiki  # noqa: F401  (a pytest fixture)
"""

from __future__ import annotations

import atexit
import ctypes
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

import pytest

MW_DIR = Path("/usr/share/mediawiki")
WIKI_NAME = "Testwiki"
ADMIN = "Admin"
BOT_APP = "moodpoller"
BOT_GRANTS = "basic,highvolume,editpage,createeditmovepage,editprotected,protect,delete"


def missing() -> Optional[str]:
    """Why a MediaWiki cannot be started here, or None if it can."""
    if not (MW_DIR / "maintenance" / "install.php").exists():
        return f"no MediaWiki at {MW_DIR} (apt-get install mediawiki php-sqlite3 php8.2-cgi micro-httpd)"
    if shutil.which("php") is None:
        return "no php on PATH (apt-get install php8.2-cli php-sqlite3)"
    probe = subprocess.run(["php", "-r", "exit(extension_loaded('pdo_sqlite') ? 0 : 1);"],
                           capture_output=True)
    if probe.returncode != 0:
        return "php has no pdo_sqlite (apt-get install php-sqlite3)"
    return None


def _die_with_parent() -> None:
    """Linux: the server gets SIGTERM if the test process dies without cleaning up."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Timings:
    install: float = 0.0  # install.php
    first_response: float = 0.0  # php -S start until api.php answers


class MediaWiki:
    """One MediaWiki install and the PHP server serving it."""

    def __init__(self, root: Path, port: Optional[int] = None) -> None:
        self.root = Path(root)
        self.port = port or free_port()
        self.host = f"127.0.0.1:{self.port}"
        self.path = "/"  # the directory holding api.php (--scriptpath "")
        self.url = f"http://{self.host}"
        self.settings = self.root / "LocalSettings.php"
        self.admin_password = secrets.token_urlsafe(24)
        self.bot_user = f"{ADMIN}@{BOT_APP}"
        self.bot_password = ""
        self.timings = Timings()
        self._server: Optional[subprocess.Popen] = None

    # -- set-up ----------------------------------------------------------------

    def install(self) -> None:
        """Run install.php (about half a second) and make a bot password."""
        db = self.root / "db"
        db.mkdir(parents=True, exist_ok=True)
        passfile = self.root / "admin-password"
        passfile.write_text(self.admin_password)
        passfile.chmod(0o600)
        started = time.monotonic()
        self._php("maintenance/install.php", "--dbtype", "sqlite", "--dbpath", str(db),
                  "--server", self.url, "--scriptpath", "", "--confpath", str(self.root),
                  "--passfile", str(passfile), "--lang", "en", WIKI_NAME, ADMIN, config=False)
        self.timings.install = time.monotonic() - started
        with self.settings.open("a") as fh:
            # Quiet, predictable test wiki: no caching between requests, no throttling.
            fh.write("\n$wgMainCacheType = CACHE_NONE;\n$wgParserCacheType = CACHE_NONE;\n"
                     "$wgRateLimits = [];\n$wgPasswordAttemptThrottle = [];\n")
        out = self._php("maintenance/createBotPassword.php", "--appid", BOT_APP,
                        "--grants", BOT_GRANTS, ADMIN)
        found = re.search(r"password:'([^']+)'", out)
        assert found, "createBotPassword.php printed no password"
        self.bot_password = found.group(1)

    def _php(self, script: str, *args: str, config: bool = True) -> str:
        env = self._env() if config else {k: v for k, v in os.environ.items()
                                          if k != "MW_CONFIG_FILE"}
        done = subprocess.run(["php", str(MW_DIR / script), *args], env=env, cwd=self.root,
                              capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{script} failed ({done.returncode}): "
                               f"{(done.stdout + done.stderr)[-2000:]}")
        return done.stdout

    def _env(self) -> dict:
        return {**os.environ, "MW_CONFIG_FILE": str(self.settings)}

    # -- the server ------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._server is not None and self._server.poll() is None

    def start(self, wait: float = 15.0) -> None:
        """Start ``php -S`` in its own session and wait until api.php answers."""
        if self.running:
            return
        log = (self.root / "server.log").open("ab")
        started = time.monotonic()
        self._server = subprocess.Popen(
            ["php", "-S", self.host, "-t", str(MW_DIR)], env=self._env(), cwd=self.root,
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=_die_with_parent)
        log.close()
        atexit.register(self.stop)
        deadline = started + wait
        while time.monotonic() < deadline:
            if self._server.poll() is not None:
                raise RuntimeError(f"php -S exited with {self._server.returncode}; "
                                   f"see {self.root / 'server.log'}")
            try:
                with urllib.request.urlopen(f"{self.url}/api.php?action=query&format=json",
                                            timeout=2):
                    self.timings.first_response = time.monotonic() - started
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"MediaWiki did not answer on {self.url} within {wait:g}s")

    def stop(self) -> None:
        """Stop the server's whole process group, and wait until the port is closed."""
        server, self._server = self._server, None
        if server is None:
            return
        try:
            os.killpg(server.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=5)

    @contextmanager
    def down(self) -> Iterator[None]:
        """The wiki stopped for the duration of the block, started again after."""
        self.stop()
        try:
            yield
        finally:
            self.start()

    # -- editing, as a person or the admin would ---------------------------------

    def client(self):
        """An mwclient Site logged in with the bot password (admin rights)."""
        import mwclient

        site = mwclient.Site(self.host, path=self.path, scheme="http", max_retries=0,
                             connection_options={"timeout": 10})
        site.login(self.bot_user, self.bot_password)
        return site

    def edit(self, title: str, text: str, summary: str = "test edit") -> int:
        """Save *text* as *title*; the new revision id."""
        site = self.client()
        result = site.post("edit", title=title, text=text, summary=summary,
                           token=site.get_token("csrf"), formatversion="2")
        if "newrevid" in result["edit"]:
            return int(result["edit"]["newrevid"])
        return int(site.pages[title].revision)  # saved unchanged: the current revision

    def delete(self, title: str) -> None:
        site = self.client()
        site.post("delete", title=title, reason="test", token=site.get_token("csrf"))

    def protect(self, title: str, level: str = "autoconfirmed") -> None:
        """Protect *title* from edits below *level* ("" lifts the protection)."""
        site = self.client()
        site.post("protect", title=title, protections=f"edit={level or 'all'}",
                  expiry="infinite", reason="test", token=site.get_token("csrf"))


class SilentServer:
    """A loopback socket that accepts connections and never answers a byte."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)  # the kernel completes handshakes; nobody ever reads
        self.port = self.sock.getsockname()[1]
        self.host = f"127.0.0.1:{self.port}"

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(scope="session")
def mediawiki() -> Iterator[MediaWiki]:
    """A running throwaway MediaWiki for the whole session (skips if not installed)."""
    reason = missing()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"MediaWiki is missing in CI ({reason}): .ci/run must install it")
        pytest.skip(reason)
    root = Path(tempfile.mkdtemp(prefix="mood-poller-mediawiki-"))
    wiki = MediaWiki(root)
    try:
        wiki.install()
        wiki.start()
        yield wiki
    finally:
        wiki.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def running_wiki(mediawiki: MediaWiki) -> MediaWiki:
    """The session wiki, started again if an earlier test left it stopped."""
    mediawiki.start()
    return mediawiki


@pytest.fixture
def silent_server() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()
