"""Full-text search over posts: what ``mood-poller search``, ``GET /api/v1/search``, the
page's search box and an agent's ``search`` tool read.

The database finds and ranks (migration 0016).  On SQLite an FTS5 table over the
posts' text, to which :func:`poller.store.core.ingest` (the one door every post comes
in by) adds each post, and which triggers on ``posts`` keep in step with edits and
deletes (a bridge's edit, a redaction), ranked by bm25 with a lift for posts where the
words stand within :data:`NEAR_TOKENS` of each other; on PostgreSQL a generated column,
``to_tsvector('simple', text)`` with ASCII punctuation made spaces (the parser would
keep a URL or an address whole and skip what looks like a tag), with a GIN index,
which the server keeps itself, ranked by ``ts_rank`` (which weighs nearness itself).
So a post is found as soon as its transaction commits, by its newest text; a post
redacted in its bridge, and an agent's silence, are never found.

What a person typed never reaches a query language: it is cut into words (runs of
letters and digits, lower-cased), and only those are searched for: on SQLite each as an
FTS5 string (``"and"``, never the operator), on PostgreSQL together through
``plainto_tsquery``.  Every word must be in a post, in any order; a query with no word
in it (``*``, ``"``) matches nothing, and no query is a syntax error.

The matched words are marked here, on the stored text, alike on both databases
(FTS5's ``snippet()`` and ``ts_headline`` choose different excerpts, and
``ts_headline`` drops whatever looks like an HTML tag): a :class:`Hit` carries its
excerpt as parts, ``(text, matched)`` pairs, for a page to render escaped with
``<mark>`` around the matched ones; :attr:`Hit.snippet` is the same excerpt as one
line with the matched words between :data:`OPEN` and :data:`CLOSE` («like this»).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Optional

import sqlalchemy as sa
from sqlalchemy.orm import Session

from poller import errors, text
from poller.kinds import PostKind
from poller.models import SEARCH_COLUMN, SEARCH_TABLE, Mood, Participant, Post
from poller.store.bridges import REMOVED
from poller.store.core import Store

OPEN, CLOSE = "\u00ab", "\u00bb"  # « and »: around a matched word in a snippet
MAX_QUERY_CHARS = 500
MAX_WORDS = 32
DEFAULT_LIMIT = 20
MAX_LIMIT = 100
SNIPPET_CHARS = 200  # about this long, cut at spaces, with … where text was left out
NEAR_TOKENS = 10  # SQLite: words this close to each other lift a post ...
NEAR_LIFT = 2.0  # ... by this factor of its bm25 score
ELLIPSIS = "\u2026"

# A word as both databases cut text: a run of letters and digits (FTS5's unicode61
# tokenizer and PostgreSQL's parser both split at everything else, "_" included).
_WORD = re.compile(r"[^\W_]+")
_PG_WORDS = f"posts.{SEARCH_COLUMN}"  # to_tsvector('simple', text), punctuation made spaces


# -- The query -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    """What a person asked for: the words in what they typed, lower-cased, each once."""

    words: tuple[str, ...]


def parse(raw: str) -> Query:
    """*raw* as a :class:`Query`; UserError if it is empty, too long or has too many words.

    A query of only punctuation is no error: it has no words and matches nothing."""
    text.check_text(raw, "the query", MAX_QUERY_CHARS)
    if not raw.strip():
        raise errors.UserError("give words to search for")
    words = tuple(dict.fromkeys(w.lower() for w in _WORD.findall(raw)))
    if len(words) > MAX_WORDS:
        raise errors.UserError(f"the query has {len(words)} words: search for at most "
                               f"{MAX_WORDS}")
    return Query(words)


def fts5_string(word: str) -> str:
    """*word* as an FTS5 string: in double quotes, a double quote in it doubled.  FTS5
    reads a string as the words in it, never as an operator (``"near"``, ``"and"``)."""
    return '"' + word.replace('"', '""') + '"'


def fts5_match(query: Query) -> str:
    """Every word, each a string: FTS5 matches a post holding them all."""
    return " ".join(fts5_string(w) for w in query.words)


def fts5_near(query: Query) -> Optional[str]:
    """The words within :data:`NEAR_TOKENS` of each other; None for a single word."""
    if len(query.words) < 2:
        return None
    return f"NEAR({fts5_match(query)}, {NEAR_TOKENS})"


# -- The excerpt ---------------------------------------------------------------------------


Parts = tuple[tuple[str, bool], ...]


def excerpt(body: str, words: frozenset[str], width: int = SNIPPET_CHARS) -> Parts:
    """About *width* characters of *body* on one line around the most matched words, as
    ``(text, matched)`` parts; an ellipsis part where text was left out.  The parts, put
    together, are the text itself (white space runs as one space)."""
    flat = " ".join(body.split())
    spans = [m.span() for m in _WORD.finditer(flat) if m.group().lower() in words]
    start, end = _window(flat, spans, width)
    parts: list[tuple[str, bool]] = [(ELLIPSIS, False)] if start > 0 else []
    at = start
    for a, b in spans:
        if a < at or b > end:
            continue
        parts += [(flat[at:a], False), (flat[a:b], True)]
        at = b
    parts.append((flat[at:end], False))
    if end < len(flat):
        parts.append((ELLIPSIS, False))
    return _joined(parts)


def _window(flat: str, spans: list[tuple[int, int]], width: int) -> tuple[int, int]:
    """Where the excerpt starts and ends: the stretch of *width* holding the most matches
    (the first such), begun a little before the first of them and cut at spaces."""
    if len(flat) <= width:
        return 0, len(flat)
    start = 0
    if spans:
        lead = width // 4
        best = max(((sum(1 for a, b in spans if s <= a and b <= s + width), -s)
                    for s in (max(0, a - lead) for a, _ in spans)))
        start = -best[1]
    if start > 0 and flat[start - 1] != " ":
        space = flat.rfind(" ", 0, start)
        start = space + 1 if space >= 0 else 0
    end = min(len(flat), start + width)
    if end < len(flat) and flat[end] != " ":
        space = flat.rfind(" ", start, end)
        end = space if space > start else end
    return start, end


def _joined(parts: list[tuple[str, bool]]) -> Parts:
    """Empty parts dropped, neighbours of the same kind joined."""
    out: list[tuple[str, bool]] = []
    for part, matched in parts:
        if not part:
            continue
        if out and out[-1][1] == matched:
            out[-1] = (out[-1][0] + part, matched)
        else:
            out.append((part, matched))
    return tuple(out)


def marked(parts: Parts) -> str:
    """The parts as one string, each matched part between :data:`OPEN` and :data:`CLOSE`."""
    return "".join(f"{OPEN}{t}{CLOSE}" if matched else t for t, matched in parts)


# -- A hit -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    """One post found, best first; its text as an excerpt with the matched words marked."""

    id: int
    mood: str
    sender: str
    sender_kind: str
    created_at: dt.datetime
    kind: str
    reply_to: Optional[int]
    parts: Parts

    @property
    def snippet(self) -> str:
        return marked(self.parts)

    def to_json(self) -> dict:
        return {"id": self.id, "mood": self.mood, "sender": self.sender,
                "sender_kind": self.sender_kind, "created_at": text.iso(self.created_at),
                "kind": self.kind, "reply_to": self.reply_to, "snippet": self.snippet,
                "parts": [{"text": t, "match": m} for t, m in self.parts]}


# -- The search ------------------------------------------------------------------------------


def search(store: Store, raw: str, *, mood: Optional[str] = None, sender: Optional[str] = None,
           since: Optional[dt.datetime] = None, until: Optional[dt.datetime] = None,
           limit: int = DEFAULT_LIMIT, archived: bool = True) -> list[Hit]:
    """Up to *limit* posts matching every word of *raw*, best first (the newest first among
    equals): in the Mood *mood* only, by *sender* only, made at or after *since* and before
    *until*; in archived Moods too unless *archived* is False.

    UserError for an empty or oversized query or a limit out of range; NotFound for a Mood
    or sender that does not exist (or, with *archived* False, a Mood that is archived).
    """
    query = parse(raw)
    if not 1 <= limit <= MAX_LIMIT:
        raise errors.UserError(f"limit must be 1 to {MAX_LIMIT}, got {limit}")
    with store.reading() as s:
        where = _filters(s, mood, sender, since, until, archived)
        if not query.words:
            return []
        rank = _sqlite_ranked if s.get_bind().dialect.name == "sqlite" else _postgresql_ranked
        ids = rank(s, query, where, limit)
        rows = {r.id: r for r in s.execute(
            sa.select(Post.id, Post.created_at, Post.text, Post.kind, Post.reply_to,
                      Mood.slug, Participant.handle, Participant.kind.label("sender_kind"))
            .join(Mood, Mood.id == Post.mood_id)
            .join(Participant, Participant.id == Post.sender_id)
            .where(Post.id.in_(ids)))} if ids else {}
    words = frozenset(query.words)
    return [Hit(r.id, r.slug, r.handle, r.sender_kind, r.created_at, r.kind, r.reply_to,
                excerpt(r.text, words)) for r in (rows[i] for i in ids if i in rows)]


def _filters(s: Session, mood: Optional[str], sender: Optional[str],
             since: Optional[dt.datetime], until: Optional[dt.datetime], archived: bool) -> list:
    """The conditions on ``posts`` every search adds to the words: what may be found, and
    the filters asked for."""
    where = [Post.kind != PostKind.SILENT, Post.text != REMOVED]
    if mood is not None:
        row = Store._mood(s, mood)
        if row.archived and not archived:
            raise errors.NotFound(f"the Mood {mood!r} is archived")
        where.append(Post.mood_id == row.id)
    elif not archived:
        where.append(Post.mood_id.in_(sa.select(Mood.id).where(Mood.archived.is_(False))))
    if sender is not None:
        where.append(Post.sender_id == Store._participant(s, sender).id)
    if since is not None:
        where.append(Post.created_at >= since)
    if until is not None:
        where.append(Post.created_at < until)
    return where


def _sqlite_ranked(s: Session, query: Query, where: list, limit: int) -> list[int]:
    # The FTS5 match is made first, in a CTE SQLite keeps whole (MATERIALIZED), so the
    # planner never turns it inside out into one full-text probe per post of a Mood.
    found = sa.text(f"SELECT rowid AS id, bm25({SEARCH_TABLE}) AS score FROM {SEARCH_TABLE} "
                    f"WHERE {SEARCH_TABLE} MATCH :words").bindparams(words=fts5_match(query))
    found = found.columns(id=sa.Integer, score=sa.Float).cte("found").prefix_with("MATERIALIZED")
    score = found.c.score  # bm25: lower is better
    near = fts5_near(query)
    if near is not None:
        close = sa.text(f"SELECT rowid FROM {SEARCH_TABLE} WHERE {SEARCH_TABLE} MATCH :near"
                        ).bindparams(near=near).columns(rowid=sa.Integer)
        score = score * sa.case((found.c.id.in_(close), NEAR_LIFT), else_=1.0)
    q = (sa.select(Post.id).join(found, found.c.id == Post.id).where(*where)
         .order_by(score, Post.id.desc()).limit(limit))
    return list(s.scalars(q))


def _postgresql_ranked(s: Session, query: Query, where: list, limit: int) -> list[int]:
    return list(s.scalars(postgresql_select(query, where, limit)))


def postgresql_select(query: Query, where: list, limit: int) -> sa.Select:
    """The ids of the best posts for *query* on PostgreSQL, through the index, ranked by
    the words the column keeps (none of the posts is parsed again)."""
    vector = sa.literal_column(_PG_WORDS)
    asked = sa.func.plainto_tsquery(sa.literal_column("'simple'::regconfig"),
                                    sa.bindparam("words", " ".join(query.words)))
    score = sa.func.ts_rank(vector, asked, 1)  # 1: divided by 1 + log(length), as bm25 does
    return (sa.select(Post.id).where(vector.op("@@")(asked), *where)
            .order_by(score.desc(), Post.id.desc()).limit(limit))
