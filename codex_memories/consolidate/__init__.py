"""Consolidate: phase 2's steps, the consolidators and the agent, the injection gate and the
provenance check, and review. The folder they work on (layout, git baseline, staged copies, the
synced inputs) is `codex_memories.memory_folder`."""
