"""Bridges: external ids, the outbox and webhook subscribers.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01 19:45:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import poller.models


revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'bridge_links',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('bridge', sa.String(length=16), nullable=False),
        sa.Column('kind', sa.String(length=8), nullable=False),
        sa.Column('local_id', sa.Integer(), nullable=False),
        sa.Column('external', sa.String(length=255), nullable=False),
        sa.Column('options', sa.JSON(), nullable=False),
        sa.Column('created_at', poller.models.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_bridge_links')),
        sa.UniqueConstraint('bridge', 'kind', 'external', name='uq_bridge_links_external'),
        sa.UniqueConstraint('bridge', 'kind', 'local_id', name='uq_bridge_links_local'),
    )
    op.create_table(
        'bridge_events',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True,
                  nullable=False),
        sa.Column('bridge', sa.String(length=16), nullable=False),
        sa.Column('external_id', sa.String(length=255), nullable=False),
        sa.Column('post_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
        sa.Column('signin_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'),
                  nullable=True),
        sa.Column('thread', sa.String(length=255), nullable=True),
        sa.Column('at', poller.models.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(['post_id'], ['posts.id'],
                                name=op.f('fk_bridge_events_post_id_posts')),
        sa.ForeignKeyConstraint(['signin_id'], ['signins.id'],
                                name=op.f('fk_bridge_events_signin_id_signins')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_bridge_events')),
        sa.UniqueConstraint('bridge', 'external_id', name='uq_bridge_events_external'),
    )
    op.create_index('ix_bridge_events_post_id', 'bridge_events', ['post_id'])
    op.create_table(
        'outbox',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True,
                  nullable=False),
        sa.Column('bridge', sa.String(length=16), nullable=False),
        sa.Column('target', sa.String(length=255), nullable=False),
        sa.Column('mood_id', sa.Integer(), nullable=False),
        sa.Column('post_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
        sa.Column('wake_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
        sa.Column('event', sa.String(length=16), nullable=False),
        sa.Column('payload', sa.JSON(), nullable=False),
        sa.Column('status', sa.String(length=8), nullable=False),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('next_at', poller.models.UTCDateTime(), nullable=False),
        sa.Column('last_error', sa.Text(), nullable=False),
        sa.Column('external_id', sa.String(length=255), nullable=True),
        sa.Column('created_at', poller.models.UTCDateTime(), nullable=False),
        sa.Column('sent_at', poller.models.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(['mood_id'], ['moods.id'], name=op.f('fk_outbox_mood_id_moods')),
        sa.ForeignKeyConstraint(['post_id'], ['posts.id'], name=op.f('fk_outbox_post_id_posts')),
        sa.ForeignKeyConstraint(['wake_id'], ['wakes.id'], name=op.f('fk_outbox_wake_id_wakes')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_outbox')),
    )
    op.create_index('ix_outbox_bridge_status_next_at', 'outbox', ['bridge', 'status', 'next_at'])
    op.create_table(
        'webhooks',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('mood_id', sa.Integer(), nullable=False),
        sa.Column('url', sa.Text(), nullable=False),
        sa.Column('secret', sa.String(length=100), nullable=False),
        sa.Column('created_at', poller.models.UTCDateTime(), nullable=False),
        sa.Column('removed_at', poller.models.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(['mood_id'], ['moods.id'], name=op.f('fk_webhooks_mood_id_moods')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_webhooks')),
    )
    op.create_index('ix_webhooks_mood_id', 'webhooks', ['mood_id'])


def downgrade() -> None:
    op.drop_index('ix_webhooks_mood_id', table_name='webhooks')
    op.drop_table('webhooks')
    op.drop_index('ix_outbox_bridge_status_next_at', table_name='outbox')
    op.drop_table('outbox')
    op.drop_index('ix_bridge_events_post_id', table_name='bridge_events')
    op.drop_table('bridge_events')
    op.drop_table('bridge_links')
