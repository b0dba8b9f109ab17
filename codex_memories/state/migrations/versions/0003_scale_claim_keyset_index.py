"""Index for the startup claim's keyset pages.

`claim_stage1_jobs_for_startup` reads spec 1.4's `ORDER BY updated_at_ms DESC, id DESC LIMIT
scan_limit` in growing pages, each starting after the `(updated_at_ms, id)` of the previous
one, and stops as soon as it has its claims. With `id` in the index after `updated_at_ms`, each
page is one backward range scan that starts at the previous page's last row and is already in
the query's order (the 0001 index `memory_mode, archived, updated_at_ms` left SQLite a temporary
B-tree and PostgreSQL an incremental sort for the `id` tie-break, over every row of the window).
The 0001 index is a prefix of this one, so it is dropped.

Revision ID: 0003_scale
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0003_scale"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("idx_threads_claim_scale", "threads", ["memory_mode", "archived", "updated_at_ms", "id"])
    op.drop_index("idx_threads_claim", table_name="threads")


def downgrade() -> None:
    op.create_index("idx_threads_claim", "threads", ["memory_mode", "archived", "updated_at_ms"])
    op.drop_index("idx_threads_claim_scale", table_name="threads")
