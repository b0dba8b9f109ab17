"""`status` in words (issue 30): the last consolidation as a sentence with local dates, for every
state the global phase-2 job can be in; never an epoch time, a worker id or a token."""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from codex_memories.state.records import JobRecord
from codex_memories_cli.views import consolidation_sentence, when

NOW = datetime(2026, 12, 4, 12, 0).astimezone()
T = int(NOW.timestamp())
HOUR = 3600


def job(**values) -> JobRecord:
    base = {"kind": "memory_consolidate_global", "job_key": "global", "status": "done", "retry_remaining": 3,
            "worker_id": "worker-7f3a", "ownership_token": "tok-91c2"}
    return JobRecord(**{**base, **values})


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (None, "not run yet"),
        (job(status="pending", input_watermark=4), "not run yet"),
        (job(status="running", started_at=T - 60, lease_until=T + 600), f"running since {when(T - 60)}"),
        (job(status="running", started_at=T - 2 * HOUR, lease_until=T - HOUR), f"interrupted (started {when(T - 2 * HOUR)}); the next run takes it over"),
        (job(status="error", finished_at=T - HOUR, last_error="failed_agent", retry_at=T + HOUR),
         f"last attempt {when(T - HOUR)} ended failed agent; the next attempt after {when(T + HOUR)}"),
        (job(status="error", finished_at=T - HOUR, last_error="failed_invalid_artifacts: memory_summary.md missing [settings 0123456789ab]"),
         f"last attempt {when(T - HOUR)} ended failed invalid artifacts: memory_summary.md missing"),
        (job(finished_at=T - HOUR), f"last {when(T - HOUR)}; the next not before {when(T + 5 * HOUR)} (cooldown; `codex-memories phase2 --force` skips it)"),
        (job(finished_at=T - 7 * HOUR), f"last {when(T - 7 * HOUR)}"),
        (job(status="pending", finished_at=T - 7 * HOUR, input_watermark=5, last_success_watermark=4), f"last {when(T - 7 * HOUR)}; new memories wait for it"),
        (job(status="pending", input_watermark=5, last_success_watermark=4), "new memories arrived during the last one; the next run consolidates them"),
    ],
    ids=["none", "enqueued", "running", "interrupted", "failed", "failed-naming-a-file", "cooldown", "ready", "dirty", "dirty-after-success"],
)
def test_the_last_consolidation_reads_as_a_sentence(record: JobRecord | None, expected: str) -> None:
    sentence = consolidation_sentence(record, 6 * HOUR, now=NOW)

    assert sentence == expected
    assert not re.search(r"\b1\d{9}\b", sentence) and "worker" not in sentence and "tok-" not in sentence
