"""A throwaway Codex home for flow and CLI tests: rollouts in, the real flows, the files out.

`MemoryHome` holds a Codex home with `[features] memories = true`, a SQLite state DB and a local
memory root under a temp dir. `phase1()` / `phase2()` run the real Prefect flows with the offline
heuristic provider (request the `prefect_harness` fixture); `cli(...)` runs the installed
`codex-memories` in a subprocess with the same locations and a private HOME.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from codex_memories import paths
from codex_memories.reports.phase1 import Phase1Report
from codex_memories.reports.phase2 import Phase2Report
from codex_memories.runtime import open_store
from codex_memories.settings import SettingsOverrides
from codex_memories.state.store import MemoryStore
from tests.support.rollout_factory import write_rollout

CLI = [sys.executable, "-m", "codex_memories_cli.main"]


@dataclass
class MemoryHome:
    root: Path

    def __post_init__(self) -> None:
        self.codex_home.mkdir(parents=True, exist_ok=True)
        self.write_codex_config()

    @property
    def codex_home(self) -> Path:
        return self.root / "codex-home"

    @property
    def db_url(self) -> str:
        return f"sqlite:///{self.root / 'state.sqlite'}"

    @property
    def memory_root(self) -> Path:
        return self.root / "memories"

    @property
    def store(self) -> MemoryStore:
        return open_store(self.db_url)

    def write_codex_config(self, memories: str = "") -> None:
        text = "[features]\nmemories = true\n"
        if memories:
            text += "\n[memories]\n" + memories.strip() + "\n"
        (self.codex_home / paths.CODEX_CONFIG_FILE).write_text(text, encoding="utf-8")

    def rollout(self, *messages: str, days_ago: float = 1, **options) -> tuple[str, Path]:
        """Write one interactive session; returns (thread id, rollout path)."""
        created_at = datetime.now(UTC) - timedelta(days=days_ago)
        path = write_rollout(self.codex_home, created_at=created_at, user_messages=list(messages), **options)
        thread_id = path.stem[-36:]
        return thread_id, path

    def overrides(self, **values: Any) -> SettingsOverrides:
        """This home's locations and the offline provider, as every flow takes them."""
        return SettingsOverrides(
            codex_home=str(self.codex_home), db_url=self.db_url, memory_root=str(self.memory_root), provider="heuristic", **values
        )

    def phase1(self) -> Phase1Report:
        from codex_memories_flows.phase1 import phase1

        return phase1(overrides=self.overrides(ignore_age_windows=True, max_rollouts_per_startup=128))

    def phase2(self) -> Phase2Report:
        from codex_memories_flows.phase2 import phase2

        state = phase2(overrides=self.overrides(), force=True, return_state=True)
        return state.result(raise_on_failure=False)

    def memory_text(self) -> str:
        """Everything a later session could read: summary, handbook, raw memories, summaries."""
        parts = []
        for name in (paths.MEMORY_SUMMARY_FILE, paths.MEMORY_FILE, paths.RAW_MEMORIES_FILE):
            file = self.memory_root / name
            if file.is_file():
                parts.append(file.read_text(encoding="utf-8"))
        summaries = self.memory_root / paths.ROLLOUT_SUMMARIES_DIR
        if summaries.is_dir():
            parts += [file.read_text(encoding="utf-8") for file in sorted(summaries.glob("*.md"))]
        return "\n".join(parts)

    def rollout_summaries(self) -> list[str]:
        folder = self.memory_root / paths.ROLLOUT_SUMMARIES_DIR
        return sorted(file.read_text(encoding="utf-8") for file in folder.glob("*.md")) if folder.is_dir() else []

    def cli(
        self, *arguments: str, stdin: str | None = None, locations: bool = True, environment: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        command = [*CLI, *arguments]
        if locations:
            command += ["--codex-home", str(self.codex_home)]
        given = environment or {}
        environment = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("CODEX_MEMORIES_", "CODEX_HOME", "OPENAI_"))
        }
        environment["HOME"] = str(self.root / "user-home")
        environment["CODEX_MEMORIES_DB_URL"] = self.db_url
        environment["CODEX_MEMORIES_MEMORY_ROOT"] = str(self.memory_root)
        environment.update(given)
        return subprocess.run(
            command, input=stdin, capture_output=True, text=True, env=environment, cwd=self.root, timeout=120
        )


def remember(
    store: MemoryStore,
    thread_id: str,
    *,
    raw_memory: str = "prefers pnpm",
    rollout_summary: str = "summary",
    cwd: str | None = None,
    git_origin_url: str | None = None,
    source_updated_at: int = 1,
    rollout_slug: str | None = "pnpm",
) -> None:
    """A thread with a stage-1 output, written the way phase 1 writes it (no flow needed)."""
    from codex_memories.state.records import ThreadRecord

    store.upsert_threads(
        [ThreadRecord(id=thread_id, rollout_path=f"/nowhere/{thread_id}.jsonl", created_at_ms=1, updated_at_ms=source_updated_at * 1000,
                      source="cli", first_user_message="hi", cwd=cwd, git_origin_url=git_origin_url)]
    )
    claim = store.try_claim_stage1_job(
        thread_id=thread_id, worker_id="test", source_updated_at=source_updated_at, lease_seconds=60, max_running_jobs=8
    )
    assert store.mark_stage1_job_succeeded(
        thread_id=thread_id, ownership_token=claim.ownership_token, source_updated_at=source_updated_at,
        raw_memory=raw_memory, rollout_summary=rollout_summary, rollout_slug=rollout_slug,
    )
