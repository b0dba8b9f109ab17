"""Prefect flows: orchestration only, each reads as numbered task calls (installed as `codex_memories_flows`)."""

from codex_memories_flows.log_filters import install_disk_full_filter

install_disk_full_filter()
