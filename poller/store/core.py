"""The store's core: the engine, its transactions, and the people-facing verbs.

Moods, people, agents, posts, sign-ins and settings: each ``Store`` method is
one short transaction and hands back frozen values (:mod:`poller.values`),
never live ORM rows.  The cycle's and the turns' verbs, which work inside a
transaction their caller holds, live beside this module
(:mod:`poller.store.cycle`, :mod:`poller.store.turns`, ...).  Writes on SQLite
take the write lock up front (BEGIN IMMEDIATE, see :mod:`poller.store.db`) so
concurrent writers wait instead of failing halfway.

Every post comes in by one door, :func:`ingest` (``Store.ingest`` opens its
transaction; :func:`insert_post` is its one-post form): people's posts from the
CLI, the API and the bridges, agents' replies, returns and handoffs, and the
service's own notes.  Its first half, :func:`admit`, is the one place a post's
text is judged; a caller with no transaction open admits first, so a refused
text costs no lock.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
from dataclasses import dataclass
from typing import Callable, Iterator, NamedTuple, Optional, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy import event
from sqlalchemy.orm import Session, sessionmaker

from poller import errors, settings, text, tokens, values
from poller.store import bell
from poller.models import (SEARCH_TABLE, Activity, Agent, Cursor, Listener, Mention, Mood, Owed,
                           Participant, Post, Setting, SignIn, Wake)

from poller.kinds import IN_FLIGHT, AbsenceStatus, PostKind, Trust, names
from poller.store import outbox

TRUST_LEVELS = names(Trust)

MAX_TITLE_CHARS = 200  # a Mood's title
MAX_LABEL_CHARS = 200  # a sign-in's label (the device, say)
MAX_NOTE_CHARS = 500  # why a setting was changed
AGENT_OPTIONS = ("activities",)  # options of the agent itself, kept whatever its waker
# What an agent aimed by one of its fields lacks without it (WakerShape.target).
NEEDS = {"command": "an agent needs a command (--command CMD)",
         "url": "an HTTP agent needs a URL (--url URL)"}

KEEP = object()  # set_agent: leave this field as it is


class Store:
    def __init__(self, engine: Engine, counter: tokens.Counter | None = None):
        self.engine = engine
        self._counter = counter
        self._read = sessionmaker(engine, expire_on_commit=False)
        self._write = sessionmaker(engine.execution_options(sqlite_write=True),
                                   expire_on_commit=False)

    @property
    def counter(self) -> tokens.Counter:
        if self._counter is None:
            self._counter = tokens.counter()
        return self._counter

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextlib.contextmanager
    def reading(self) -> Iterator[Session]:
        with self._read() as session, session.begin():
            yield session

    @contextlib.contextmanager
    def writing(self) -> Iterator[Session]:
        """One write transaction: committed on success, rolled back on any error."""
        with self._write() as session, session.begin():
            yield session

    @contextlib.contextmanager
    def scratch(self) -> Iterator[Session]:
        """A write transaction that is always rolled back: for dry runs and previews."""
        with self._write() as session:
            session.begin()
            try:
                yield session
            finally:
                session.rollback()

    # -- Moods ---------------------------------------------------------------

    def add_mood(self, slug: str, title: str, now: dt.datetime) -> values.MoodInfo:
        check_new_mood(slug, title)
        with self.writing() as s:
            return values.MoodInfo.from_row(new_mood(s, slug, title, now))

    def moods(self, include_archived: bool = True) -> list[values.MoodInfo]:
        with self.reading() as s:
            q = sa.select(Mood).order_by(Mood.slug)
            if not include_archived:
                q = q.where(Mood.archived.is_(False))
            return [values.MoodInfo.from_row(m) for m in s.scalars(q)]

    def mood(self, slug: str) -> values.MoodInfo:
        with self.reading() as s:
            return values.MoodInfo.from_row(self._mood(s, slug))

    def archive_mood(self, slug: str, archived: bool = True) -> values.MoodInfo:
        with self.writing() as s:
            mood = self._mood(s, slug)
            mood.archived = archived
            return values.MoodInfo.from_row(mood)

    @staticmethod
    def _mood(s: Session, slug: str) -> Mood:
        mood = s.scalar(_statements().mood, {"slug": slug})
        if mood is None:
            raise errors.NotFound(f"no Mood {slug!r} (see `mood-poller mood list`)")
        return mood

    # -- People and agents ---------------------------------------------------

    def add_person(self, handle: str, trust: str, now: dt.datetime) -> values.ParticipantInfo:
        if trust not in TRUST_LEVELS:
            raise errors.UserError(f"trust must be one of {', '.join(TRUST_LEVELS)}, got {trust!r}")
        with self.writing() as s:
            p = self._new_participant(s, handle, "person", trust, now)
            return values.ParticipantInfo.from_row(p)

    def add_agent(self, handle: str, now: dt.datetime, *, waker: str = "command",
                  command: Optional[str] = None, url: Optional[str] = None,
                  timeout: Optional[float] = None, workdir: Optional[str] = None,
                  options: Optional[dict] = None,
                  shape: Optional[values.WakerShape] = None) -> values.AgentInfo:
        """Add the agent HANDLE woken by *waker*; with its *shape* (the caller knows the
        wakers, the store does not) an agent missing the field that aims it is refused."""
        check_agent(shape, command, url, timeout)
        with self.writing() as s:
            # Agents are trusted to speak but not to wake each other with
            # full tools: their mentions wake look-only turns.
            p = self._new_participant(s, handle, "agent", "look", now)
            agent = Agent(participant_id=p.id, waker=waker, command=command, url=url,
                          timeout=timeout, workdir=workdir, options=options or {})
            s.add(agent)
            s.flush()
            return values.AgentInfo.from_rows(p, agent)

    def set_agent(self, handle: str, *, waker: Optional[str] = None, command=KEEP, url=KEEP,
                  timeout=KEEP, workdir=KEEP, options: Optional[dict] = None,
                  headers: Optional[dict] = None,
                  shape: Optional[values.WakerShape] = None) -> values.AgentChange:
        """Change how the agent HANDLE is woken and its limits; what is not given stays.

        *options* and *headers* change the keys they name (``None`` removes one).
        *shape* is the agent's waker as it will be (the new *waker*, else its
        own): a new waker drops the command, URL and options the old one used
        and the new one does not.  The result is validated as ``add_agent``
        validates a new agent.
        """
        with self.writing() as s:
            p, a = self._live_agent(s, handle, lock=True)
            before = values.AgentInfo.from_rows(p, a)
            new_waker = waker or a.waker
            if shape is not None and shape.name != new_waker:
                raise errors.UserError(f"agent {handle}'s waker was changed meanwhile "
                                       f"(it is {a.waker} now): try again")
            opts = dict(a.options or {})
            new_command, new_url = a.command, a.url
            if new_waker != a.waker:
                target, accepts = (shape.target, shape.accepts) if shape else ("", ())
                opts = {k: v for k, v in opts.items() if k in accepts + AGENT_OPTIONS}
                new_command = a.command if target == "command" else None
                new_url = a.url if target == "url" else None
            for key, value in (options or {}).items():
                if value is None:
                    opts.pop(key, None)
                else:
                    opts[key] = value
            if headers:
                merged = dict(opts.get("headers") or {})
                for name, value in headers.items():
                    if value is None:
                        merged.pop(name, None)
                    else:
                        merged[name] = value
                opts["headers"] = merged
            if not opts.get("headers"):
                opts.pop("headers", None)
            new_command = new_command if command is KEEP else command
            new_url = new_url if url is KEEP else url
            new_timeout = a.timeout if timeout is KEEP else timeout
            new_workdir = a.workdir if workdir is KEEP else workdir
            check_agent(shape, new_command, new_url, new_timeout)
            a.waker, a.command, a.url = new_waker, new_command, new_url
            a.timeout, a.workdir, a.options = new_timeout, new_workdir, opts
            s.flush()
            return values.AgentChange(before, values.AgentInfo.from_rows(p, a))

    def retire_agent(self, handle: str, now: dt.datetime, *, force: bool = False,
                     end_turn: Optional[Callable[[Session, Wake], None]] = None) -> values.Retired:
        """Remove the agent HANDLE: the loop stops seeing it, its handle is free again.

        Its participant row stays, for the posts, wakes and decisions that name
        it.  Refused while a turn of it is pending or running, unless *force*:
        then *end_turn* closes each of them, in this same transaction.  What
        it owed (mentions not yet answered, looks due) is dropped.
        """
        with self.writing() as s:
            p, a = self._live_agent(s, handle, lock=True)
            flight = agent_in_flight(s, p.id)
            if flight and not force:
                ids = ", ".join(str(w.id) for w in flight)
                raise errors.UserError(
                    f"agent {p.handle!r} has {len(flight)} turn(s) pending or running "
                    f"(wake {ids}): wait for them to end, or give --force to end them")
            if flight and end_turn is None:
                raise ValueError("retire_agent(force=True) needs end_turn for its turns")
            for w in flight:
                end_turn(s, w)
            s.flush()
            a.retired_at = now
            self._retire(s, p, now)
            s.execute(sa.delete(Owed).where(Owed.agent_id == p.id))
            s.execute(sa.update(Listener).where(Listener.agent_id == p.id)
                      .values(due_at=None, hold_reason=None, hold_since=None))
            # An absence in progress ends with it (it will not come back to tell of it).
            s.execute(sa.update(Activity).where(Activity.agent_id == p.id,
                                                Activity.returned_at.is_(None))
                      .values(returned_at=now, status=AbsenceStatus.COMPLETED))
            return values.Retired(values.ParticipantInfo.from_row(p),
                                  tuple(w.id for w in flight))

    def retire_person(self, handle: str, now: dt.datetime) -> values.Retired:
        """Remove the person HANDLE: their posts stay, they may post no more, the handle is free."""
        with self.writing() as s:
            p = self._participant(s, handle)
            if p.kind != "person":
                raise errors.UserError(f"{p.handle!r} is an agent: use `mood-poller agent remove`")
            self._retire(s, p, now)
            return values.Retired(values.ParticipantInfo.from_row(p))

    @staticmethod
    def _retire(s: Session, p: Participant, now: dt.datetime) -> None:
        # The handle key is unique: renaming it frees the handle, and a
        # renamed key (``~`` is never in a handle) is neither mentioned nor found.
        p.retired_at = now
        p.handle_key = f"{p.handle_key}~retired-{p.id}"
        s.flush()

    @staticmethod
    def _live_agent(s: Session, handle: str, lock: bool = False) -> tuple[Participant, Agent]:
        p = Store._participant(s, handle)
        q = sa.select(Agent).where(Agent.participant_id == p.id)
        if lock and s.get_bind().dialect.name == "postgresql":
            q = q.with_for_update()
        a = s.scalar(q)
        if a is None:
            raise errors.NotFound(f"{p.handle!r} is a person, not an agent")
        return p, a

    def _new_participant(self, s: Session, handle: str, kind: str, trust: str,
                         now: dt.datetime) -> Participant:
        text.check_handle(handle)
        key = handle.lower()
        if s.scalar(sa.select(Participant.id).where(Participant.handle_key == key)) is not None:
            raise errors.AlreadyExists(f"handle {handle!r} is already taken")
        p = Participant(handle=handle, handle_key=key, kind=kind, trust=trust, created_at=now)
        s.add(p)
        s.flush()
        return p

    def set_trust(self, handle: str, trust: str) -> values.ParticipantInfo:
        if trust not in TRUST_LEVELS:
            raise errors.UserError(f"trust must be one of {', '.join(TRUST_LEVELS)}, got {trust!r}")
        with self.writing() as s:
            p = self._participant(s, handle)
            if p.kind != "person":
                raise errors.UserError(f"{p.handle!r} is an agent; trust applies to people")
            p.trust = trust
            return values.ParticipantInfo.from_row(p)

    def participant(self, handle: str) -> values.ParticipantInfo:
        with self.reading() as s:
            return values.ParticipantInfo.from_row(self._participant(s, handle))

    def people(self, include_retired: bool = False) -> list[values.ParticipantInfo]:
        with self.reading() as s:
            q = sa.select(Participant).where(Participant.kind == "person").order_by(Participant.handle_key)
            if not include_retired:
                q = q.where(Participant.retired_at.is_(None))
            return [values.ParticipantInfo.from_row(p) for p in s.scalars(q)]

    def agents(self, include_retired: bool = False) -> list[values.AgentInfo]:
        with self.reading() as s:
            q = (sa.select(Participant, Agent).join(Agent, Agent.participant_id == Participant.id)
                 .order_by(Participant.handle_key))
            if not include_retired:
                q = q.where(Agent.retired_at.is_(None))
            return [values.AgentInfo.from_rows(p, a) for p, a in s.execute(q)]

    def agent(self, handle: str) -> values.AgentInfo:
        with self.reading() as s:
            p = self._participant(s, handle)
            a = s.get(Agent, p.id)
            if a is None:
                raise errors.NotFound(f"{p.handle!r} is a person, not an agent")
            return values.AgentInfo.from_rows(p, a)

    @staticmethod
    def _participant(s: Session, handle: str) -> Participant:
        p = s.scalar(_statements().participant, {"key": (handle or "").lower()})
        if p is None:
            raise errors.NotFound(f"no person or agent {handle!r}")
        return p

    # -- Posts ---------------------------------------------------------------

    def add_post(self, slug: str, sender: str, body: str, now: dt.datetime, *,
                 reply_to: Optional[int] = None, kind: str = "post") -> values.PostInfo:
        """Ingest one post (see :func:`ingest`)."""
        return self.ingest([NewPost(slug, sender, body, now, kind, reply_to)])[0]

    def add_posts(self, items: Sequence[tuple[str, str, str, dt.datetime]]) -> list[int]:
        """Ingest many ``(slug, sender, text, at)`` posts in one transaction; their ids."""
        return [p.id for p in self.ingest([NewPost(*it) for it in items])]

    def admit(self, posts: Sequence[NewPost | Admitted]) -> list[Admitted]:
        """Judge and count *posts* before any transaction opens (see :func:`admit`)."""
        return admit(self.counter, posts)

    def ingest(self, posts: Sequence[NewPost | Admitted]) -> list[values.PostInfo]:
        """Write *posts* in one transaction, all or none, their texts judged and counted
        before it opens, so a refused text costs no lock and a long one holds none."""
        ready = self.admit(posts)
        with self.writing() as s:
            return ingest(s, self.counter, ready)

    @classmethod
    def _sender(cls, s: Session, handle: str) -> Participant:
        """Whoever posts as HANDLE; a removed person or agent may not."""
        try:
            who = cls._participant(s, handle)
        except errors.NotFound:
            key = (handle or "").lower()
            gone = s.scalar(sa.select(Participant.handle).where(
                Participant.handle_key.startswith(f"{key}~retired-", autoescape=True)).limit(1))
            if gone is None:
                raise
            raise errors.UserError(f"{gone!r} was removed and can no longer post") from None
        if who.retired_at is not None:
            raise errors.UserError(f"{who.handle!r} was removed and can no longer post")
        return who

    def posts(self, slug: str, limit: int = 50, after_id: int = 0) -> list[values.PostInfo]:
        """The newest *limit* posts of a Mood (after *after_id*), oldest first."""
        if limit < 1:
            raise errors.UserError("--limit must be at least 1")
        with self.reading() as s:
            mood = self._mood(s, slug)
            q = (sa.select(Post, Participant.handle, Participant.kind)
                 .join(Participant, Participant.id == Post.sender_id)
                 .where(Post.mood_id == mood.id, Post.id > after_id)
                 .order_by(Post.id.desc()).limit(limit))
            rows = s.execute(q).all()
            return [values.PostInfo.from_row(p, slug, h, k) for p, h, k in reversed(rows)]

    def poller_has_run(self) -> bool:
        """True once a poller has run its first cycle on this store (posts since are heard)."""
        with self.reading() as s:
            return s.connection().execute(_POSTS_CURSOR).first() is not None

    # -- Sign-ins --------------------------------------------------------------

    def add_signin(self, handle: str, slug: str, now: dt.datetime, tier: str = "key",
                   label: str = "") -> values.SignInInfo:
        if tier not in ("key", "wiki"):
            raise errors.UserError(f"tier must be key or wiki, got {tier!r}")
        text.check_text(label, "the label", MAX_LABEL_CHARS)
        with self.writing() as s:
            mood = self._mood(s, slug)
            who = self._participant(s, handle)
            row = SignIn(participant_id=who.id, mood_id=mood.id, tier=tier, label=label, at=now)
            s.add(row)
            s.flush()
            return values.SignInInfo(row.id, who.handle, slug, tier, label, now)

    def signal_typing(self, handle: str, slug: str, now: dt.datetime) -> values.MoodInfo:
        """Record that *handle* is typing in the Mood: its considers wait until
        ``law.TYPING_HOLD`` after the newest such signal."""
        with self.writing() as s:
            mood = self._mood(s, slug)
            self._participant(s, handle)
            if mood.typing_at is None or mood.typing_at < now:
                mood.typing_at = now
            s.flush()
            return values.MoodInfo.from_row(mood)

    # -- Settings --------------------------------------------------------------

    def set_setting(self, key: str, value: str, now: dt.datetime, *, mood: Optional[str] = None,
                    agent: Optional[str] = None, by: Optional[str] = None, note: str = "",
                    until: Optional[dt.datetime] = None) -> values.SettingChange:
        """Validate and append one settings row."""
        return self.set_settings({key: value}, now, mood=mood, agent=agent, by=by,
                                 note=note, until=until)[0]

    def set_settings(self, changes: dict[str, str], now: dt.datetime, *,
                     mood: Optional[str] = None, agent: Optional[str] = None,
                     by: Optional[str] = None, note: str = "",
                     until: Optional[dt.datetime] = None) -> list[values.SettingChange]:
        """Validate every change first, then append them all in one transaction."""
        parsed = {k: settings.validate(k, v, until if k == "listening" else None)
                  for k, v in changes.items()}
        if until is not None and "listening" not in changes:
            raise errors.InvalidSetting("--until applies only to listening")
        if until is not None and until <= now:
            raise errors.InvalidSetting("--until must be in the future")
        text.check_text(note, "the note", MAX_NOTE_CHARS)
        with self.writing() as s:
            mood_id, agent_id = self._slot(s, mood, agent)
            by_id = self._participant(s, by).id if by else None
            before = self._resolve(s, mood_id, agent_id, now)
            out = []
            for key, value in parsed.items():
                s.add(Setting(mood_id=mood_id, agent_id=agent_id, key=key, value=str(value),
                              until=until if key == "listening" else None, set_by=by_id,
                              note=note, at=now))
                out.append(values.SettingChange(key, before[key].value, value, by, mood, agent, now, note))
            s.flush()
            return out

    def resolved(self, now: dt.datetime, mood: Optional[str] = None,
                 agent: Optional[str] = None) -> dict[str, settings.Resolved]:
        """Settings as they apply to a Mood and agent named by slug and handle."""
        with self.reading() as s:
            mood_id, agent_id = self._slot(s, mood, agent)
            return self._resolve(s, mood_id, agent_id, now)

    def _slot(self, s: Session, mood: Optional[str],
              agent: Optional[str]) -> tuple[Optional[int], Optional[int]]:
        """The (Mood id, agent id) a slug and a handle name; None for "every"."""
        mood_id = self._mood(s, mood).id if mood else None
        agent_id = None
        if agent:
            a = self._participant(s, agent)
            if a.kind != "agent":
                raise errors.NotFound(f"{a.handle!r} is a person, not an agent")
            agent_id = a.id
        return mood_id, agent_id

    @staticmethod
    def _resolve(s: Session, mood_id, agent_id, now) -> dict[str, settings.Resolved]:
        return resolve_in(s, mood_id, agent_id, now)


def check_new_mood(slug: str, title: str) -> None:
    """A new Mood's slug and title, checked before any transaction."""
    text.check_slug(slug)
    text.check_text(title, "the Mood title", MAX_TITLE_CHARS)


def new_mood(s: Session, slug: str, title: str, now: dt.datetime) -> Mood:
    """Insert a Mood (its slug and title already checked); AlreadyExists if the slug is taken."""
    if s.scalar(sa.select(Mood.id).where(Mood.slug == slug)) is not None:
        raise errors.AlreadyExists(f"Mood {slug!r} already exists")
    mood = Mood(slug=slug, title=title or slug, archived=False, created_at=now)
    s.add(mood)
    s.flush()
    return mood


def check_agent(shape: Optional[values.WakerShape], command: Optional[str], url: Optional[str],
                timeout: Optional[float]) -> None:
    """Refuse an agent that could not be woken: what ``agent add`` and ``agent set`` check
    here (what its waker takes is checked where the wakers are known)."""
    aimed_by = {"command": command, "url": url}.get(shape.target if shape else "")
    if shape is not None and shape.target in NEEDS and not (aimed_by and aimed_by.strip()):
        raise errors.UserError(NEEDS[shape.target])
    if timeout is not None and not 0 < timeout <= 1e9:  # NaN fails this too
        raise errors.UserError(f"timeout must be a positive number of seconds, at most "
                               f"1,000,000,000, got {timeout:g}")


def agent_in_flight(s: Session, agent_id: int) -> list[Wake]:
    """The agent's turns pending or running, oldest first, locked on PostgreSQL."""
    q = (sa.select(Wake).where(Wake.agent_id == agent_id, Wake.status.in_(IN_FLIGHT))
         .order_by(Wake.id))
    if s.get_bind().dialect.name == "postgresql":
        q = q.with_for_update()
    return list(s.scalars(q))


def resolve_in(s: Session, mood_id: Optional[int], agent_id: Optional[int],
               now: dt.datetime) -> dict[str, settings.Resolved]:
    """Settings as they apply to (Mood, agent), reading only the rows that can apply."""
    q = sa.select(Setting.id, Setting.mood_id, Setting.agent_id, Setting.key,
                  Setting.value, Setting.until, Setting.at).where(
        sa.or_(Setting.mood_id.is_(None), Setting.mood_id == mood_id),
        sa.or_(Setting.agent_id.is_(None), Setting.agent_id == agent_id))
    rows = [settings.Row(r.id, r.mood_id, r.agent_id, r.key, r.value, r.until, r.at)
            for r in s.execute(q)]
    return settings.resolve(rows, mood_id, agent_id, now)


# -- The one door for posts ----------------------------------------------------------------
#
# Every post enters a Mood here: a person's (the CLI, the API, a bridge), an agent's
# reply, silence, return or handoff, and the service's own notes.  Its text is judged
# once (admit), then the batch is written with set INSERTs (ingest).


@dataclass(frozen=True)
class NewPost:
    """A post on its way into a Mood, as :func:`ingest` takes it.

    *mood* is the Mood's id or slug, *sender* the participant's id or handle (a
    handle whose owner was removed may not post).  *tokens*, when given, were
    counted already.  A bridge passes its name as *origin* (nothing is sent back
    there) and, when its chat says whom a post mentions, those as *mentions*
    (participant id -> ``at`` or ``reply``) in place of the ``@handle`` reading.
    """

    mood: int | str
    sender: int | str
    text: str
    at: dt.datetime
    kind: str = PostKind.POST
    reply_to: Optional[int] = None
    origin: Optional[str] = None
    mentions: Optional[dict[int, str]] = None
    tokens: Optional[int] = None


@dataclass(frozen=True)
class Admitted:
    """A post :func:`admit` let in (and nothing else makes one): its text as it will be
    stored, and its tokens."""

    post: NewPost
    text: str
    tokens: int


_POSTS_CURSOR = sa.select(Cursor.__table__.c.name).where(Cursor.__table__.c.name == "posts")


def admit(counter: Optional[tokens.Counter], posts: Sequence[NewPost | Admitted]
          ) -> list[Admitted]:
    """Let *posts* in, or refuse the first whose text may not enter: the one place a
    post's text is judged.  Conversation (``post``) must pass
    :func:`poller.text.check_post_text` (not empty, not too long, no NUL, valid
    UTF-8); the service's own notes, an agent's silence, return or handoff only lose
    any NUL byte.  Tokens are counted here, once, where not given; posts already
    admitted pass as they are."""
    out = [p if isinstance(p, Admitted) else Admitted(p, _judged(p), p.tokens) for p in posts]
    todo = [i for i, a in enumerate(out) if a.tokens is None]
    for i, n in zip(todo, _counted(counter, [out[i].text for i in todo])):
        out[i] = Admitted(out[i].post, out[i].text, n)
    return out


def _counted(counter: tokens.Counter, texts: list[str]) -> list[int]:
    if len(texts) == 1:  # a batch count starts threads: not worth it for one post
        return [counter.count(texts[0])]
    return counter.count_many(texts) if texts else []


def _judged(post: NewPost) -> str:
    for what, name in (("Mood", post.mood), ("sender", post.sender)):
        if isinstance(name, str):
            text.check_text(name, f"the {what} {name!r:.40}")
    if post.kind == PostKind.POST:
        return text.check_post_text(post.text)
    return post.text.replace("\x00", "")


def ingest(s: Session, counter: Optional[tokens.Counter], posts: Sequence[NewPost | Admitted]
           ) -> list[values.PostInfo]:
    """Write *posts* into their Moods, in order, inside the caller's transaction.

    Each is admitted (:func:`admit`) unless it was already; then the senders and
    Moods are found, a ``reply_to`` must name a post of the same Mood, and the
    posts, their mentions (conversation only) and their outbox items
    (:func:`poller.store.outbox.enqueue_posts`) are written in a few statements.
    A refusal raises before anything is written; the commit rings the loops'
    bell (:func:`touch_cursor_tables`).  On SQLite the posts join the full-text index
    here (:func:`index_for_search`).
    """
    s.flush()  # what the session holds (a Mood just made) goes first: read on its connection
    ready = _addressed(s, admit(counter, posts))
    if not ready:
        return []
    touch_cursor_tables(s)
    rows = [dict(mood_id=r.mood.id, sender_id=r.sender.id, created_at=r.post.at, text=r.text,
                 kind=r.post.kind, reply_to=r.post.reply_to, tokens=r.tokens) for r in ready]
    if s.get_bind().dialect.name == "sqlite":
        # One multi-row INSERT (SQLAlchemy would send a row at a time to return the ids in
        # order): SQLite has one writer and gives each new row the largest id + 1, so the
        # ids in ascending order are the rows' order (see index_for_search).
        ids = sorted(s.connection().execute(_statements().insert_posts_unordered, rows).scalars())
    else:
        ids = list(s.connection().execute(_statements().insert_posts, rows).scalars())
    index_for_search(s, ids)
    _record_mentions(s, ready, ids)
    outbox.enqueue_posts(s, [outbox.Posted(i, r.mood.id, r.post.kind, r.sender.kind, r.post.at,
                                           r.post.origin) for i, r in zip(ids, ready)])
    return [values.PostInfo(i, r.mood.slug, r.sender.handle, r.sender.kind, r.post.at, r.text,
                            r.post.kind, r.post.reply_to, r.tokens) for i, r in zip(ids, ready)]


def insert_post(s: Session, counter: Optional[tokens.Counter], mood_id: int, sender_id: int,
                body: str, now: dt.datetime, *, kind: str = PostKind.POST,
                reply_to: Optional[int] = None, origin: Optional[str] = None,
                mentions: Optional[dict[int, str]] = None,
                tokens: Optional[int] = None) -> values.PostInfo:
    """One post through :func:`ingest`, for verbs that write one in their own transaction."""
    return ingest(s, counter, [NewPost(mood_id, sender_id, body, now, kind, reply_to, origin,
                                       mentions, tokens)])[0]


def index_for_search(s: Session, ids: Sequence[int]) -> None:
    """SQLite: add the posts just inserted (*ids*, in this transaction) to the full-text
    index (migration 0016, read by :mod:`poller.store.search`), in one statement.  Every
    post comes in by :func:`ingest`, so none is missed; FTS5 triggers keep edits and
    deletes in step, but one on insert, run once a row, costs ~15 times as much.
    (PostgreSQL's GIN index keeps itself.)  The ids of one insert in one write
    transaction are consecutive on SQLite: one writer, each rowid the largest + 1."""
    if not ids or s.get_bind().dialect.name != "sqlite":
        return
    s.execute(_statements().index_posts, {"low": min(ids), "high": max(ids)})


class _Addressed(NamedTuple):
    """An admitted post with the rows it goes between, found in the writing transaction."""

    post: NewPost
    text: str
    tokens: int
    mood: Mood  # or a row of its id and slug
    sender: Participant  # or a row of its id, handle and kind
    replied_to: Optional[int]  # the sender of the post it answers


def _addressed(s: Session, ready: Sequence[Admitted]) -> list[_Addressed]:
    """Each post's Mood and sender (each looked up once) and whom it answers, refusing
    in the posts' order as one at a time would."""
    moods, people = _named(s, ready)
    targets = _reply_targets(s, [a.post.reply_to for a in ready])
    out = []
    for a in ready:
        p = a.post
        mood = moods[p.mood] if p.mood in moods else moods.setdefault(p.mood, _mood_of(s, p.mood))
        who = (people[p.sender] if p.sender in people
               else people.setdefault(p.sender, _sender_of(s, p.sender)))
        out.append(_Addressed(p, a.text, a.tokens, mood, who, _answered(targets, p.reply_to, mood)))
    return out


def _named(s: Session, ready: Sequence[Admitted]) -> tuple[dict, dict]:
    """The Moods and senders a batch names by slug and handle, read as plain rows (id,
    slug; id, handle, kind): one statement for a request's post (one of each), else one
    for each kind; a Mood not found, or a sender not
    found or removed, is left for :meth:`Store._mood` / :meth:`Store._sender` to refuse
    in their words, in the posts' order."""
    slugs = {a.post.mood for a in ready if isinstance(a.post.mood, str)}
    handles = {a.post.sender for a in ready if isinstance(a.post.sender, str)}
    moods: dict = {}
    people: dict = {}
    conn = s.connection() if slugs or handles else None
    st = _statements()
    if len(slugs) == 1 and len(handles) == 1:  # (a request's post: both in one round trip)
        (slug,), (handle,) = slugs, handles
        for what, ident, key, name, kind, retired in conn.execute(
                st.one_of_each, {"slug": slug, "key": handle.lower()}):
            if what == "m":
                moods[key] = _MoodRow(ident, key)
            elif retired is None:
                people[handle] = _PersonRow(ident, name, key, kind, retired)
        return moods, people
    if slugs:
        moods.update((m.slug, m) for m in conn.execute(st.moods, {"slugs": sorted(slugs)}))
    if handles:
        keys = sorted({h.lower() for h in handles})
        by_key = {p.handle_key: p for p in conn.execute(st.participants, {"keys": keys})}
        people.update((h, by_key[h.lower()]) for h in handles
                      if h.lower() in by_key and by_key[h.lower()].retired_at is None)
    return moods, people


class _MoodRow(NamedTuple):
    id: int
    slug: str


class _PersonRow(NamedTuple):
    id: int
    handle: str
    handle_key: str
    kind: str
    retired_at: Optional[dt.datetime]


def _mood_of(s: Session, ref: int | str) -> Mood:
    return s.get(Mood, ref) if isinstance(ref, int) else Store._mood(s, ref)


def _sender_of(s: Session, ref: int | str) -> Participant:
    return s.get(Participant, ref) if isinstance(ref, int) else Store._sender(s, ref)


def _reply_targets(s: Session, reply_to: Sequence[Optional[int]]) -> dict[int, tuple[int, int]]:
    """Post id -> (Mood id, sender id) of the posts *reply_to* names."""
    wanted = {r for r in reply_to if r is not None}
    if not wanted:
        return {}
    return {pid: (mood_id, sender_id)
            for pid, mood_id, sender_id in s.execute(_statements().reply_targets,
                                                     {"ids": sorted(wanted)})}


def _answered(targets: dict[int, tuple[int, int]], reply_to: Optional[int],
              mood: Mood) -> Optional[int]:
    if reply_to is None:
        return None
    target = targets.get(reply_to)
    if target is None or target[0] != mood.id:
        raise errors.NotFound(f"no post {reply_to} in Mood {mood.slug!r} to reply to")
    return target[1]


def _record_mentions(s: Session, posts: Sequence[_Addressed], ids: Sequence[int]) -> None:
    """Whom each conversation post names with ``@handle`` (or, from a bridge, whom its
    chat says it mentions) and whose post it answers: one lookup of every handle named,
    one insert.  Nobody mentions themselves."""
    talk = [(i, p) for i, p in zip(ids, posts) if p.post.kind == PostKind.POST]
    named = {i: text.mentioned_keys(p.text) for i, p in talk if p.post.mentions is None}
    keys = set().union(*named.values())
    found = dict(s.execute(_statements().handles,
                           {"keys": sorted(keys)}).all()) if keys else {}
    rows = []
    for i, p in talk:
        mentioned = (dict(p.post.mentions) if p.post.mentions is not None
                     else {found[k]: "at" for k in sorted(named[i]) if k in found})
        if p.replied_to is not None and p.replied_to not in mentioned:
            mentioned[p.replied_to] = "reply"
        mentioned.pop(p.sender.id, None)
        rows += [dict(post_id=i, participant_id=pid, via=via) for pid, via in mentioned.items()]
    if rows:
        s.connection().execute(_statements().insert_mentions, rows)


class _Statements(NamedTuple):
    mood: sa.Select
    moods: sa.Select
    participant: sa.Select
    participants: sa.Select
    one_of_each: sa.CompoundSelect
    insert_posts: sa.Insert
    insert_posts_unordered: sa.Insert
    index_posts: sa.TextClause
    reply_targets: sa.Select
    handles: sa.Select
    insert_mentions: sa.Insert
    cursor_lock: sa.TextClause
    cursor_lock_and_notify: sa.TextClause


# Table columns, not the models' attributes: a post's way in builds no ORM state, so a
# command that writes one post never configures the mappers (about 15 ms).
_POSTS, _PEOPLE, _MOODS = Post.__table__, Participant.__table__, Mood.__table__


@functools.cache
def _statements() -> _Statements:
    """The statements a post's way in runs, built at their first use (not at import: a
    command that writes one post starts faster) and kept, their values bound at execution:
    SQLAlchemy then neither builds them again nor computes their cache keys."""
    return _Statements(
        mood=sa.select(Mood).where(Mood.slug == sa.bindparam("slug")),
        moods=sa.select(_MOODS.c.id, _MOODS.c.slug)
        .where(_MOODS.c.slug.in_(sa.bindparam("slugs", expanding=True))),
        participant=sa.select(Participant).where(Participant.handle_key == sa.bindparam("key")),
        participants=sa.select(_PEOPLE.c.id, _PEOPLE.c.handle, _PEOPLE.c.handle_key,
                               _PEOPLE.c.kind, _PEOPLE.c.retired_at)
        .where(_PEOPLE.c.handle_key.in_(sa.bindparam("keys", expanding=True))),
        # The sender first: its columns' types are the union's (the Mood's are padded).
        one_of_each=sa.union_all(
            sa.select(sa.literal("p"), _PEOPLE.c.id, _PEOPLE.c.handle_key, _PEOPLE.c.handle,
                      _PEOPLE.c.kind, _PEOPLE.c.retired_at)
            .where(_PEOPLE.c.handle_key == sa.bindparam("key")),
            sa.select(sa.literal("m"), _MOODS.c.id, _MOODS.c.slug,
                      sa.cast(sa.null(), _PEOPLE.c.handle.type),
                      sa.cast(sa.null(), _PEOPLE.c.kind.type),
                      sa.cast(sa.null(), _PEOPLE.c.retired_at.type))
            .where(_MOODS.c.slug == sa.bindparam("slug"))),
        insert_posts=sa.insert(_POSTS).returning(_POSTS.c.id, sort_by_parameter_order=True),
        insert_posts_unordered=sa.insert(_POSTS).returning(_POSTS.c.id),
        index_posts=sa.text(f"INSERT INTO {SEARCH_TABLE} (rowid, text) SELECT id, text FROM "
                            f"posts WHERE id BETWEEN :low AND :high"),
        reply_targets=sa.select(_POSTS.c.id, _POSTS.c.mood_id, _POSTS.c.sender_id)
        .where(_POSTS.c.id.in_(sa.bindparam("ids", expanding=True))),
        handles=sa.select(_PEOPLE.c.handle_key, _PEOPLE.c.id)
        .where(_PEOPLE.c.handle_key.in_(sa.bindparam("keys", expanding=True))),
        insert_mentions=sa.insert(Mention.__table__),
        cursor_lock=sa.text("SELECT pg_advisory_xact_lock(:k)"),
        cursor_lock_and_notify=sa.text(
            f"SELECT pg_advisory_xact_lock(:k), pg_notify('{bell.CHANNEL}', '')"))


# -- Append-only tables read by cursor ---------------------------------------------------
#
# The loop reads posts, sign-ins and settings past the highest id it has seen.
# On PostgreSQL an id is handed out at INSERT but becomes visible at COMMIT, so
# two writers could commit ids out of order and a cursor could skip the one
# that committed late.  Every transaction that inserts into these tables first
# takes one transaction-scoped advisory lock, so their ids commit in order.
# (SQLite needs nothing: it has one writer at a time.)

CURSOR_TABLES_LOCK = 7_351_001  # an arbitrary application-wide advisory lock key


@event.listens_for(Session, "before_flush")
def _serialise_cursor_tables(session: Session, _context, _instances) -> None:
    if any(isinstance(obj, (Post, SignIn, Setting)) for obj in session.new):
        touch_cursor_tables(session)


def touch_cursor_tables(session: Session) -> None:
    """This transaction is about to add posts, sign-ins or settings: serialise it with
    the others that do (PostgreSQL) and have its commit wake the loops."""
    first = not session.info.get(RING)
    session.info[RING] = True
    if session.get_bind().dialect.name != "postgresql":
        return
    # Taken again at every flush: a savepoint rolled back may have released it.
    # The first time, with the NOTIFY (as pg_notify: one round trip for both), delivered
    # to the LISTENing loops when (and only if) this commits.
    st = _statements()
    session.connection().execute(st.cursor_lock_and_notify if first else st.cursor_lock,
                                 {"k": CURSOR_TABLES_LOCK})


# A commit that added posts, sign-ins or settings wakes the loops at once (see
# poller.store.bell); a rolled-back one wakes nobody.
RING = "mood_poller_ring"


@event.listens_for(Session, "after_commit")
def _ring_loops(session: Session) -> None:
    if session.info.pop(RING, False):
        url = session.get_bind().url
        bell.committed(url.database if url.get_backend_name() == "sqlite" else None)


@event.listens_for(Session, "after_rollback")
def _forget_ring(session: Session) -> None:
    session.info.pop(RING, None)
