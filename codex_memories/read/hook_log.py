"""What one hook call is given and what it leaves behind: its options, its outcome codes, its
result and its line in `hooks.log`. The hook entry point (`hooks`) and the fresh-memory pass it
starts (`fresh`), which logs as `Fresh`, share them.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from codex_memories.settings_sources import PROMPT_RECALL_BUDGET, SESSION_START_BUDGET

HOOK_LOG_DIR = "codex-memories"
HOOK_LOG_FILE = "hooks.log"
LOG_ROTATE_BYTES = 1_000_000
EMPTY_OUTPUT = "{}"


class HookOutcome(StrEnum):
    """What one hook call did (the same code in the log line and in `HookResult`)."""

    injected_memory_summary = "injected_memory_summary"
    skipped_no_memory_summary = "skipped_no_memory_summary"
    injected_team_memory = "injected_team_memory"  # the repository's team memory, no summary
    injected_relevant_memory = "injected_relevant_memory"
    skipped_nothing_relevant = "skipped_nothing_relevant"
    harvested_citations = "harvested_citations"
    started_background_harvest = "started_background_harvest"
    skipped_no_transcript = "skipped_no_transcript"
    failed_bad_input = "failed_bad_input"
    failed_unknown_event = "failed_unknown_event"
    failed_memory_root_unreadable = "failed_memory_root_unreadable"
    failed_encoder_unavailable = "failed_encoder_unavailable"  # an embedding package is missing or broken
    failed_settings = "failed_settings"
    failed_state_db = "failed_state_db"
    failed_transcript_unreadable = "failed_transcript_unreadable"
    failed_start_background_harvest = "failed_start_background_harvest"
    failed_unexpected = "failed_unexpected"
    # The repository's `.codex-memories.toml` says "off" (scopes.repository_switch): nothing injected.
    skipped_repository_switch_off = "skipped_repository_switch_off"
    # The prompt hook never builds the recall index (phase 2 and forget do): without a current
    # one it injects nothing and says which (scopes of index.IndexNotReady).
    skipped_recall_index_missing = "skipped_recall_index_missing"
    skipped_recall_index_stale = "skipped_recall_index_stale"
    failed_recall_index_damaged = "failed_recall_index_damaged"
    # Fresh memory (read.fresh): the hook started its detached process, which logs as `Fresh`.
    started_fresh_pass = "started_fresh_pass"
    fresh_pass_done = "fresh_pass_done"
    skipped_already_fresh = "skipped_already_fresh"
    skipped_fresh_memory_off = "skipped_fresh_memory_off"
    skipped_fresh_waiter_running = "skipped_fresh_waiter_running"
    failed_start_fresh_pass = "failed_start_fresh_pass"
    failed_fresh_pass = "failed_fresh_pass"
    # Written by the hook launcher's shell code, not here: its recorded Python environment is
    # gone and no `codex-memories-hook` on PATH could stand in (codex_memories.codex.launcher).
    failed_hook_environment_missing = "failed_hook_environment_missing"

    @property
    def is_failure(self) -> bool:
        return self.value.startswith("failed_")


@dataclass(frozen=True)
class HookOptions:
    codex_home: Path
    memory_root: Path
    summary_budget_tokens: int = SESSION_START_BUDGET.default
    prompt_budget_tokens: int = PROMPT_RECALL_BUDGET.default
    db_url: str | None = None  # None: resolved from our settings when Stop needs it
    # Stop: hand the harvest to a detached child process and return at once (the console
    # script's default: importing SQLAlchemy and our settings costs about a second).
    harvest_in_background: bool = False

    @property
    def log_path(self) -> Path:
        return hook_log_path(self.codex_home)


@dataclass
class HookResult:
    event: str
    outcome: HookOutcome
    stdout: str = EMPTY_OUTPUT
    detail: str = ""
    details: dict[str, Any] = field(default_factory=dict)


def hook_log_path(codex_home: Path) -> Path:
    return Path(codex_home) / HOOK_LOG_DIR / HOOK_LOG_FILE


def redact_url(text: str) -> str:
    return re.sub(r"(://[^:/@\s]+:)[^@\s]+@", r"\1***@", text)


def write_log_line(log_path: Path, result: HookResult, seconds: float) -> None:
    """One line per call; a log that cannot be written is reported on stderr (Codex shows hook
    stderr in its own logs), never raised."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    detail = result.detail.replace("\n", " ")[:500]
    line = f"{stamp} {result.event} {result.outcome.value} {seconds * 1000:.0f}ms {detail}".rstrip() + "\n"
    try:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        if log_path.exists() and log_path.stat().st_size > LOG_ROTATE_BYTES:
            log_path.replace(log_path.with_name(log_path.name + ".1"))
        with log_path.open("a", encoding="utf-8") as log:
            log.write(line)
    except OSError as error:
        sys.stderr.write(f"codex-memories hook: cannot write {log_path}: {error}; {line}")
