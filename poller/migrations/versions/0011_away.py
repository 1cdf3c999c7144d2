"""Away and back: absences, the pings they caught, fresh-eyes marks; a listener's return and
idle nudge.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01 19:45:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import poller.models


revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')


def upgrade() -> None:
    op.create_table(
        'activities',
        sa.Column('id', BIG_ID, autoincrement=True, nullable=False),
        sa.Column('agent_id', sa.Integer(), nullable=False),
        sa.Column('mood_id', sa.Integer(), nullable=False),
        sa.Column('activity', sa.String(length=40), nullable=False),
        sa.Column('label', sa.String(length=100), nullable=False),
        sa.Column('seed', sa.Text(), nullable=False),
        sa.Column('note', sa.Text(), nullable=False),
        sa.Column('reachable', sa.Boolean(), nullable=False),
        sa.Column('archive_after_minutes', sa.Integer(), nullable=False),
        sa.Column('catch_up_limit', sa.Integer(), nullable=False),
        sa.Column('departed_at', poller.models.UTCDateTime(), nullable=False),
        sa.Column('due_at', poller.models.UTCDateTime(), nullable=False),
        sa.Column('departure_post_id', BIG_ID, nullable=False),
        sa.Column('departure_wake_id', BIG_ID, nullable=True),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('cut_short_by', sa.Integer(), nullable=True),
        sa.Column('returned_at', poller.models.UTCDateTime(), nullable=True),
        sa.Column('return_post_id', BIG_ID, nullable=True),
        sa.Column('return_holder', sa.String(length=100), nullable=True),
        sa.Column('return_claimed_at', poller.models.UTCDateTime(), nullable=True),
        sa.Column('missed', sa.Integer(), nullable=False),
        sa.Column('fresh_eyes', sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(['agent_id'], ['participants.id'],
                                name=op.f('fk_activities_agent_id_participants')),
        sa.ForeignKeyConstraint(['mood_id'], ['moods.id'], name=op.f('fk_activities_mood_id_moods')),
        sa.ForeignKeyConstraint(['departure_post_id'], ['posts.id'],
                                name=op.f('fk_activities_departure_post_id_posts')),
        sa.ForeignKeyConstraint(['departure_wake_id'], ['wakes.id'],
                                name=op.f('fk_activities_departure_wake_id_wakes')),
        sa.ForeignKeyConstraint(['cut_short_by'], ['participants.id'],
                                name=op.f('fk_activities_cut_short_by_participants')),
        sa.ForeignKeyConstraint(['return_post_id'], ['posts.id'],
                                name=op.f('fk_activities_return_post_id_posts')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_activities')),
    )
    op.create_index('ix_activities_agent_id', 'activities', ['agent_id', 'id'])
    op.create_index('ix_activities_returned_due', 'activities', ['returned_at', 'due_at'])
    op.create_table(
        'activity_pings',
        sa.Column('id', BIG_ID, autoincrement=True, nullable=False),
        sa.Column('activity_id', BIG_ID, nullable=False),
        sa.Column('post_id', BIG_ID, nullable=False),
        sa.Column('mood_id', sa.Integer(), nullable=False),
        sa.Column('sender_id', sa.Integer(), nullable=False),
        sa.Column('kind', sa.String(length=16), nullable=False),
        sa.Column('wake_id', BIG_ID, nullable=True),
        sa.Column('at', poller.models.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(['activity_id'], ['activities.id'],
                                name=op.f('fk_activity_pings_activity_id_activities')),
        sa.ForeignKeyConstraint(['post_id'], ['posts.id'],
                                name=op.f('fk_activity_pings_post_id_posts')),
        sa.ForeignKeyConstraint(['mood_id'], ['moods.id'],
                                name=op.f('fk_activity_pings_mood_id_moods')),
        sa.ForeignKeyConstraint(['sender_id'], ['participants.id'],
                                name=op.f('fk_activity_pings_sender_id_participants')),
        sa.ForeignKeyConstraint(['wake_id'], ['wakes.id'],
                                name=op.f('fk_activity_pings_wake_id_wakes')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_activity_pings')),
        sa.UniqueConstraint('activity_id', 'post_id', name='uq_activity_pings_activity_post'),
    )
    op.create_table(
        'catch_up_marks',
        sa.Column('agent_id', sa.Integer(), nullable=False),
        sa.Column('mood_id', sa.Integer(), nullable=False),
        sa.Column('activity_id', BIG_ID, nullable=False),
        sa.Column('from_id', sa.BigInteger(), nullable=False),
        sa.Column('missed_before', sa.BigInteger(), nullable=False),
        sa.Column('missed', sa.Integer(), nullable=False),
        sa.Column('at', poller.models.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(['agent_id'], ['participants.id'],
                                name=op.f('fk_catch_up_marks_agent_id_participants')),
        sa.ForeignKeyConstraint(['mood_id'], ['moods.id'],
                                name=op.f('fk_catch_up_marks_mood_id_moods')),
        sa.ForeignKeyConstraint(['activity_id'], ['activities.id'],
                                name=op.f('fk_catch_up_marks_activity_id_activities')),
        sa.PrimaryKeyConstraint('agent_id', 'mood_id', name=op.f('pk_catch_up_marks')),
    )
    with op.batch_alter_table('listeners', schema=None) as batch_op:
        batch_op.add_column(sa.Column('return_of', sa.BigInteger(), nullable=False,
                                      server_default='0'))
        batch_op.add_column(sa.Column('nudge_due_at', poller.models.UTCDateTime(),
                                      nullable=True))
    with op.batch_alter_table('listeners', schema=None) as batch_op:
        batch_op.alter_column('return_of', server_default=None)


def downgrade() -> None:
    with op.batch_alter_table('listeners', schema=None) as batch_op:
        batch_op.drop_column('nudge_due_at')
        batch_op.drop_column('return_of')
    op.drop_table('catch_up_marks')
    op.drop_table('activity_pings')
    op.drop_index('ix_activities_returned_due', table_name='activities')
    op.drop_index('ix_activities_agent_id', table_name='activities')
    op.drop_table('activities')
