"""Parity: per-Mood stops, budgets, typing and turn progress.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 19:45:00
"""
from __future__ import annotations


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
