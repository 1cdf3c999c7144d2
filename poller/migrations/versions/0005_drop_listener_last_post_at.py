"""Drop listeners.last_post_at: written on every post, read by nothing.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 15:00:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import poller.models


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('listeners', schema=None) as batch_op:
        batch_op.drop_column('last_post_at')


def downgrade() -> None:
    with op.batch_alter_table('listeners', schema=None) as batch_op:
        batch_op.add_column(sa.Column('last_post_at', poller.models.UTCDateTime(), nullable=True))
