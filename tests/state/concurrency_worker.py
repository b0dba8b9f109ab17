"""Worker processes for test_concurrency.py (a plain module so `spawn` can import it)."""

from __future__ import annotations

import time

from codex_memories.state import JobKind, MemoryStore


def open_store(url: str, start_at: float) -> int:
    """Open (and so migrate) the store at the same moment as the other workers."""
    _sleep_until(start_at)
    store = MemoryStore.open(url)
    try:
        return store.status_summary().stage1_outputs
    finally:
        store.close()


def claim_until_done(
    url: str, worker_id: str, total: int, start_at: float, deadline_seconds: float
) -> list[str]:
    """Claim and finish stage-1 jobs until all `total` threads are done; return what we claimed."""
    store = MemoryStore.open(url)
    claimed: list[str] = []
    try:
        _sleep_until(start_at)
        deadline = time.monotonic() + deadline_seconds
        while True:
            claims = store.claim_stage1_jobs_for_startup(
                worker_id=worker_id,
                current_thread_id=None,
                scan_limit=5000,
                max_claimed=64,
                max_age_days=None,
                min_rollout_idle_hours=None,
                allowed_sources=["cli"],
            )
            for claim in claims:
                claimed.append(claim.thread_id)
                finished = store.mark_stage1_job_succeeded(
                    thread_id=claim.thread_id,
                    ownership_token=claim.ownership_token,
                    source_updated_at=claim.source_updated_at,
                    raw_memory=f"raw {claim.thread_id}",
                    rollout_summary=f"summary by {worker_id}",
                    rollout_slug=None,
                )
                if not finished:
                    raise RuntimeError(f"{worker_id} lost ownership of {claim.thread_id}")
            if claims:
                continue
            jobs = store.status_summary().jobs_by_kind_and_status
            if jobs.get(JobKind.stage1.value, {}).get("done", 0) >= total:
                return claimed
            if time.monotonic() > deadline:
                raise TimeoutError(f"{worker_id}: work left after {deadline_seconds}s: {jobs}")
            time.sleep(0.05)
    finally:
        store.close()


def _sleep_until(start_at: float) -> None:
    delay = start_at - time.time()
    if delay > 0:
        time.sleep(delay)


def run_pipeline(
    codex_home: str,
    db_url: str,
    memory_root: str,
    prefect_home: str,
    extraction_delay: float,
    extracted_log: str,
    start_at: float,
) -> int:
    """`codex-memories run` (phase 1 then phase 2, offline provider) in this process.

    Each heuristic extraction takes `extraction_delay` seconds (as a model call would) and
    appends its thread id to `extracted_log`, so the test can tell who extracted what. Prefect
    runs its own temporary server under `prefect_home`. Returns the command's exit code."""
    import os

    os.environ["PREFECT_HOME"] = prefect_home
    os.environ.pop("PREFECT_API_URL", None)
    for name in list(os.environ):
        if name.startswith("CODEX_MEMORIES_") or name in {"OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME"}:
            del os.environ[name]

    from codex_memories.extract.heuristic import HeuristicProvider
    from codex_memories_cli.main import app

    original_extract = HeuristicProvider.extract

    def slow_extract(self, request):
        time.sleep(extraction_delay)
        with open(extracted_log, "a", encoding="utf-8") as log:
            log.write(request.thread_id + "\n")
        return original_extract(self, request)

    HeuristicProvider.extract = slow_extract
    arguments = [
        "run", "--codex-home", codex_home, "--db", db_url, "--memory-root", memory_root,
        "--provider", "heuristic", "--max-rollouts", "64", "--ignore-age-windows", "--concurrency", "4",
    ]
    _sleep_until(start_at)
    try:
        app(arguments, standalone_mode=False)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    finally:
        _stop_temporary_prefect_servers()
    return 0


def _stop_temporary_prefect_servers() -> None:
    """A pool worker ends without running atexit handlers, and that is where Prefect stops the
    temporary server it started for this process's flow runs: without this it outlived the test."""
    from prefect.server.api.server import SubprocessASGIServer

    for server in list(SubprocessASGIServer._instances.values()):
        server.stop()
