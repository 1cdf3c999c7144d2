"""Turn heartbeat: a runner marks its turn alive, so a poller on any machine can close
turns that a dead machine left running.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 04:20:07.850389
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import poller.models


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('wakes', schema=None) as batch_op:
        batch_op.add_column(sa.Column('heartbeat_at', poller.models.UTCDateTime(), nullable=True))



def downgrade() -> None:
    with op.batch_alter_table('wakes', schema=None) as batch_op:
        batch_op.drop_column('heartbeat_at')

