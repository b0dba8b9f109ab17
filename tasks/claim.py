"""Tasks: claim phase-1 jobs (`MemoryStore.claim_stage1_jobs_for_startup`, spec 1.4), and take
them back in a retried flow run (`MemoryStore.resume_stage1_claims`).

Input: the run's configuration (windows, per-run cap, lease). Output: the claims, persisted per
flow run (`RUN_ID` cache), so a retried flow run gets its claims back instead of claiming again;
`resume_claims` then makes them this attempt's (a job the earlier attempt failed is taken again
under a new token, so its extraction runs again instead of being read back). Side effect:
`jobs` rows leased to this worker.
"""

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager

from prefect import task
from prefect.cache_policies import RUN_ID
from prefect.context import get_run_context

from codex_memories.runtime import open_store
from codex_memories.settings import INTERACTIVE_SESSION_SOURCES, RuntimeConfig
from codex_memories.state.records import Stage1Claim, Stage1ClaimResume


def worker_id() -> str:
    """Who holds a lease: host, process and the flow run, for people reading the jobs table."""
    context = get_run_context()
    flow_run = getattr(context, "flow_run", None) or getattr(getattr(context, "task_run", None), "flow_run_id", None)
    run_id = getattr(flow_run, "id", flow_run)
    return f"{socket.gethostname()}:{os.getpid()}:{run_id}"


# Cached per flow run: retrying the same flow run reuses its claims (same ownership tokens,
# leases still held) instead of finding them "running" and doing nothing.
@task(name="claim-stage1-jobs", cache_policy=RUN_ID, persist_result=True)
def claim_stage1_jobs(config: RuntimeConfig) -> list[Stage1Claim]:
    memories, settings = config.memories, config.settings
    windows_apply = not settings.ignore_age_windows
    return open_store(settings.resolved_db_url).claim_stage1_jobs_for_startup(
        worker_id=worker_id(),
        current_thread_id=None,
        scan_limit=settings.scan_limit,
        max_claimed=memories.max_rollouts_per_startup,
        max_age_days=memories.max_rollout_age_days if windows_apply else None,
        min_rollout_idle_hours=memories.min_rollout_idle_hours if windows_apply else None,
        allowed_sources=list(INTERACTIVE_SESSION_SOURCES),
        lease_seconds=settings.stage1_lease_seconds,
    )


@task(name="resume-claims", cache_policy=None)
def resume_claims(config: RuntimeConfig, claims: list[Stage1Claim]) -> list[Stage1ClaimResume]:
    """A retried flow run's claims, taken back (same order; `claim` None: not claimable now)."""
    settings = config.settings
    return open_store(settings.resolved_db_url).resume_stage1_claims(
        claims,
        worker_id=worker_id(),
        lease_seconds=settings.stage1_lease_seconds,
        max_running_jobs=max(len(claims), config.memories.max_rollouts_per_startup),
    )


@contextmanager
def given_back_if_interrupted(config: RuntimeConfig, claims: list[Stage1Claim]) -> Iterator[None]:
    """Claims not finalized when the run is interrupted (Ctrl-C, SIGTERM) go back at once, so the
    next run takes them without waiting for the lease (the answers that arrived stay stored).
    Not a task: no task run can start while the flow run is torn down; a finalized claim is not
    touched (`release_stage1_claims` matches only jobs still running under the token)."""
    try:
        yield
    except BaseException as error:
        if not isinstance(error, Exception):  # an interruption, Prefect's termination signal, an exit
            open_store(config.settings.resolved_db_url).release_stage1_claims(
                [(claim.thread_id, claim.ownership_token) for claim in claims]
            )
        raise
