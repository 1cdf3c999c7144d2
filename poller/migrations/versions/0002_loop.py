"""The loop: cursors, flags, leases, listeners, owed mentions, wakes, decisions.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 02:57:21.985162
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import poller.models


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('cursors',
    sa.Column('name', sa.String(length=32), nullable=False),
    sa.Column('value', sa.BigInteger(), nullable=False),
    sa.Column('at', poller.models.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('name', name=op.f('pk_cursors'))
    )
    op.create_table('flags',
    sa.Column('name', sa.String(length=32), nullable=False),
    sa.Column('value', sa.String(length=200), nullable=False),
    sa.Column('set_by', sa.String(length=64), nullable=True),
    sa.Column('at', poller.models.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('name', name=op.f('pk_flags'))
    )
    op.create_table('leases',
    sa.Column('name', sa.String(length=32), nullable=False),
    sa.Column('holder', sa.String(length=100), nullable=False),
    sa.Column('expires_at', poller.models.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('name', name=op.f('pk_leases'))
    )
    op.create_table('listeners',
    sa.Column('agent_id', sa.Integer(), nullable=False),
    sa.Column('mood_id', sa.Integer(), nullable=False),
    sa.Column('due_at', poller.models.UTCDateTime(), nullable=True),
    sa.Column('last_post_at', poller.models.UTCDateTime(), nullable=True),
    sa.Column('last_person_at', poller.models.UTCDateTime(), nullable=True),
    sa.Column('last_person_id', sa.BigInteger(), nullable=False),
    sa.Column('looked_id', sa.BigInteger(), nullable=False),
    sa.Column('consider_from_id', sa.BigInteger(), nullable=False),
    sa.Column('consider_due_at', poller.models.UTCDateTime(), nullable=True),
    sa.Column('quiet_due_at', poller.models.UTCDateTime(), nullable=True),
    sa.Column('quiet_backoff', sa.Integer(), nullable=False),
    sa.Column('cooldown_until', poller.models.UTCDateTime(), nullable=True),
    sa.Column('arrival_signin_id', sa.BigInteger(), nullable=False),
    sa.Column('hold_reason', sa.String(length=64), nullable=True),
    sa.Column('hold_since', poller.models.UTCDateTime(), nullable=True),
    sa.ForeignKeyConstraint(['agent_id'], ['participants.id'], name=op.f('fk_listeners_agent_id_participants')),
    sa.ForeignKeyConstraint(['mood_id'], ['moods.id'], name=op.f('fk_listeners_mood_id_moods')),
    sa.PrimaryKeyConstraint('agent_id', 'mood_id', name=op.f('pk_listeners'))
    )
    with op.batch_alter_table('listeners', schema=None) as batch_op:
        batch_op.create_index('ix_listeners_due_at', ['due_at'], unique=False)

    op.create_table('owed',
    sa.Column('agent_id', sa.Integer(), nullable=False),
    sa.Column('post_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('mood_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['agent_id'], ['participants.id'], name=op.f('fk_owed_agent_id_participants')),
    sa.ForeignKeyConstraint(['mood_id'], ['moods.id'], name=op.f('fk_owed_mood_id_moods')),
    sa.ForeignKeyConstraint(['post_id'], ['posts.id'], name=op.f('fk_owed_post_id_posts')),
    sa.PrimaryKeyConstraint('agent_id', 'post_id', name=op.f('pk_owed'))
    )
    with op.batch_alter_table('owed', schema=None) as batch_op:
        batch_op.create_index('ix_owed_mood_agent', ['mood_id', 'agent_id'], unique=False)

    op.create_table('wakes',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('agent_id', sa.Integer(), nullable=False),
    sa.Column('mood_id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('tools', sa.String(length=8), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('created_at', poller.models.UTCDateTime(), nullable=False),
    sa.Column('started_at', poller.models.UTCDateTime(), nullable=True),
    sa.Column('finished_at', poller.models.UTCDateTime(), nullable=True),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('prompt_tokens', sa.Integer(), nullable=False),
    sa.Column('dial_source', sa.String(length=64), nullable=False),
    sa.Column('about_id', sa.Integer(), nullable=True),
    sa.Column('seen_id', sa.BigInteger(), nullable=False),
    sa.Column('host', sa.String(length=100), nullable=False),
    sa.Column('runner_pid', sa.Integer(), nullable=True),
    sa.Column('agent_pgid', sa.Integer(), nullable=True),
    sa.Column('reply_post_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('error', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['about_id'], ['participants.id'], name=op.f('fk_wakes_about_id_participants')),
    sa.ForeignKeyConstraint(['agent_id'], ['participants.id'], name=op.f('fk_wakes_agent_id_participants')),
    sa.ForeignKeyConstraint(['mood_id'], ['moods.id'], name=op.f('fk_wakes_mood_id_moods')),
    sa.ForeignKeyConstraint(['reply_post_id'], ['posts.id'], name=op.f('fk_wakes_reply_post_id_posts')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_wakes'))
    )
    with op.batch_alter_table('wakes', schema=None) as batch_op:
        batch_op.create_index('ix_wakes_agent_created', ['agent_id', 'created_at'], unique=False)
        batch_op.create_index('ix_wakes_agent_mood_id', ['agent_id', 'mood_id', 'id'], unique=False)
        batch_op.create_index('ix_wakes_status', ['status'], unique=False)

    op.create_table('decisions',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('agent_id', sa.Integer(), nullable=False),
    sa.Column('mood_id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('outcome', sa.String(length=8), nullable=False),
    sa.Column('reason', sa.String(length=64), nullable=False),
    sa.Column('next_due', poller.models.UTCDateTime(), nullable=True),
    sa.Column('wake_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('at', poller.models.UTCDateTime(), nullable=False),
    sa.Column('last_at', poller.models.UTCDateTime(), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['agent_id'], ['participants.id'], name=op.f('fk_decisions_agent_id_participants')),
    sa.ForeignKeyConstraint(['mood_id'], ['moods.id'], name=op.f('fk_decisions_mood_id_moods')),
    sa.ForeignKeyConstraint(['wake_id'], ['wakes.id'], name=op.f('fk_decisions_wake_id_wakes')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_decisions'))
    )
    with op.batch_alter_table('decisions', schema=None) as batch_op:
        batch_op.create_index('ix_decisions_agent_mood_kind', ['agent_id', 'mood_id', 'kind', 'id'], unique=False)

    op.create_table('wake_posts',
    sa.Column('wake_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('post_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('agent_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['agent_id'], ['participants.id'], name=op.f('fk_wake_posts_agent_id_participants')),
    sa.ForeignKeyConstraint(['post_id'], ['posts.id'], name=op.f('fk_wake_posts_post_id_posts')),
    sa.ForeignKeyConstraint(['wake_id'], ['wakes.id'], name=op.f('fk_wake_posts_wake_id_wakes')),
    sa.PrimaryKeyConstraint('wake_id', 'post_id', name=op.f('pk_wake_posts')),
    sa.UniqueConstraint('agent_id', 'post_id', name='uq_wake_posts_agent_post')
    )


def downgrade() -> None:
    op.drop_table('wake_posts')
    with op.batch_alter_table('decisions', schema=None) as batch_op:
        batch_op.drop_index('ix_decisions_agent_mood_kind')

    op.drop_table('decisions')
    with op.batch_alter_table('wakes', schema=None) as batch_op:
        batch_op.drop_index('ix_wakes_status')
        batch_op.drop_index('ix_wakes_agent_mood_id')
        batch_op.drop_index('ix_wakes_agent_created')

    op.drop_table('wakes')
    with op.batch_alter_table('owed', schema=None) as batch_op:
        batch_op.drop_index('ix_owed_mood_agent')

    op.drop_table('owed')
    with op.batch_alter_table('listeners', schema=None) as batch_op:
        batch_op.drop_index('ix_listeners_due_at')

    op.drop_table('listeners')
    op.drop_table('leases')
    op.drop_table('flags')
    op.drop_table('cursors')
