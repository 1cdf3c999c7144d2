"""Marks: when a kind of wake declared outside the core is due on a listener.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02 05:00:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa


revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('listeners', schema=None) as batch_op:
        batch_op.add_column(sa.Column('marks', sa.Text(), nullable=False, server_default=''))
    with op.batch_alter_table('listeners', schema=None) as batch_op:
        batch_op.alter_column('marks', server_default=None)


def downgrade() -> None:
    with op.batch_alter_table('listeners', schema=None) as batch_op:
        batch_op.drop_column('marks')
