"""Removing people and agents: participants.retired_at and agents.retired_at.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02 10:00:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import poller.models


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('participants', schema=None) as batch_op:
        batch_op.add_column(sa.Column('retired_at', poller.models.UTCDateTime(), nullable=True))
    with op.batch_alter_table('agents', schema=None) as batch_op:
        batch_op.add_column(sa.Column('retired_at', poller.models.UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('agents', schema=None) as batch_op:
        batch_op.drop_column('retired_at')
    with op.batch_alter_table('participants', schema=None) as batch_op:
        batch_op.drop_column('retired_at')
