"""Phase 2's two pieces of Prefect plumbing: a stage runner that turns a task's error into the
stage's outcome code, and the Prefect side of the singleton (a one-slot global concurrency limit).

Orchestration only (flows layer): the DB's global lease still decides who consolidates; the slot
is how Prefect agrees. The flow creates the limit (1 slot) when it is missing and holds its slot
under a short lease, so a killed holder's slot is freed by the server once the lease runs out. A
slot that cannot be had within a few seconds (another run holds it, or a killed holder leaked it
where no server expires leases) never makes a run hang: the run goes on and the DB lease decides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import httpx
from prefect import get_client, get_run_logger
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
from prefect.concurrency.sync import concurrency
from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

from codex_memories.consolidate.steps import Phase2Failure
from codex_memories.disk_full import LIVE_FOLDER_UNTOUCHED, disk_full_cause, disk_full_line
from codex_memories.outcomes import Outcome
from codex_memories.redact import redact_secrets

PREFECT_SLOT_NAME = "codex-memories-phase2"
PREFECT_SLOT_WAIT_SECONDS = 5.0
# The shortest lease the server accepts; renewed while the run holds the slot.
PREFECT_SLOT_LEASE_SECONDS = 60.0

T = TypeVar("T")


# Only the publish (the last stage) writes the live folder; every earlier stage writes the copy.
_FULL_AT_PUBLISH = (
    "the live memory folder was not replaced (a memory root that is itself a mount point is "
    "published file by file, and may then hold part of the new copy)"
)


def stage_step(outcome: Outcome, task: Callable[..., T], *args: Any) -> T:
    """Run one stage task; any error it raises becomes this stage's own outcome code (a full
    disk as one plain line that says what it means for the memory folder)."""
    try:
        return task(*args)
    except Phase2Failure:
        raise
    except Exception as error:  # noqa: BLE001 - every failure site maps to its outcome code
        cause = disk_full_cause(error)
        if cause is None:
            reason = f"{type(error).__name__}: {error}"
        else:
            consequence = _FULL_AT_PUBLISH if outcome is Outcome.failed_workspace_commit else LIVE_FOLDER_UNTOUCHED
            reason = disk_full_line(cause, "", consequence)
        failure = Phase2Failure(outcome, reason)
        get_run_logger().error("%s: %s", outcome.value, redact_secrets(failure.reason))
        raise failure from error


@contextmanager
def prefect_singleton_slot() -> Iterator[None]:
    ensure_prefect_singleton_limit()
    acquired = False
    try:
        with concurrency(
            PREFECT_SLOT_NAME,
            occupy=1,
            timeout_seconds=PREFECT_SLOT_WAIT_SECONDS,
            lease_duration=PREFECT_SLOT_LEASE_SECONDS,
            strict=False,
        ):
            acquired = True
            yield
    except TimeoutError:
        if acquired:
            raise  # raised by the body, not by the slot wait
        get_run_logger().warning(
            "Prefect slot %s is held (another run, or a leaked slot); the DB lease decides", PREFECT_SLOT_NAME
        )
        yield


def ensure_prefect_singleton_limit() -> None:
    """Create the one-slot global limit if it is missing. Never a precondition of the run: if the
    API cannot be reached, the slot wait below skips or times out and the DB lease decides."""
    try:
        with get_client(sync_client=True) as client:
            try:
                client.read_global_concurrency_limit_by_name(PREFECT_SLOT_NAME)
            except ObjectNotFound:
                client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=PREFECT_SLOT_NAME, limit=1))
    except ObjectAlreadyExists:
        return  # a concurrent run created it first
    except (httpx.HTTPError, OSError) as error:
        get_run_logger().warning(
            "could not create the Prefect limit %s (%s); the DB lease decides", PREFECT_SLOT_NAME, error
        )
