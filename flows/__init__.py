"""Prefect flows: orchestration only, each reads as numbered task calls (installed as `codex_memories_flows`)."""

from codex_memories_flows.log_filters import install_run_log_filters

install_run_log_filters()
