"""Prefect tasks: one module per stage, each a thin `@task` over one library call (installed as `codex_memories_tasks`)."""
