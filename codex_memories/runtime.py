"""The composition root: turns a RuntimeConfig into the real store and model provider.

Stores are shared per DB URL within a process: opening one creates the engine and runs the
migrations, which every task of a run would otherwise repeat. Extraction providers are shared
per configuration for the same reason: building an OpenAI client costs ~34 ms of CPU and a
connection pool, and the client is thread-safe (measured: one client per extraction cost the
phase-1 map 0.13 of its efficiency, benchmarks/README.md).
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from codex_memories.settings import RuntimeConfig, forget_codex_login_probes

if TYPE_CHECKING:
    from codex_memories.consolidate.consolidators import Consolidator
    from codex_memories.consolidate.steps import Phase2Lease
    from codex_memories.llm.base import ExtractionProvider
    from codex_memories.llm.codex_runner import CodexRunner
    from codex_memories.llm.rate_limits import GuardDecision, RateLimitSnapshot
    from codex_memories.state.store import MemoryStore
    from codex_memories.storage import LocalWorkspace, MemoryRoot

# What each function builds is imported inside it: the CLI's quick commands and the hooks import
# this module without paying for SQLAlchemy, the openai client or fsspec they do not use.

_stores: dict[str, MemoryStore] = {}
_stores_lock = threading.Lock()
_providers: dict[tuple[object, ...], ExtractionProvider] = {}
_providers_lock = threading.Lock()


def open_store(db_url: str) -> MemoryStore:
    from codex_memories.state.store import MemoryStore

    with _stores_lock:
        store = _stores.get(db_url)
        if store is None:
            store = MemoryStore.open(db_url)
            _stores[db_url] = store
        return store


@contextmanager
def read_only_store(db_url: str) -> Iterator[MemoryStore | None]:
    """The state DB for a command that only looks (`MemoryStore.open_read_only`): None when no run
    has made it yet; nothing is created, migrated or written. Not shared: closed on leaving."""
    from codex_memories.state.store import MemoryStore

    store = MemoryStore.open_read_only(db_url)
    try:
        yield store
    finally:
        if store is not None:
            store.close()


def close_stores() -> None:
    with _stores_lock:
        for store in _stores.values():
            store.close()
        _stores.clear()


def forget_run_state() -> None:
    """Start the next run of a long-lived process (`codex-memories serve`'s hand-off runs) as a
    fresh process would: no open store (a state DB deleted meanwhile must not be written through
    an old connection), no built provider (it remembers the last run's rate-limit headers), no
    memoised Codex login probe. What stays is only what costs time and decides nothing: imports,
    tokenizers, the transcript worker."""
    close_stores()
    with _providers_lock:
        _providers.clear()
    forget_codex_login_probes()


def rate_limit_guard(config: RuntimeConfig) -> GuardDecision:
    """Spec 1.3 for every provider, the full way: our last response's headers against the newest
    rollout snapshot, rescanned now."""
    from codex_memories.ingest.rate_limits import newest_rollout_snapshot

    return rate_limit_decision(config, newest_rollout_snapshot(config.settings.codex_home_path))


def rate_limit_decision(config: RuntimeConfig, rollout_snapshot: RateLimitSnapshot | None) -> GuardDecision:
    """Spec 1.3 with a rollout snapshot read earlier (None: the rollouts had none): the freshest of
    it and our last response's headers (the provider keeps them) decides. No file is read, so the
    guard between extraction waves can ask at every freed slot."""
    from codex_memories.llm.rate_limits import GuardDecision, decide

    minimum = config.memories.min_rate_limit_remaining_percent
    if config.provider_name == "heuristic":
        return GuardDecision(True, "the heuristic provider spends no model quota", minimum)
    provider = extraction_provider(config)
    own = provider.last_rate_limits() if hasattr(provider, "last_rate_limits") else None
    return decide([own, rollout_snapshot], minimum, time.time())


def memory_root(config: RuntimeConfig) -> MemoryRoot:
    """The configured memory folder: a local path, or an object store with our endpoint."""
    from codex_memories.storage import object_store_options, open_memory_root

    url = config.settings.resolved_memory_root
    return open_memory_root(url, **object_store_options(url, s3_endpoint_url=config.settings.s3_endpoint_url))


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Phase2Context:
    """What every phase-2 task of one pass works with, built once when the lease is held: the
    store, the memory root and the workspace the pass writes (never the live folder readers
    read), the clock and the lease. Tasks take it instead of rebuilding these from the config."""

    config: RuntimeConfig
    store: MemoryStore
    root: MemoryRoot
    workspace: LocalWorkspace
    lease: Phase2Lease
    # Whether this pass rebuilds the folder from scratch instead of consolidating on top of it.
    from_scratch: bool = False
    now: Callable[[], datetime] = utc_now


@contextmanager
def phase2_context(config: RuntimeConfig, lease: Phase2Lease, *, from_scratch: bool = False) -> Iterator[Phase2Context]:
    """The pass's context; on the way out, whatever the pass did not publish (a failed, refused or
    settled pass's copy) is discarded, so the live folder is the one it found.

    Readers read the live folder at any time, so phase 2 writes a copy and publishes it in one
    step: a staging copy beside a local root (`StagedWorkspace`, made only once a step is about to
    write), or a temporary local mirror of an object-store root."""
    from codex_memories.memory_folder.staging import StagedWorkspace
    from codex_memories.storage import LocalWorkspace

    store = open_store(config.settings.resolved_db_url)
    root = memory_root(config)
    mirror = None if root.local_path is not None else Path(tempfile.mkdtemp(prefix="codex-memories-workspace-"))
    workspace = (
        StagedWorkspace(root, lease.ownership_token, from_scratch=from_scratch)
        if mirror is None
        else LocalWorkspace(root, mirror)
    )
    try:
        yield Phase2Context(
            config=config,
            store=store,
            root=root,
            workspace=workspace,
            lease=lease,
            from_scratch=from_scratch,
        )
    finally:
        workspace.discard()
        if mirror is not None:
            # The object store holds the result (or the next run starts over): the local mirror
            # of this pass is only a temporary copy.
            shutil.rmtree(mirror, ignore_errors=True)


def codex_runner(config: RuntimeConfig) -> CodexRunner:
    """The user's Codex CLI with their own home (their login, their model provider)."""
    from codex_memories.llm.codex_runner import CodexRunner, find_codex_binary

    settings = config.settings
    binary = find_codex_binary(settings.codex_binary)
    if binary is None:
        raise ValueError("the codex provider needs the Codex CLI: none on PATH (set codex_binary)")
    return CodexRunner(binary=binary, codex_home=settings.codex_home_path)


def extraction_provider(config: RuntimeConfig) -> ExtractionProvider:
    from codex_memories.llm import CODEX_PROVIDER, HEURISTIC_PROVIDER, build_extraction_provider

    settings = config.settings
    if config.provider_name == HEURISTIC_PROVIDER:
        from codex_memories.extract.heuristic import HeuristicProvider

        with _providers_lock:
            provider = _providers.get((HEURISTIC_PROVIDER,))
            if provider is None:
                provider = _providers[(HEURISTIC_PROVIDER,)] = HeuristicProvider()
            return provider
    if config.provider_name == CODEX_PROVIDER:
        from codex_memories.llm.codex_provider import CodexExtractionProvider

        key = (CODEX_PROVIDER, settings.codex_binary, str(settings.codex_home_path), config.extract_model_explicit,
               settings.model_timeout_seconds, settings.reasoning_effort)
        with _providers_lock:
            provider = _providers.get(key)
            if provider is None:
                provider = CodexExtractionProvider(
                    codex_runner(config),
                    model=config.extract_model_explicit,
                    timeout_seconds=settings.model_timeout_seconds,
                    reasoning_effort=settings.reasoning_effort,
                )
                _providers[key] = provider
            return provider
    options = {
        "api_key": settings.api_key,
        "base_url": settings.base_url,
        "model": config.extract_model,
        "api_mode": settings.api_mode,
        "timeout_seconds": settings.model_timeout_seconds,
        "reasoning_effort": settings.reasoning_effort,
    }
    secret = settings.api_key.get_secret_value() if settings.api_key else None
    key = (config.provider_name, secret, *(value for name, value in options.items() if name != "api_key"))
    with _providers_lock:
        provider = _providers.get(key)
        if provider is None:
            provider = build_extraction_provider(config.provider_name, **options)
            _providers[key] = provider
        return provider


def consolidator(config: RuntimeConfig) -> Consolidator:
    """The heuristic consolidator offline; the user's Codex for codex; our sandboxed agent for openai."""
    if config.provider_name == "heuristic":
        from codex_memories.consolidate.heuristic import HeuristicConsolidator

        return HeuristicConsolidator()
    from openai import OpenAI

    from codex_memories.consolidate.consolidators import AgentConsolidator
    from codex_memories.llm import CODEX_PROVIDER

    settings = config.settings
    if config.provider_name == CODEX_PROVIDER:
        from codex_memories.consolidate.codex_consolidator import CodexConsolidator

        return CodexConsolidator(
            codex_runner(config),
            model=config.consolidation_model_explicit,
            sandbox=settings.codex_sandbox,
            max_steps=settings.agent_max_steps,
            max_total_tokens=settings.agent_max_tokens,
            timeout_seconds=settings.agent_timeout_seconds,
            codex_home=settings.codex_home_path,
        )
    client = OpenAI(
        api_key=settings.api_key.get_secret_value() if settings.api_key else "not-needed",
        base_url=settings.base_url,
        timeout=settings.model_timeout_seconds,
        max_retries=0,
    )
    return AgentConsolidator(
        client=client,
        model=config.consolidation_model,
        api_mode=settings.api_mode,
        max_steps=settings.agent_max_steps,
        max_total_tokens=settings.agent_max_tokens,
        timeout_seconds=settings.agent_timeout_seconds,
    )
