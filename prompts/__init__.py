"""Our prompt templates (Markdown with `{{ name }}` placeholders), rendered by `codex_memories.prompts`; installed as `codex_memories_prompts`."""
