"""Pure start decisions: may this run do any work? (No I/O: the caller feeds the config.)"""

from __future__ import annotations

from codex_memories.outcomes import Outcome
from codex_memories.settings import CodexMemoriesConfig


def phase1_gate(memories: CodexMemoriesConfig) -> Outcome | None:
    """None when phase 1 may run, else the skip outcome that explains why not."""
    if not memories.feature_enabled:
        return Outcome.skipped_feature_disabled
    if not memories.generate_memories:
        return Outcome.skipped_generation_disabled
    return None
