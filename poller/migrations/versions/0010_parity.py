"""Parity: per-Mood stops, budgets, typing and turn progress.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 19:45:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import poller.models


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('moods', schema=None) as batch_op:
        batch_op.add_column(sa.Column('typing_at', poller.models.UTCDateTime(), nullable=True))
    with op.batch_alter_table('decisions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('detail', sa.String(length=200), nullable=True))
    with op.batch_alter_table('listeners', schema=None) as batch_op:
        batch_op.add_column(sa.Column('stopped_at', poller.models.UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column('stopped_by', sa.String(length=64), nullable=True))
    with op.batch_alter_table('poller_beats', schema=None) as batch_op:
        batch_op.add_column(sa.Column('scope', sa.String(length=300), server_default='all',
                                      nullable=False))
    # A running turn's progress (the tool in use, the file being read), names only.
    with op.batch_alter_table('wakes', schema=None) as batch_op:
        batch_op.add_column(sa.Column('progress', sa.String(length=200), nullable=True))
    # A person's slash command (/compact, /context...) waiting to run in the agent's session.
    with op.batch_alter_table('listeners', schema=None) as batch_op:
        batch_op.add_column(sa.Column('command_post_id', sa.BigInteger(), server_default='0',
                                      nullable=False))
    with op.batch_alter_table('listeners', schema=None) as batch_op:
        batch_op.alter_column('command_post_id', server_default=None)


def downgrade() -> None:
    with op.batch_alter_table('listeners', schema=None) as batch_op:
        batch_op.drop_column('command_post_id')
    with op.batch_alter_table('wakes', schema=None) as batch_op:
        batch_op.drop_column('progress')
    with op.batch_alter_table('decisions', schema=None) as batch_op:
        batch_op.drop_column('detail')
    with op.batch_alter_table('listeners', schema=None) as batch_op:
        batch_op.drop_column('stopped_by')
        batch_op.drop_column('stopped_at')
    with op.batch_alter_table('poller_beats', schema=None) as batch_op:
        batch_op.drop_column('scope')
    with op.batch_alter_table('moods', schema=None) as batch_op:
        batch_op.drop_column('typing_at')
