"""A cut-off turn's follow-up: listeners.followup_of and followup_due_at.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 16:30:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import poller.models


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('listeners', schema=None) as batch_op:
        batch_op.add_column(sa.Column('followup_of', sa.BigInteger(), nullable=False,
                                      server_default='0'))
        batch_op.add_column(sa.Column('followup_due_at', poller.models.UTCDateTime(),
                                      nullable=True))
    with op.batch_alter_table('listeners', schema=None) as batch_op:
        batch_op.alter_column('followup_of', server_default=None)


def downgrade() -> None:
    with op.batch_alter_table('listeners', schema=None) as batch_op:
        batch_op.drop_column('followup_due_at')
        batch_op.drop_column('followup_of')
