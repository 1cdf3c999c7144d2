"""Quarantine: items the cycle could not process, set aside with their error.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 16:00:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import poller.models


revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'quarantine',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True,
                  nullable=False),
        sa.Column('kind', sa.String(length=16), nullable=False),
        sa.Column('ref', sa.String(length=64), nullable=False),
        sa.Column('agent_id', sa.Integer(), nullable=True),
        sa.Column('mood_id', sa.Integer(), nullable=True),
        sa.Column('error', sa.Text(), nullable=False),
        sa.Column('at', poller.models.UTCDateTime(), nullable=False),
        sa.Column('last_at', poller.models.UTCDateTime(), nullable=False),
        sa.Column('count', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['agent_id'], ['participants.id'],
                                name=op.f('fk_quarantine_agent_id_participants')),
        sa.ForeignKeyConstraint(['mood_id'], ['moods.id'], name=op.f('fk_quarantine_mood_id_moods')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_quarantine')),
        sa.UniqueConstraint('kind', 'ref', name='uq_quarantine_kind_ref'),
    )


def downgrade() -> None:
    op.drop_table('quarantine')
