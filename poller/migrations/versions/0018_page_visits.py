"""How far each person has read each Mood on the page (the Moods list's unread counts).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-07 08:10:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa

from poller.models import UTCDateTime


revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'page_visits',
        sa.Column('participant_id', sa.Integer(), nullable=False),
        sa.Column('mood_id', sa.Integer(), nullable=False),
        sa.Column('seen_post_id', sa.BigInteger(), nullable=False),
        sa.Column('at', UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(['participant_id'], ['participants.id'],
                                name=op.f('fk_page_visits_participant_id_participants')),
        sa.ForeignKeyConstraint(['mood_id'], ['moods.id'],
                                name=op.f('fk_page_visits_mood_id_moods')),
        sa.PrimaryKeyConstraint('participant_id', 'mood_id', name=op.f('pk_page_visits')),
    )


def downgrade() -> None:
    op.drop_table('page_visits')
