"""Richer turns: per-turn records, agents' sessions per Mood, handoffs, refused blocks.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 03:04:35.963849
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import poller.models


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('agent_sessions',
    sa.Column('agent_id', sa.Integer(), nullable=False),
    sa.Column('mood_id', sa.Integer(), nullable=False),
    sa.Column('session_id', sa.String(length=200), nullable=False),
    sa.Column('wake_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('updated_at', poller.models.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['agent_id'], ['participants.id'], name=op.f('fk_agent_sessions_agent_id_participants')),
    sa.ForeignKeyConstraint(['mood_id'], ['moods.id'], name=op.f('fk_agent_sessions_mood_id_moods')),
    sa.ForeignKeyConstraint(['wake_id'], ['wakes.id'], name=op.f('fk_agent_sessions_wake_id_wakes')),
    sa.PrimaryKeyConstraint('agent_id', 'mood_id', name=op.f('pk_agent_sessions'))
    )
    op.create_table('handoffs',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('wake_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('agent_id', sa.Integer(), nullable=False),
    sa.Column('from_mood_id', sa.Integer(), nullable=False),
    sa.Column('to_mood_id', sa.Integer(), nullable=False),
    sa.Column('for_agent_id', sa.Integer(), nullable=True),
    sa.Column('about', sa.String(length=100), nullable=False),
    sa.Column('context', sa.Text(), nullable=False),
    sa.Column('event_post_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('at', poller.models.UTCDateTime(), nullable=False),
    sa.Column('taken_wake_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.ForeignKeyConstraint(['agent_id'], ['participants.id'], name=op.f('fk_handoffs_agent_id_participants')),
    sa.ForeignKeyConstraint(['event_post_id'], ['posts.id'], name=op.f('fk_handoffs_event_post_id_posts')),
    sa.ForeignKeyConstraint(['for_agent_id'], ['participants.id'], name=op.f('fk_handoffs_for_agent_id_participants')),
    sa.ForeignKeyConstraint(['from_mood_id'], ['moods.id'], name=op.f('fk_handoffs_from_mood_id_moods')),
    sa.ForeignKeyConstraint(['taken_wake_id'], ['wakes.id'], name=op.f('fk_handoffs_taken_wake_id_wakes')),
    sa.ForeignKeyConstraint(['to_mood_id'], ['moods.id'], name=op.f('fk_handoffs_to_mood_id_moods')),
    sa.ForeignKeyConstraint(['wake_id'], ['wakes.id'], name=op.f('fk_handoffs_wake_id_wakes')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_handoffs'))
    )
    with op.batch_alter_table('handoffs', schema=None) as batch_op:
        batch_op.create_index('ix_handoffs_to_mood_taken', ['to_mood_id', 'taken_wake_id'], unique=False)

    op.create_table('refusals',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('wake_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('agent_id', sa.Integer(), nullable=False),
    sa.Column('mood_id', sa.Integer(), nullable=False),
    sa.Column('block', sa.String(length=16), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('at', poller.models.UTCDateTime(), nullable=False),
    sa.Column('reported_wake_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.ForeignKeyConstraint(['agent_id'], ['participants.id'], name=op.f('fk_refusals_agent_id_participants')),
    sa.ForeignKeyConstraint(['mood_id'], ['moods.id'], name=op.f('fk_refusals_mood_id_moods')),
    sa.ForeignKeyConstraint(['reported_wake_id'], ['wakes.id'], name=op.f('fk_refusals_reported_wake_id_wakes')),
    sa.ForeignKeyConstraint(['wake_id'], ['wakes.id'], name=op.f('fk_refusals_wake_id_wakes')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_refusals'))
    )
    with op.batch_alter_table('refusals', schema=None) as batch_op:
        batch_op.create_index('ix_refusals_agent_mood_reported', ['agent_id', 'mood_id', 'reported_wake_id'], unique=False)

    op.create_table('turns',
    sa.Column('wake_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('settings_seen_id', sa.BigInteger(), nullable=False),
    sa.Column('session_id', sa.String(length=200), nullable=True),
    sa.Column('cost_usd', sa.Double(), nullable=True),
    sa.ForeignKeyConstraint(['wake_id'], ['wakes.id'], name=op.f('fk_turns_wake_id_wakes')),
    sa.PrimaryKeyConstraint('wake_id', name=op.f('pk_turns'))
    )


def downgrade() -> None:
    op.drop_table('turns')
    with op.batch_alter_table('refusals', schema=None) as batch_op:
        batch_op.drop_index('ix_refusals_agent_mood_reported')

    op.drop_table('refusals')
    with op.batch_alter_table('handoffs', schema=None) as batch_op:
        batch_op.drop_index('ix_handoffs_to_mood_taken')

    op.drop_table('handoffs')
    op.drop_table('agent_sessions')
