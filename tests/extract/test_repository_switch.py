"""A repository's `.codex-memories.toml` keeps its sessions out of phase 1 (issue 35.6): no model
call, a named outcome, stored as a no-output success; other repositories extract as before."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from codex_memories.extract.extraction import extract_memory, finalize_extraction
from codex_memories.llm.base import ExtractionResponse, TokenUsage
from codex_memories.llm.schema import Stage1Extraction
from codex_memories.outcomes import Outcome
from codex_memories.scopes import REPOSITORY_SWITCH_FILE, repository_switch
from codex_memories.state.records import Stage1Claim, ThreadRecord
from codex_memories.state.store import MemoryStore
from tests.support.rollout_factory import write_rollout


class _CountingProvider:
    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def extract(self, request):
        self.calls += 1
        extraction = Stage1Extraction(rollout_summary="# Build\n", rollout_slug="build", raw_memory="- build with make -j8\n")
        return ExtractionResponse(extraction=extraction, usage=TokenUsage(), provider=self.name, model="m")


def repository(tmp_path: Path, switch: str | None) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "pkg" / "sub").mkdir(parents=True)
    if switch is not None:
        (root / REPOSITORY_SWITCH_FILE).write_text(switch, encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("switch", "mode", "extracts", "injects"),
    [
        (None, "on", True, True),
        ('memories = "on"\n', "on", True, True),
        ('memories = "off"\n', "off", False, False),
        ('memories = "user-only"\n', "user-only", False, True),
        ("# nothing said\n", "on", True, True),
        ('memories = "no"\n', "off", False, False),  # a value we do not know: the careful reading
        ("memories = \n", "off", False, False),  # not TOML
    ],
)
def test_the_switch_is_read_from_the_nearest_folder_up_to_the_repository_root(
    tmp_path: Path, switch: str | None, mode: str, extracts: bool, injects: bool
) -> None:
    root = repository(tmp_path, switch)
    found = repository_switch(root / "pkg" / "sub")
    assert (found.mode, found.extraction_allowed, found.injection_allowed) == (mode, extracts, injects)
    assert (found.path is not None) == (switch is not None)


def test_a_switch_above_the_repository_root_does_not_apply(tmp_path: Path) -> None:
    (tmp_path / REPOSITORY_SWITCH_FILE).write_text('memories = "off"\n', encoding="utf-8")
    root = repository(tmp_path, None)
    assert repository_switch(root / "pkg").mode == "on"


@pytest.mark.parametrize(("switch", "expected"), [('memories = "off"\n', Outcome.skipped_repository_opted_out),
                                                  ('memories = "user-only"\n', Outcome.skipped_repository_opted_out),
                                                  (None, Outcome.succeeded)])
def test_a_session_in_a_repository_that_opted_out_is_never_sent_to_the_model(tmp_path: Path, switch: str | None, expected: Outcome) -> None:
    root = repository(tmp_path, switch)
    rollout = write_rollout(tmp_path / "codex", created_at=datetime(2026, 11, 1, tzinfo=UTC), cwd=str(root), user_messages=["build it"])
    store = MemoryStore.open(f"sqlite:///{tmp_path / 'state.sqlite'}")
    try:
        store.upsert_threads([ThreadRecord(id="t1", rollout_path=str(rollout), created_at_ms=1, updated_at_ms=100_000, source="cli", cwd=str(root))])
        token = store.try_claim_stage1_job(thread_id="t1", worker_id="w", source_updated_at=100, lease_seconds=60, max_running_jobs=8).ownership_token
        claim = Stage1Claim(thread_id="t1", ownership_token=token, source_updated_at=100, rollout_path=str(rollout), cwd=str(root))
        provider = _CountingProvider()

        result = extract_memory(claim, provider, model="m", token_budget=10_000)
        outcome, reason = finalize_extraction(store, result, failed_expectations=[], retry_delay_seconds=60)

        assert outcome is expected
        if expected is Outcome.skipped_repository_opted_out:
            assert provider.calls == 0
            assert str(root / REPOSITORY_SWITCH_FILE) in (reason or "")
            assert store.get_job("memory_stage1", "t1").status == "done"  # not claimed again until the session changes
            assert store.get_stage1_output("t1") is None
        else:
            assert provider.calls == 1
    finally:
        store.close()
