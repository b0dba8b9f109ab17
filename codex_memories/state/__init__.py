"""The state DB: threads seen by discovery, stage-1 outputs, leased jobs, audit and harvest.

Use `MemoryStore.open(url)`; it migrates the schema and returns a store whose methods return
the records below (never ORM rows).
"""

from codex_memories.state._jobs import DEFAULT_RETRY_REMAINING
from codex_memories.state.db import create_engine_for_url
from codex_memories.state.phase2 import PHASE2_INPUT_SELECTION_PAGE_SIZE, PHASE2_SUCCESS_COOLDOWN_SECONDS
from codex_memories.state.records import (
    GLOBAL_JOB_KEY,
    TOKEN_USAGE_FIELDS,
    ForgetAuditRecord,
    ForgetRoute,
    JobKind,
    JobRecord,
    JobStatus,
    MemoryMode,
    Phase2ClaimOutcome,
    Phase2ClaimResult,
    Stage1Claim,
    Stage1ClaimOutcome,
    Stage1ClaimResult,
    Stage1Output,
    StatusSummary,
    ThreadRecord,
)
from codex_memories.state.store import MemoryStore

__all__ = [
    "DEFAULT_RETRY_REMAINING",
    "GLOBAL_JOB_KEY",
    "PHASE2_INPUT_SELECTION_PAGE_SIZE",
    "PHASE2_SUCCESS_COOLDOWN_SECONDS",
    "TOKEN_USAGE_FIELDS",
    "ForgetAuditRecord",
    "ForgetRoute",
    "JobKind",
    "JobRecord",
    "JobStatus",
    "MemoryMode",
    "MemoryStore",
    "Phase2ClaimOutcome",
    "Phase2ClaimResult",
    "Stage1Claim",
    "Stage1ClaimOutcome",
    "Stage1ClaimResult",
    "Stage1Output",
    "StatusSummary",
    "ThreadRecord",
    "create_engine_for_url",
]
