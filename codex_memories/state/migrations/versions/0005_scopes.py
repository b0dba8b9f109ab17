"""Scopes on stage-1 outputs (issue 15): `scope` (`user` | `project` | `mixed`) and `project_key`.

The per-block truth is in the raw memory (`scope:` lines, `extract.scope_tagging`), where phase 2
and Codex's own agent read it; the columns make "every output of project X" one indexed query
(export, forgetting by project). Rows written before this revision were never asked for a scope:
they become project-level, keyed from their thread's git origin or cwd the way extraction keys
new rows (`scopes.project_key`), so no old memory starts applying in every project.

Revision ID: 0005_scopes
Revises: 0004_pace
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from codex_memories.scopes import PROJECT_SCOPE, project_key

revision = "0005_scopes"
down_revision = "0004_pace"
branch_labels = None
depends_on = None

_BATCH = 500


def upgrade() -> None:
    op.add_column("stage1_outputs", sa.Column("scope", sa.Text(), nullable=True))
    op.add_column("stage1_outputs", sa.Column("project_key", sa.Text(), nullable=True))
    op.create_index("idx_stage1_outputs_project_key", "stage1_outputs", ["project_key"])
    connection = op.get_bind()
    outputs = sa.table("stage1_outputs", sa.column("thread_id"), sa.column("scope"), sa.column("project_key"))
    threads = sa.table("threads", sa.column("id"), sa.column("cwd"), sa.column("git_origin_url"))
    rows = connection.execute(
        sa.select(outputs.c.thread_id, threads.c.cwd, threads.c.git_origin_url).select_from(
            outputs.outerjoin(threads, threads.c.id == outputs.c.thread_id)
        )
    ).fetchall()
    for start in range(0, len(rows), _BATCH):
        for thread_id, cwd, origin in rows[start : start + _BATCH]:
            connection.execute(
                outputs.update()
                .where(outputs.c.thread_id == thread_id)
                .values(scope=PROJECT_SCOPE, project_key=project_key(git_origin_url=origin, cwd=cwd))
            )


def downgrade() -> None:
    op.drop_index("idx_stage1_outputs_project_key", table_name="stage1_outputs")
    with op.batch_alter_table("stage1_outputs") as batch:
        batch.drop_column("project_key")
        batch.drop_column("scope")
