"""Parity: per-Mood stops, budgets, typing and turn progress.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 19:45:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
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
