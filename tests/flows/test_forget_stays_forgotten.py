"""Issue 36, item 4, through the real flows: a forget made with one state DB stays made when the
next run comes with a fresh one (a typo in the DB path, a new machine)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from codex_memories.memory_folder.identity import BindingOutcome, StateDbMismatch, check_memory_folder
from codex_memories.outcomes import Outcome
from codex_memories.runtime import close_stores, open_store
from codex_memories.storage import LocalMemoryRoot
from codex_memories_flows.forget import forget
from codex_memories_flows.phase1 import phase1
from tests.flows.test_selective_forget_and_rebuild import every_trace
from tests.support.memory_home import MemoryHome
from tests.support.rollout_factory import NO_REPOSITORY

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]


@dataclass
class FreshDbHome(MemoryHome):
    """The same Codex home and memory folder, another state DB path."""

    @property
    def db_url(self) -> str:
        return f"sqlite:///{self.root / 'typo-state.sqlite'}"


def test_a_fresh_state_db_is_refused_and_after_a_rebuild_nothing_forgotten_comes_back(tmp_path: Path) -> None:
    home = MemoryHome(tmp_path)
    (tmp_path / "secret-client").mkdir()
    home.rollout("from now on always use pnpm for installs (ZEBRA-417)", days_ago=2)
    # Outside any repository: the project is its folder (a session with a git origin is its origin's).
    home.rollout("remember that we keep tabs in Makefiles (OTTER-902)", days_ago=1, cwd=str(tmp_path / "secret-client"), repository_url=NO_REPOSITORY)
    home.rollout("remember that releases are tagged on Fridays (LYNX-311)", days_ago=1)
    assert home.phase1().claimed == 3
    assert home.phase2().outcome is Outcome.succeeded
    assert "OTTER-902" in home.memory_text()

    forget(route="text_match", target="zebra-417", overrides=home.overrides())
    forget(route="project_deletion", target=str(tmp_path / "secret-client"), overrides=home.overrides())
    assert home.phase2().outcome in (Outcome.succeeded, Outcome.succeeded_no_workspace_changes)
    assert "zebra" not in every_trace(home.memory_root) and "otter" not in every_trace(home.memory_root)
    close_stores()

    fresh = FreshDbHome(tmp_path)
    refused = phase1(overrides=fresh.overrides(ignore_age_windows=True, max_rollouts_per_startup=128), return_state=True)
    assert refused.is_failed()
    with pytest.raises(StateDbMismatch, match="never run"):
        check_memory_folder(open_store(fresh.db_url), LocalMemoryRoot(fresh.memory_root), rebuild=False, db_shown="the typo DB")

    # The user means it (`--rebuild-state`): every session is read again, and nothing forgotten returns.
    assert check_memory_folder(open_store(fresh.db_url), LocalMemoryRoot(fresh.memory_root), rebuild=True, db_shown="x") is BindingOutcome.rebound
    report = fresh.phase1()
    assert report.claimed == 2  # the forgotten project's session is never extracted again
    assert fresh.phase2().outcome in (Outcome.succeeded, Outcome.succeeded_no_workspace_changes)
    traces = every_trace(fresh.memory_root)
    assert "zebra" not in traces and "otter" not in traces
    assert "LYNX-311" in fresh.memory_text()
    close_stores()
