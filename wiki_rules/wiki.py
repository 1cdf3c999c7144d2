"""The MediaWiki the dial wording lives on, behind a small interface.

:class:`Wiki` is the interface; :class:`MwWiki` talks to a real wiki with
mwclient.  Its reads and writes raise :class:`poller.errors.WikiError` (or
its :class:`PageMissing`) and nothing else.

mwclient's defaults would retry a dead wiki 25 times with growing sleeps and
wait 30 s per request, and its ``Site()`` constructor asks the wiki for site
information.  So every read builds a ``Site`` with ``do_init=False``, no
retries and a short timeout, and runs in a helper thread the caller waits
``timeout`` seconds for.  At that deadline the read's sockets are shut
(:mod:`wiki_rules.deadline`), which ends what the socket timeouts do not (a
server trickling bytes); a read still stuck after that (a slow DNS answer)
is the one read in flight: the next fetch fails at once rather than start
another beside it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Optional, Protocol, TypeVar

import mwclient
import mwclient.errors
import requests

from poller import errors
from wiki_rules import deadline as deadline_mod

T = TypeVar("T")

USER_AGENT = "mood-poller (dial wording reader)"
READ_THREAD = "dial-wiki-read"


class PageMissing(errors.WikiError):
    """The wiki answered, but the page does not exist (never created, or deleted)."""


@dataclass(frozen=True)
class Fetched:
    revid: int
    wikitext: str
    protected: Optional[bool]  # protected from anonymous edits; None: unknown


class Wiki(Protocol):
    site: str

    def fetch(self, title: str) -> Fetched: ...

    def write(self, title: str, text: str, summary: str, *, user: str, password: str,
              overwrite: bool = False) -> int: ...


class MwWiki:
    """A real MediaWiki, read anonymously through its action API."""

    def __init__(self, host: str, *, path: str = "/w/", scheme: str = "https",
                 timeout: float = 5.0) -> None:
        self.host = host
        self.path = path
        self.scheme = scheme
        self.timeout = timeout
        self._lock = threading.Lock()
        self._reading: Optional[threading.Thread] = None  # the read in flight, if any

    @property
    def site(self) -> str:
        return f"{self.scheme}://{self.host}{self.path}"

    def fetch(self, title: str) -> Fetched:
        """The page's newest revision and protection, within ``timeout`` seconds.

        One read at a time: while an earlier one has not ended, this fails at once.
        """
        with self._lock:
            if self._reading is not None and self._reading.is_alive():
                raise errors.WikiUnavailable(f"wiki {self.host} has not ended the last read yet")
            deadline = deadline_mod.Deadline()
            read = _Read(lambda: self._fetch(title, deadline))
            self._reading = thread = threading.Thread(target=read, name=READ_THREAD, daemon=True)
            thread.start()
        return _within(read, thread, self.timeout, deadline,
                       f"wiki {self.host} gave no answer within {self.timeout:g}s")

    def write(self, title: str, text: str, summary: str, *, user: str, password: str,
              overwrite: bool = False) -> int:
        """Log in with a bot password and save *text*; return the new revision id.

        Without *overwrite* the page is only created, never replaced.
        """
        site = self._site()
        try:
            try:
                site.login(user, password)
            except mwclient.errors.LoginError as exc:
                # Not chained: the request inside the cause carries the password.
                raise errors.WikiError(
                    f"wiki {self.host} refused the login of {user!r}: {exc.code}") from None
            params = {"title": title, "text": text, "summary": summary, "bot": "1",
                      "assert": "user", "token": site.get_token("csrf"), "formatversion": "2"}
            if not overwrite:
                params["createonly"] = "1"
            try:
                result = site.post("edit", **params)
            except mwclient.errors.APIError as exc:
                if exc.code == "articleexists":
                    raise errors.WikiError(f"{title!r} already exists on {self.host}; "
                                           "pass --force to replace it") from None
                raise
            edit = result.get("edit", {})
            if edit.get("result") != "Success":
                raise errors.WikiError(f"wiki {self.host} did not save {title!r}: {edit}")
            if edit.get("nochange"):
                return self._fetch(title).revid
            return int(edit["newrevid"])
        except errors.WikiError:
            raise
        except (requests.RequestException, mwclient.errors.MwClientError, ValueError) as exc:
            raise _failure(self.host, exc) from None
        finally:
            site.connection.close()

    def _site(self, pool: Optional[requests.Session] = None) -> mwclient.Site:
        return mwclient.Site(
            self.host, path=self.path, scheme=self.scheme, do_init=False,
            max_retries=0, retry_timeout=0, force_login=False, pool=pool,
            connection_options={"timeout": (self.timeout, self.timeout)},
            clients_useragent=USER_AGENT)

    def _fetch(self, title: str, deadline: deadline_mod.Deadline) -> Fetched:
        agent = f"{USER_AGENT} {mwclient.client.USER_AGENT}"
        site = self._site(deadline_mod.bounded_session(deadline, agent))
        try:
            answer = site.get("query", prop="revisions|info", titles=title,
                              rvprop="ids|content", rvslots="main",
                              inprop="protection", intestactions="edit",
                              formatversion="2")
        except (requests.RequestException, mwclient.errors.MwClientError, ValueError) as exc:
            raise _failure(self.host, exc) from exc
        finally:
            site.connection.close()
        return _read_answer(self.host, title, answer)


def _read_answer(host: str, title: str, answer: dict) -> Fetched:
    try:
        page = answer["query"]["pages"][0]
        if page.get("missing") or page.get("invalid"):
            raise PageMissing(f"{title!r} does not exist on {host}")
        revision = page["revisions"][0]
        text = revision["slots"]["main"]["content"]
        revid = int(revision["revid"])
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise errors.WikiError(f"wiki {host} gave an answer without the page text") from exc
    return Fetched(revid=revid, wikitext=text, protected=_protected(page))


def _protected(page: dict) -> Optional[bool]:
    """Whether an anonymous reader (which we are) is barred from editing the page."""
    actions = page.get("actions")
    if isinstance(actions, dict) and "edit" in actions:
        return not actions["edit"]
    if any(p.get("type") == "edit" for p in page.get("protection", [])):
        return True
    return None


def _failure(host: str, exc: BaseException) -> errors.WikiError:
    """The error for a failed request: temporary (exit 75) when the wiki could not be reached."""
    if isinstance(exc, (requests.Timeout, requests.ConnectionError)):
        return errors.WikiUnavailable(_describe(host, exc))
    return errors.WikiError(_describe(host, exc))


def _describe(host: str, exc: BaseException) -> str:
    """A one-line reason that never includes request bodies (they may hold secrets)."""
    if isinstance(exc, requests.Timeout):
        return f"wiki {host} timed out"
    if isinstance(exc, requests.ConnectionError):
        return f"wiki {host} is unreachable"
    if isinstance(exc, requests.HTTPError) and exc.response is not None:
        return f"wiki {host} answered HTTP {exc.response.status_code}"
    if isinstance(exc, mwclient.errors.APIError):
        return f"wiki {host} API error {exc.code}"
    if isinstance(exc, mwclient.errors.InvalidResponse):
        return f"wiki {host} did not answer with JSON"
    return f"wiki {host} failed: {exc.__class__.__name__}"


class _Read:
    """What a read in its thread came to: a value or an error."""

    def __init__(self, work: Callable[[], T]) -> None:
        self.work = work
        self.value: Optional[T] = None
        self.error: Optional[BaseException] = None

    def __call__(self) -> None:
        try:
            self.value = self.work()
        except BaseException as exc:  # handed back to the caller in _within
            self.error = exc


def _within(read: _Read, thread: threading.Thread, seconds: float,
            deadline: deadline_mod.Deadline, message: str) -> T:
    """Wait *seconds* for *read* (run by *thread*); past them, end it and fail with *message*."""
    thread.join(seconds)
    if thread.is_alive():
        deadline.expire()
        thread.join(min(seconds, 1.0))  # it ends as its sockets shut, unless stuck in DNS
        raise errors.WikiUnavailable(message)
    if read.error is not None:
        raise read.error
    return read.value
