"""Initial schema: threads, stage1_outputs, jobs, forget_audit, citation_harvest.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "threads",
        sa.Column("id", sa.Text(), primary_key=True),
        sa.Column("rollout_path", sa.Text(), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("cwd", sa.Text()),
        sa.Column("originator", sa.Text()),
        sa.Column("cli_version", sa.Text()),
        sa.Column("model_provider", sa.Text()),
        sa.Column("forked_from_id", sa.Text()),
        sa.Column("first_user_message", sa.Text()),
        sa.Column("archived", sa.Boolean(), nullable=False, server_default=sa.text("false")),
        sa.Column("archived_at_ms", sa.BigInteger()),
        sa.Column("git_sha", sa.Text()),
        sa.Column("git_branch", sa.Text()),
        sa.Column("git_origin_url", sa.Text()),
        sa.Column("memory_mode", sa.Text(), nullable=False, server_default="enabled"),
        sa.Column(
            "used_external_context", sa.Boolean(), nullable=False, server_default=sa.text("false")
        ),
        sa.Column("rollout_size", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("rollout_mtime_ns", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("missing_since_ms", sa.BigInteger()),
        sa.PrimaryKeyConstraint("id", name="pk_threads"),
    )
    op.create_index("idx_threads_rollout_path", "threads", ["rollout_path"], unique=True)
    op.create_index("idx_threads_claim", "threads", ["memory_mode", "archived", "updated_at_ms"])

    op.create_table(
        "stage1_outputs",
        sa.Column("thread_id", sa.Text(), nullable=False),
        sa.Column("source_updated_at", sa.BigInteger(), nullable=False),
        sa.Column("raw_memory", sa.Text(), nullable=False),
        sa.Column("rollout_summary", sa.Text(), nullable=False),
        sa.Column("rollout_slug", sa.Text()),
        sa.Column("generated_at", sa.BigInteger(), nullable=False),
        sa.Column("usage_count", sa.Integer()),
        sa.Column("last_usage", sa.BigInteger()),
        sa.Column("selected_for_phase2", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("selected_for_phase2_source_updated_at", sa.BigInteger()),
        sa.PrimaryKeyConstraint("thread_id", name="pk_stage1_outputs"),
    )
    op.create_index(
        "idx_stage1_outputs_source_updated_at",
        "stage1_outputs",
        [sa.text("source_updated_at DESC"), sa.text("thread_id DESC")],
    )

    op.create_table(
        "jobs",
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("job_key", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("worker_id", sa.Text()),
        sa.Column("ownership_token", sa.Text()),
        sa.Column("started_at", sa.BigInteger()),
        sa.Column("finished_at", sa.BigInteger()),
        sa.Column("lease_until", sa.BigInteger()),
        sa.Column("retry_at", sa.BigInteger()),
        sa.Column("retry_remaining", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text()),
        sa.Column("input_watermark", sa.BigInteger()),
        sa.Column("last_success_watermark", sa.BigInteger()),
        sa.Column("input_tokens", sa.BigInteger()),
        sa.Column("cached_input_tokens", sa.BigInteger()),
        sa.Column("output_tokens", sa.BigInteger()),
        sa.Column("reasoning_output_tokens", sa.BigInteger()),
        sa.Column("total_tokens", sa.BigInteger()),
        sa.PrimaryKeyConstraint("kind", "job_key", name="pk_jobs"),
    )
    op.create_index(
        "idx_jobs_kind_status_retry_lease", "jobs", ["kind", "status", "retry_at", "lease_until"]
    )

    op.create_table(
        "forget_audit",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("route", sa.Text(), nullable=False),
        sa.Column("target", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("removed", sa.Text(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_forget_audit"),
    )
    op.create_index("idx_forget_audit_created_at", "forget_audit", ["created_at"])

    op.create_table(
        "citation_harvest",
        sa.Column("rollout_path", sa.Text(), nullable=False),
        sa.Column("harvested_offset", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("rollout_path", name="pk_citation_harvest"),
    )


def downgrade() -> None:
    op.drop_table("citation_harvest")
    op.drop_index("idx_forget_audit_created_at", table_name="forget_audit")
    op.drop_table("forget_audit")
    op.drop_index("idx_jobs_kind_status_retry_lease", table_name="jobs")
    op.drop_table("jobs")
    op.drop_index("idx_stage1_outputs_source_updated_at", table_name="stage1_outputs")
    op.drop_table("stage1_outputs")
    op.drop_index("idx_threads_claim", table_name="threads")
    op.drop_index("idx_threads_rollout_path", table_name="threads")
    op.drop_table("threads")
