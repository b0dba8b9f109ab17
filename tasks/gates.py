"""Task: phase 1 step 1, may this run do any work (`codex_memories.extract.gates`)?

Output: None to go on, or the skip outcome. Pure decision over the configuration.
"""

from prefect import get_run_logger, task

from codex_memories.extract.gates import phase1_gate
from codex_memories.outcomes import Outcome
from codex_memories.settings import RuntimeConfig


@task(name="check-phase1-gates", cache_policy=None)
def check_phase1_gates(config: RuntimeConfig) -> Outcome | None:
    gate = phase1_gate(config.memories)
    if gate is not None:
        get_run_logger().info("%s: generate_memories is false (CODEX_MEMORIES_GENERATE_MEMORIES, else [memories] in Codex's config.toml)", gate.value)
    return gate
