"""The Moods as tools: a running turn's capability, and approvals asked of the room.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-07 08:00:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa

from poller.models import BigId, UTCDateTime


revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'turn_capabilities',
        sa.Column('wake_id', BigId, nullable=False),
        sa.Column('token_hash', sa.String(length=64), nullable=False),
        sa.Column('tools', sa.String(length=8), nullable=False),
        sa.Column('created_at', UTCDateTime(), nullable=False),
        sa.Column('expires_at', UTCDateTime(), nullable=False),
        sa.Column('revoked_at', UTCDateTime(), nullable=True),
        sa.Column('blocks', sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(['wake_id'], ['wakes.id'],
                                name=op.f('fk_turn_capabilities_wake_id_wakes')),
        sa.PrimaryKeyConstraint('wake_id', name=op.f('pk_turn_capabilities')),
        sa.UniqueConstraint('token_hash', name=op.f('uq_turn_capabilities_token_hash')),
    )
    op.create_table(
        'approvals',
        sa.Column('id', BigId, autoincrement=True, nullable=False),
        sa.Column('wake_id', BigId, nullable=False),
        sa.Column('agent_id', sa.Integer(), nullable=False),
        sa.Column('mood_id', sa.Integer(), nullable=False),
        sa.Column('tool', sa.String(length=200), nullable=False),
        sa.Column('shown', sa.Text(), nullable=False),
        sa.Column('status', sa.String(length=12), nullable=False),
        sa.Column('asked_at', UTCDateTime(), nullable=False),
        sa.Column('decided_at', UTCDateTime(), nullable=True),
        sa.Column('decided_by', sa.Integer(), nullable=True),
        sa.Column('via', sa.String(length=12), nullable=False),
        sa.Column('reason', sa.Text(), nullable=False),
        sa.Column('notice_post_id', BigId, nullable=True),
        sa.ForeignKeyConstraint(['wake_id'], ['wakes.id'], name=op.f('fk_approvals_wake_id_wakes')),
        sa.ForeignKeyConstraint(['agent_id'], ['participants.id'],
                                name=op.f('fk_approvals_agent_id_participants')),
        sa.ForeignKeyConstraint(['mood_id'], ['moods.id'], name=op.f('fk_approvals_mood_id_moods')),
        sa.ForeignKeyConstraint(['decided_by'], ['participants.id'],
                                name=op.f('fk_approvals_decided_by_participants')),
        sa.ForeignKeyConstraint(['notice_post_id'], ['posts.id'],
                                name=op.f('fk_approvals_notice_post_id_posts')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_approvals')),
    )
    op.create_index('ix_approvals_wake_id', 'approvals', ['wake_id'])
    op.create_index('ix_approvals_mood_status', 'approvals', ['mood_id', 'status'])


def downgrade() -> None:
    op.drop_index('ix_approvals_mood_status', table_name='approvals')
    op.drop_index('ix_approvals_wake_id', table_name='approvals')
    op.drop_table('approvals')
    op.drop_table('turn_capabilities')
