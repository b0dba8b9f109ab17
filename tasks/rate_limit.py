from prefect import get_run_logger, task

from codex_memories.llm.rate_limits import GuardDecision
from codex_memories.runtime import Phase2Context, open_store, rate_limit_guard
from codex_memories.settings import RuntimeConfig
from codex_memories.state.records import Stage1Claim


@task(name="check-rate-limits", cache_policy=None)
def check_rate_limits(config: RuntimeConfig) -> GuardDecision:
    """Spec 1.3: the freshest rate-limit signal against `min_rate_limit_remaining_percent`."""
    decision = rate_limit_guard(config)
    if not decision.allowed:
        get_run_logger().warning("skipped_rate_limited: %s", decision.reason)
    return decision


@task(name="release-claims", cache_policy=None)
def release_claims(config: RuntimeConfig, claims: list[Stage1Claim]) -> int:
    """Give back claims that were never sent to the model: not failed, claimable next run."""
    released = open_store(config.settings.resolved_db_url).release_stage1_claims(
        [(claim.thread_id, claim.ownership_token) for claim in claims]
    )
    get_run_logger().info("released %d of %d unsent claim(s) (rate limited)", released, len(claims))
    return released


@task(name="release-phase2-lease", cache_policy=None)
def release_phase2_lease(context: Phase2Context) -> bool:
    """Give back the global lease without running the agent: no failure, no backoff, no cooldown."""
    return context.store.release_global_phase2_job(ownership_token=context.lease.ownership_token)
