"""Search: a full-text index over posts, built for the posts already there.

SQLite: an FTS5 table over ``posts.text`` (external content, so the text is not
stored twice) and triggers that keep it in step with every edit and delete; a new
post is added to it by ``poller.store.core.ingest``, the one door posts come in by
(in one statement a batch: an FTS5 trigger per row costs ~15 times as much).
PostgreSQL: a generated column ``posts.search_words``, ``to_tsvector('simple', text)``
(punctuation made spaces), with a GIN index, which the server keeps in step itself.
Neither is a model (see ``poller.models.SEARCH_TABLE``).

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-05 09:00:00
"""
from __future__ import annotations

from alembic import op


revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None

# 'simple': lower-cased words, no stemming and no stop words, in every language alike
# (SQLite's unicode61 tokenizer does the same; diacritics are kept on both).
SQLITE_UP = (
    "CREATE VIRTUAL TABLE posts_fts USING fts5(text, content='posts', content_rowid='id', "
    "tokenize='unicode61 remove_diacritics 0')",
    "CREATE TRIGGER posts_fts_delete AFTER DELETE ON posts BEGIN "
    "INSERT INTO posts_fts (posts_fts, rowid, text) VALUES ('delete', old.id, old.text); END",
    "CREATE TRIGGER posts_fts_update AFTER UPDATE OF text ON posts BEGIN "
    "INSERT INTO posts_fts (posts_fts, rowid, text) VALUES ('delete', old.id, old.text); "
    "INSERT INTO posts_fts (rowid, text) VALUES (new.id, new.text); END",
    "INSERT INTO posts_fts (posts_fts) VALUES ('rebuild')",  # the posts already there
)
SQLITE_DOWN = (
    "DROP TRIGGER IF EXISTS posts_fts_update",
    "DROP TRIGGER IF EXISTS posts_fts_delete",
    "DROP TABLE IF EXISTS posts_fts",
)
# PostgreSQL: the words are kept in a generated column, so ranking reads them instead of
# parsing every matching post again (a common word's search over 50,000 posts took half
# a second with an index on the expression alone).  Its parser keeps URLs, e-mail
# addresses and hyphenated words whole and skips what looks like an HTML tag: ASCII
# punctuation becomes a space first, so words are cut where FTS5 cuts them.
PUNCTUATION = "!\"#$%&''()*+,-./:;<=>?@[\\]^_`{|}~"  # string.punctuation, as SQL
POSTGRESQL_UP = (
    "ALTER TABLE posts ADD COLUMN search_words tsvector GENERATED ALWAYS AS "
    f"(to_tsvector('simple'::regconfig, translate(text, '{PUNCTUATION}', '{' ' * 32}'))) STORED",
    "CREATE INDEX ix_posts_fts ON posts USING gin (search_words)",
)
POSTGRESQL_DOWN = ("DROP INDEX IF EXISTS ix_posts_fts",
                   "ALTER TABLE posts DROP COLUMN IF EXISTS search_words")


def upgrade() -> None:
    for statement in {"sqlite": SQLITE_UP, "postgresql": POSTGRESQL_UP}.get(
            op.get_bind().dialect.name, ()):
        op.execute(statement)


def downgrade() -> None:
    for statement in {"sqlite": SQLITE_DOWN, "postgresql": POSTGRESQL_DOWN}.get(
            op.get_bind().dialect.name, ()):
        op.execute(statement)
