"""The front door: people's tokens and operator role, web sessions, pollers' beats.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 17:20:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import poller.models


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('participants', schema=None) as batch_op:
        batch_op.add_column(sa.Column('operator', sa.Boolean(), server_default=sa.false(),
                                      nullable=False))
    op.create_table(
        'person_tokens',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('participant_id', sa.Integer(), nullable=False),
        sa.Column('digest', sa.String(length=64), nullable=False),
        sa.Column('created_at', poller.models.UTCDateTime(), nullable=False),
        sa.Column('revoked_at', poller.models.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(['participant_id'], ['participants.id'],
                                name=op.f('fk_person_tokens_participant_id_participants')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_person_tokens')),
        sa.UniqueConstraint('digest', name=op.f('uq_person_tokens_digest')),
    )
    op.create_index('ix_person_tokens_participant', 'person_tokens', ['participant_id'])
    op.create_table(
        'web_sessions',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('digest', sa.String(length=64), nullable=False),
        sa.Column('token_id', sa.Integer(), nullable=False),
        sa.Column('created_at', poller.models.UTCDateTime(), nullable=False),
        sa.Column('expires_at', poller.models.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(['token_id'], ['person_tokens.id'],
                                name=op.f('fk_web_sessions_token_id_person_tokens')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_web_sessions')),
        sa.UniqueConstraint('digest', name=op.f('uq_web_sessions_digest')),
    )
    op.create_table(
        'poller_beats',
        sa.Column('holder', sa.String(length=100), nullable=False),
        sa.Column('at', poller.models.UTCDateTime(), nullable=False),
        sa.Column('interval', sa.Double(), nullable=False),
        sa.Column('took', sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint('holder', name=op.f('pk_poller_beats')),
    )


def downgrade() -> None:
    op.drop_table('poller_beats')
    op.drop_table('web_sessions')
    op.drop_index('ix_person_tokens_participant', table_name='person_tokens')
    op.drop_table('person_tokens')
    with op.batch_alter_table('participants', schema=None) as batch_op:
        batch_op.drop_column('operator')
