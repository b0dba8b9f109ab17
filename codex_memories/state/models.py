"""SQLAlchemy tables of the state DB. Only the store (`store.py` and its concern modules beside
it) and the migrations use them.

`stage1_outputs` and `jobs` match Codex's memories DB column for column (spec section 2.2), so
their rows mean the same thing in both programs; `jobs` adds nullable token-usage columns.
`threads` holds the spec 2.2 thread columns the pipeline needs plus discovery bookkeeping.
`forget_audit` and `citation_harvest` are ours. Times: memory tables in epoch seconds, `threads`
in epoch milliseconds. The schema itself is created by the versioned migrations, never by
`create_all`; these classes must stay in step with the newest revision.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Index, Integer, MetaData, Text, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class ThreadRow(Base):
    __tablename__ = "threads"

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    rollout_path: Mapped[str] = mapped_column(Text, nullable=False)
    created_at_ms: Mapped[int] = mapped_column(BigInteger, nullable=False)
    updated_at_ms: Mapped[int] = mapped_column(BigInteger, nullable=False)
    source: Mapped[str] = mapped_column(Text, nullable=False)
    cwd: Mapped[str | None] = mapped_column(Text)
    originator: Mapped[str | None] = mapped_column(Text)
    cli_version: Mapped[str | None] = mapped_column(Text)
    model_provider: Mapped[str | None] = mapped_column(Text)
    forked_from_id: Mapped[str | None] = mapped_column(Text)
    first_user_message: Mapped[str | None] = mapped_column(Text)
    archived: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default=text("false"))
    archived_at_ms: Mapped[int | None] = mapped_column(BigInteger)
    git_sha: Mapped[str | None] = mapped_column(Text)
    git_branch: Mapped[str | None] = mapped_column(Text)
    git_origin_url: Mapped[str | None] = mapped_column(Text)
    memory_mode: Mapped[str] = mapped_column(Text, nullable=False, server_default="enabled")
    used_external_context: Mapped[bool] = mapped_column(
        Boolean, nullable=False, server_default=text("false")
    )
    rollout_size: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    rollout_mtime_ns: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    missing_since_ms: Mapped[int | None] = mapped_column(BigInteger)

    __table_args__ = (
        Index("idx_threads_rollout_path", "rollout_path", unique=True),
        # Startup claim: equality on memory_mode/archived, newest first, `id` breaking ties, so
        # each keyset page is one range scan already in the claim's order (0003_scale).
        Index("idx_threads_claim_scale", "memory_mode", "archived", "updated_at_ms", "id"),
    )


class Stage1OutputRow(Base):
    __tablename__ = "stage1_outputs"

    thread_id: Mapped[str] = mapped_column(Text, primary_key=True)
    source_updated_at: Mapped[int] = mapped_column(BigInteger, nullable=False)
    raw_memory: Mapped[str] = mapped_column(Text, nullable=False)
    rollout_summary: Mapped[str] = mapped_column(Text, nullable=False)
    rollout_slug: Mapped[str | None] = mapped_column(Text)
    generated_at: Mapped[int] = mapped_column(BigInteger, nullable=False)
    usage_count: Mapped[int | None] = mapped_column(Integer)
    last_usage: Mapped[int | None] = mapped_column(BigInteger)
    selected_for_phase2: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    selected_for_phase2_source_updated_at: Mapped[int | None] = mapped_column(BigInteger)
    # Ours (issue 15, migration 0005_scopes): `user`, `project` or `mixed`, and the key of the
    # thread's project. The raw memory's `scope:` lines are the per-block truth; these columns
    # let export and forgetting find a project's outputs without reading every payload.
    scope: Mapped[str | None] = mapped_column(Text)
    project_key: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (
        Index("idx_stage1_outputs_project_key", "project_key"),
        Index(
            "idx_stage1_outputs_source_updated_at",
            text("source_updated_at DESC"),
            text("thread_id DESC"),
        ),
        # Phase-2 input selection ranks by these expressions (`phase2.PHASE2_RANKING`; the test of
        # migration 0002 holds them equal):
        # read in index order, the top N cost O(N) instead of a full scan and sort (0002).
        Index(
            "idx_stage1_outputs_phase2_rank",
            text("COALESCE(usage_count, 0) DESC"),
            text("COALESCE(last_usage, source_updated_at) DESC"),
            text("source_updated_at DESC"),
            text("thread_id DESC"),
        ),
    )


class JobRow(Base):
    __tablename__ = "jobs"

    kind: Mapped[str] = mapped_column(Text, primary_key=True)
    job_key: Mapped[str] = mapped_column(Text, primary_key=True)
    status: Mapped[str] = mapped_column(Text, nullable=False)
    worker_id: Mapped[str | None] = mapped_column(Text)
    ownership_token: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[int | None] = mapped_column(BigInteger)
    finished_at: Mapped[int | None] = mapped_column(BigInteger)
    lease_until: Mapped[int | None] = mapped_column(BigInteger)
    retry_at: Mapped[int | None] = mapped_column(BigInteger)
    retry_remaining: Mapped[int] = mapped_column(Integer, nullable=False)
    last_error: Mapped[str | None] = mapped_column(Text)
    input_watermark: Mapped[int | None] = mapped_column(BigInteger)
    last_success_watermark: Mapped[int | None] = mapped_column(BigInteger)
    input_tokens: Mapped[int | None] = mapped_column(BigInteger)
    cached_input_tokens: Mapped[int | None] = mapped_column(BigInteger)
    output_tokens: Mapped[int | None] = mapped_column(BigInteger)
    reasoning_output_tokens: Mapped[int | None] = mapped_column(BigInteger)
    total_tokens: Mapped[int | None] = mapped_column(BigInteger)

    __table_args__ = (
        Index("idx_jobs_kind_status_retry_lease", "kind", "status", "retry_at", "lease_until"),
    )


class ForgetAuditRow(Base):
    __tablename__ = "forget_audit"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    route: Mapped[str] = mapped_column(Text, nullable=False)
    target: Mapped[str] = mapped_column(Text, nullable=False)
    reason: Mapped[str] = mapped_column(Text, nullable=False)
    removed: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[int] = mapped_column(BigInteger, nullable=False)

    __table_args__ = (Index("idx_forget_audit_created_at", "created_at"),)


class CitationHarvestRow(Base):
    __tablename__ = "citation_harvest"

    rollout_path: Mapped[str] = mapped_column(Text, primary_key=True)
    harvested_offset: Mapped[int] = mapped_column(BigInteger, nullable=False)


class Stage1ArrivedResultRow(Base):
    """An extraction's answer between its arrival and the job's finalize (0004_pace): a run that
    dies in between leaves it, and the next claim reuses it instead of calling the model again."""

    __tablename__ = "stage1_arrived_results"

    thread_id: Mapped[str] = mapped_column(Text, primary_key=True)
    source_updated_at: Mapped[int] = mapped_column(BigInteger, nullable=False)
    provider: Mapped[str] = mapped_column(Text, nullable=False)
    model: Mapped[str] = mapped_column(Text, nullable=False)
    prompt_sha256: Mapped[str] = mapped_column(Text, nullable=False)
    result_json: Mapped[str] = mapped_column(Text, nullable=False)  # redacted ExtractionResult
    arrived_at: Mapped[int] = mapped_column(BigInteger, nullable=False)


class TeamExportRow(Base):
    """A repository folder this store exported a team memory file into (0006_team_exports), so a
    forget on request finds the file even where no session of the project ran."""

    __tablename__ = "team_exports"

    folder: Mapped[str] = mapped_column(Text, primary_key=True)
    project_key: Mapped[str] = mapped_column(Text, nullable=False)
    exported_at: Mapped[int] = mapped_column(BigInteger, nullable=False)
