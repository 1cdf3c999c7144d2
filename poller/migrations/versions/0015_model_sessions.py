"""Model agents: the conversation a session keeps, and a turn's tokens in and out.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02 19:30:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa


revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('agent_sessions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('history', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('history_tokens', sa.Integer(), nullable=True))
    with op.batch_alter_table('turns', schema=None) as batch_op:
        batch_op.add_column(sa.Column('tokens_in', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('tokens_out', sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('turns', schema=None) as batch_op:
        batch_op.drop_column('tokens_out')
        batch_op.drop_column('tokens_in')
    with op.batch_alter_table('agent_sessions', schema=None) as batch_op:
        batch_op.drop_column('history_tokens')
        batch_op.drop_column('history')
