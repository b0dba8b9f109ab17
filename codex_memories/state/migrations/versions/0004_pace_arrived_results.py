"""Extraction results that arrived but were not finalized yet (`stage1_arrived_results`).

A phase-1 extraction's model answer is written here as soon as it arrives, before the batch's
quality check and finalize; a run killed in between (or whose lease expired) leaves the row, and
the next claim of the same thread at the same `source_updated_at` with the same provider, model
and prompt uses it instead of paying for the model call again. Finalizing the job deletes it.

Revision ID: 0004_pace
Revises: 0003_scale
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_pace"
down_revision = "0003_scale"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "stage1_arrived_results",
        sa.Column("thread_id", sa.Text(), nullable=False),
        sa.Column("source_updated_at", sa.BigInteger(), nullable=False),
        sa.Column("provider", sa.Text(), nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        sa.Column("prompt_sha256", sa.Text(), nullable=False),
        sa.Column("result_json", sa.Text(), nullable=False),
        sa.Column("arrived_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("thread_id", name="pk_stage1_arrived_results"),
    )


def downgrade() -> None:
    op.drop_table("stage1_arrived_results")
