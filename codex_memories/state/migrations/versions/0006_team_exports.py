"""Where this store's team memory files were exported (`team_exports`).

`codex-memories export --project DIR` writes `<repository>/.codex/memories.md`; a forget on
request edits that file afterwards (`codex_memories.forget.team_files`). The repository is found
from the forgotten threads' working directories, but a checkout that is not where the sessions
ran (a second clone, a moved folder) can only be found from the export itself: one row per
repository folder, with the project key it was exported for and when (milliseconds).

Revision ID: 0006_team_exports
Revises: 0005_scopes
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_team_exports"
down_revision = "0005_scopes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "team_exports",
        sa.Column("folder", sa.Text(), nullable=False),
        sa.Column("project_key", sa.Text(), nullable=False),
        sa.Column("exported_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("folder", name="pk_team_exports"),
    )


def downgrade() -> None:
    op.drop_table("team_exports")
