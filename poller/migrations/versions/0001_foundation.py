"""Foundation: Moods, participants, agents, posts, mentions, sign-ins, settings, dial cache.

Revision ID: 0001
Revises: 
Create Date: 2026-11-30 02:52:01.064436
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import poller.models


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('dial_cache',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('site', sa.String(length=200), nullable=False),
    sa.Column('title', sa.String(length=255), nullable=False),
    sa.Column('revid', sa.BigInteger(), nullable=False),
    sa.Column('wikitext', sa.Text(), nullable=False),
    sa.Column('protected', sa.Boolean(), nullable=True),
    sa.Column('fetched_at', poller.models.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_dial_cache')),
    sa.UniqueConstraint('site', 'title', name='uq_dial_cache_site_title')
    )
    op.create_table('moods',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('slug', sa.String(length=64), nullable=False),
    sa.Column('title', sa.String(length=200), nullable=False),
    sa.Column('archived', sa.Boolean(), nullable=False),
    sa.Column('created_at', poller.models.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_moods')),
    sa.UniqueConstraint('slug', name=op.f('uq_moods_slug'))
    )
    op.create_table('participants',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('handle', sa.String(length=64), nullable=False),
    sa.Column('handle_key', sa.String(length=64), nullable=False),
    sa.Column('kind', sa.String(length=8), nullable=False),
    sa.Column('trust', sa.String(length=8), nullable=False),
    sa.Column('created_at', poller.models.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_participants')),
    sa.UniqueConstraint('handle_key', name=op.f('uq_participants_handle_key'))
    )
    op.create_table('agents',
    sa.Column('participant_id', sa.Integer(), nullable=False),
    sa.Column('waker', sa.String(length=16), nullable=False),
    sa.Column('command', sa.Text(), nullable=True),
    sa.Column('url', sa.Text(), nullable=True),
    sa.Column('timeout', sa.Double(), nullable=True),
    sa.Column('workdir', sa.Text(), nullable=True),
    sa.Column('options', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['participant_id'], ['participants.id'], name=op.f('fk_agents_participant_id_participants')),
    sa.PrimaryKeyConstraint('participant_id', name=op.f('pk_agents'))
    )
    op.create_table('posts',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('mood_id', sa.Integer(), nullable=False),
    sa.Column('sender_id', sa.Integer(), nullable=False),
    sa.Column('created_at', poller.models.UTCDateTime(), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('kind', sa.String(length=8), nullable=False),
    sa.Column('reply_to', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('tokens', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['mood_id'], ['moods.id'], name=op.f('fk_posts_mood_id_moods')),
    sa.ForeignKeyConstraint(['reply_to'], ['posts.id'], name=op.f('fk_posts_reply_to_posts')),
    sa.ForeignKeyConstraint(['sender_id'], ['participants.id'], name=op.f('fk_posts_sender_id_participants')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_posts'))
    )
    with op.batch_alter_table('posts', schema=None) as batch_op:
        batch_op.create_index('ix_posts_mood_id_id', ['mood_id', 'id'], unique=False)
        batch_op.create_index('ix_posts_sender_mood_id', ['sender_id', 'mood_id', 'id'], unique=False)

    op.create_table('settings',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('mood_id', sa.Integer(), nullable=True),
    sa.Column('agent_id', sa.Integer(), nullable=True),
    sa.Column('key', sa.String(length=32), nullable=False),
    sa.Column('value', sa.String(length=200), nullable=False),
    sa.Column('until', poller.models.UTCDateTime(), nullable=True),
    sa.Column('set_by', sa.Integer(), nullable=True),
    sa.Column('note', sa.Text(), nullable=False),
    sa.Column('at', poller.models.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['agent_id'], ['participants.id'], name=op.f('fk_settings_agent_id_participants')),
    sa.ForeignKeyConstraint(['mood_id'], ['moods.id'], name=op.f('fk_settings_mood_id_moods')),
    sa.ForeignKeyConstraint(['set_by'], ['participants.id'], name=op.f('fk_settings_set_by_participants')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_settings'))
    )
    with op.batch_alter_table('settings', schema=None) as batch_op:
        batch_op.create_index('ix_settings_key_slot', ['key', 'mood_id', 'agent_id', 'id'], unique=False)

    op.create_table('signins',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('participant_id', sa.Integer(), nullable=False),
    sa.Column('mood_id', sa.Integer(), nullable=False),
    sa.Column('tier', sa.String(length=8), nullable=False),
    sa.Column('label', sa.String(length=200), nullable=False),
    sa.Column('at', poller.models.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['mood_id'], ['moods.id'], name=op.f('fk_signins_mood_id_moods')),
    sa.ForeignKeyConstraint(['participant_id'], ['participants.id'], name=op.f('fk_signins_participant_id_participants')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_signins'))
    )
    with op.batch_alter_table('signins', schema=None) as batch_op:
        batch_op.create_index('ix_signins_mood_at', ['mood_id', 'at'], unique=False)

    op.create_table('mentions',
    sa.Column('post_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('participant_id', sa.Integer(), nullable=False),
    sa.Column('via', sa.String(length=8), nullable=False),
    sa.ForeignKeyConstraint(['participant_id'], ['participants.id'], name=op.f('fk_mentions_participant_id_participants')),
    sa.ForeignKeyConstraint(['post_id'], ['posts.id'], name=op.f('fk_mentions_post_id_posts')),
    sa.PrimaryKeyConstraint('post_id', 'participant_id', name=op.f('pk_mentions'))
    )
    with op.batch_alter_table('mentions', schema=None) as batch_op:
        batch_op.create_index('ix_mentions_participant_post', ['participant_id', 'post_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('mentions', schema=None) as batch_op:
        batch_op.drop_index('ix_mentions_participant_post')

    op.drop_table('mentions')
    with op.batch_alter_table('signins', schema=None) as batch_op:
        batch_op.drop_index('ix_signins_mood_at')

    op.drop_table('signins')
    with op.batch_alter_table('settings', schema=None) as batch_op:
        batch_op.drop_index('ix_settings_key_slot')

    op.drop_table('settings')
    with op.batch_alter_table('posts', schema=None) as batch_op:
        batch_op.drop_index('ix_posts_sender_mood_id')
        batch_op.drop_index('ix_posts_mood_id_id')

    op.drop_table('posts')
    op.drop_table('agents')
    op.drop_table('participants')
    op.drop_table('moods')
    op.drop_table('dial_cache')
