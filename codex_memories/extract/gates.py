"""Pure start decisions: may this run do any work? (No I/O: the caller feeds the config.)

Generation is ours: phase 1 no longer asks Codex's `[features] memories`, which must stay off
(with it on, Codex's own pipeline rewrites the memory folder at every session start, issue 10).
`generate_memories` is our setting (`CODEX_MEMORIES_GENERATE_MEMORIES`, our TOML file), falling
back to Codex's `[memories] generate_memories` (read only, default true) when we do not set it.
"""

from __future__ import annotations

from codex_memories.outcomes import Outcome
from codex_memories.settings import CodexMemoriesConfig


def phase1_gate(memories: CodexMemoriesConfig) -> Outcome | None:
    """None when phase 1 may run, else the skip outcome that explains why not."""
    if not memories.generate_memories:
        return Outcome.skipped_generation_disabled
    return None
