"""codex-memories: long-term memory for coding agents, built from Codex rollouts."""
