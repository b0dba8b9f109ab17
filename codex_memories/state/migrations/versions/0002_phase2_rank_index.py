"""Index for the phase-2 input selection's ranking.

`get_phase2_input_selection` orders `stage1_outputs` by `COALESCE(usage_count, 0) DESC,
COALESCE(last_usage, source_updated_at) DESC, source_updated_at DESC, thread_id DESC` and reads
the top N. Without an index on exactly those expressions both backends scan and sort the whole
table (measured: SQLite 20x slower at 100,000 outputs than at 10,000; benchmarks/claim_scale.py).
With it they walk the index and stop after N rows.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "idx_stage1_outputs_phase2_rank",
        "stage1_outputs",
        [
            sa.text("COALESCE(usage_count, 0) DESC"),
            sa.text("COALESCE(last_usage, source_updated_at) DESC"),
            sa.text("source_updated_at DESC"),
            sa.text("thread_id DESC"),
        ],
    )


def downgrade() -> None:
    op.drop_index("idx_stage1_outputs_phase2_rank", table_name="stage1_outputs")
