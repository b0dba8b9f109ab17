"""Prefect flows: orchestration only, each reads as numbered task calls (installed as `codex_memories_flows`)."""
