"""Scheduled wakes and check-in agreements.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01 19:45:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import poller.models


revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None

UTC = poller.models.UTCDateTime
BIG = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')


def _fk(table: str, column: str, target: str) -> sa.ForeignKeyConstraint:
    other = target.split('.')[0]
    return sa.ForeignKeyConstraint([column], [target], name=op.f(f'fk_{table}_{column}_{other}'))


def upgrade() -> None:
    op.create_table(
        'alarms',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('agent_id', sa.Integer(), nullable=False),
        sa.Column('mood_id', sa.Integer(), nullable=False),
        sa.Column('kind', sa.String(length=8), nullable=False),
        sa.Column('spec', sa.String(length=200), nullable=False),
        sa.Column('tz', sa.String(length=64), nullable=False),
        sa.Column('note', sa.Text(), nullable=False),
        sa.Column('set_by', sa.String(length=100), nullable=False),
        sa.Column('lateness_cutoff_minutes', sa.Integer(), nullable=False),
        sa.Column('created_at', UTC(), nullable=False),
        sa.Column('next_at', UTC(), nullable=True),
        sa.Column('last_wake_id', BIG, nullable=True),
        sa.Column('fired', sa.Integer(), nullable=False),
        sa.Column('removed_at', UTC(), nullable=True),
        sa.Column('version', sa.Integer(), nullable=False),
        _fk('alarms', 'agent_id', 'participants.id'),
        _fk('alarms', 'mood_id', 'moods.id'),
        _fk('alarms', 'last_wake_id', 'wakes.id'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_alarms')),
    )
    op.create_index('ix_alarms_next_at', 'alarms', ['next_at'])
    op.create_table(
        'checkin_agreements',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('person_id', sa.Integer(), nullable=False),
        sa.Column('agent_id', sa.Integer(), nullable=False),
        sa.Column('mood_id', sa.Integer(), nullable=False),
        sa.Column('kind', sa.String(length=8), nullable=False),
        sa.Column('spec', sa.String(length=32), nullable=False),
        sa.Column('tz', sa.String(length=64), nullable=False),
        sa.Column('grace_minutes', sa.Integer(), nullable=False),
        sa.Column('lateness_cutoff_minutes', sa.Integer(), nullable=False),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('contact_email', sa.String(length=254), nullable=True),
        sa.Column('consent_digest', sa.String(length=64), nullable=True),
        sa.Column('consent_at', UTC(), nullable=True),
        sa.Column('armed', sa.Boolean(), nullable=False),
        sa.Column('answered_until', UTC(), nullable=True),
        sa.Column('processed_until', UTC(), nullable=False),
        sa.Column('next_check_at', UTC(), nullable=True),
        sa.Column('created_at', UTC(), nullable=False),
        sa.Column('updated_at', UTC(), nullable=False),
        sa.Column('version', sa.Integer(), nullable=False),
        _fk('checkin_agreements', 'person_id', 'participants.id'),
        _fk('checkin_agreements', 'agent_id', 'participants.id'),
        _fk('checkin_agreements', 'mood_id', 'moods.id'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_checkin_agreements')),
    )
    op.create_index('ix_checkin_agreements_next_check_at', 'checkin_agreements', ['next_check_at'])
    op.create_table(
        'checkin_streaks',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('agreement_id', sa.Integer(), nullable=False),
        sa.Column('first_due', UTC(), nullable=False),
        sa.Column('last_due', UTC(), nullable=False),
        sa.Column('opened_at', UTC(), nullable=False),
        sa.Column('closed_at', UTC(), nullable=True),
        sa.Column('closed_by', sa.String(length=16), nullable=False),
        sa.Column('grace_until', UTC(), nullable=True),
        sa.Column('grace_wake_id', BIG, nullable=True),
        sa.Column('contact_state', sa.String(length=16), nullable=False),
        sa.Column('contact_wake_id', BIG, nullable=True),
        sa.Column('contact_note', sa.Text(), nullable=False),
        _fk('checkin_streaks', 'agreement_id', 'checkin_agreements.id'),
        _fk('checkin_streaks', 'grace_wake_id', 'wakes.id'),
        _fk('checkin_streaks', 'contact_wake_id', 'wakes.id'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_checkin_streaks')),
    )
    op.create_index('ix_checkin_streaks_agreement', 'checkin_streaks',
                    ['agreement_id', 'closed_at'])
    op.create_table(
        'checkin_notices',
        sa.Column('wake_id', BIG, nullable=False),
        sa.Column('streak_id', sa.Integer(), nullable=False),
        sa.Column('oldest_due', UTC(), nullable=False),
        sa.Column('newest_due', UTC(), nullable=False),
        sa.Column('late', sa.Boolean(), nullable=False),
        sa.Column('confirmed_at', UTC(), nullable=True),
        _fk('checkin_notices', 'wake_id', 'wakes.id'),
        _fk('checkin_notices', 'streak_id', 'checkin_streaks.id'),
        sa.PrimaryKeyConstraint('wake_id', name=op.f('pk_checkin_notices')),
    )
    op.create_table(
        'mail_outbox',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('agreement_id', sa.Integer(), nullable=True),
        sa.Column('streak_id', sa.Integer(), nullable=True),
        sa.Column('purpose', sa.String(length=16), nullable=False),
        sa.Column('recipient', sa.String(length=254), nullable=False),
        sa.Column('subject', sa.String(length=300), nullable=False),
        sa.Column('body', sa.Text(), nullable=False),
        sa.Column('message_id', sa.String(length=200), nullable=False),
        sa.Column('state', sa.String(length=16), nullable=False),
        sa.Column('created_at', UTC(), nullable=False),
        sa.Column('claimed_at', UTC(), nullable=True),
        sa.Column('claimed_by', sa.String(length=100), nullable=False),
        sa.Column('sent_at', UTC(), nullable=True),
        sa.Column('error', sa.Text(), nullable=False),
        _fk('mail_outbox', 'agreement_id', 'checkin_agreements.id'),
        _fk('mail_outbox', 'streak_id', 'checkin_streaks.id'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_mail_outbox')),
        sa.UniqueConstraint('message_id', name=op.f('uq_mail_outbox_message_id')),
    )
    op.create_index('ix_mail_outbox_state', 'mail_outbox', ['state'])


def downgrade() -> None:
    op.drop_index('ix_mail_outbox_state', table_name='mail_outbox')
    op.drop_table('mail_outbox')
    op.drop_table('checkin_notices')
    op.drop_index('ix_checkin_streaks_agreement', table_name='checkin_streaks')
    op.drop_table('checkin_streaks')
    op.drop_index('ix_checkin_agreements_next_check_at', table_name='checkin_agreements')
    op.drop_table('checkin_agreements')
    op.drop_index('ix_alarms_next_at', table_name='alarms')
    op.drop_table('alarms')
