"""`status` accounts for every session it has seen (issue 35): extracted, or left out with the
reason (too recent, too old, `codex exec` and sub-agents, archived, memory off, ...)."""

from __future__ import annotations

from codex_memories.settings import INTERACTIVE_SESSION_SOURCES
from codex_memories.state import MemoryStore
from codex_memories_cli.views import coverage_lines
from tests.state.support import DAY, HOUR, NOW, claim, claim_and_succeed, execute_sql, fixed_id, make_thread


def test_every_session_seen_is_counted_once_under_the_first_reason_that_applies(store: MemoryStore) -> None:
    old = (NOW - 40 * DAY) * 1000
    idle = (NOW - 8 * HOUR) * 1000
    recent = (NOW - HOUR) * 1000
    threads = [
        make_thread(fixed_id(1), updated_at_ms=idle),  # extracted
        make_thread(fixed_id(2), updated_at_ms=idle),  # read, nothing kept
        make_thread(fixed_id(3), updated_at_ms=idle),  # failed
        make_thread(fixed_id(4), updated_at_ms=idle),  # waiting
        make_thread(fixed_id(5), updated_at_ms=recent),  # too recent
        make_thread(fixed_id(6), updated_at_ms=old),  # too old
        make_thread(fixed_id(7), updated_at_ms=idle, source="exec"),
        make_thread(fixed_id(8), updated_at_ms=idle, source="subagent"),
        make_thread(fixed_id(9), updated_at_ms=idle, source="exec"),
        make_thread(fixed_id(10), updated_at_ms=idle, archived=True),
        make_thread(fixed_id(11), updated_at_ms=idle, first_user_message=""),
        make_thread(fixed_id(12), updated_at_ms=recent, source="exec"),  # not interactive wins over too recent
    ]
    store.upsert_threads(threads)
    claim_and_succeed(store, fixed_id(1), idle // 1000)
    nothing = claim(store, fixed_id(2), idle // 1000)
    assert store.mark_stage1_job_succeeded_no_output(thread_id=fixed_id(2), ownership_token=nothing.ownership_token)
    failed = claim(store, fixed_id(3), idle // 1000)
    assert store.mark_stage1_job_failed(thread_id=fixed_id(3), ownership_token=failed.ownership_token, reason="failed_model", retry_delay_seconds=600)
    execute_sql(store, "UPDATE threads SET memory_mode = 'disabled' WHERE id = :id", id=fixed_id(4))
    store.upsert_threads([make_thread(fixed_id(13), updated_at_ms=idle)])

    coverage = store.session_coverage(interactive_sources=INTERACTIVE_SESSION_SOURCES, min_rollout_idle_hours=6, max_rollout_age_days=30)

    assert coverage.seen == 13
    assert coverage.by_reason == {
        "extracted": 1, "nothing_to_keep": 1, "failed": 1, "memory_disabled": 1, "too_recent": 1, "too_old": 1,
        "not_interactive": 4, "archived": 1, "no_user_message": 1, "waiting": 1,
    }
    assert coverage.not_interactive_by_source == {"exec": 3, "subagent": 1}
    assert sum(coverage.by_reason.values()) == coverage.seen


def test_without_the_windows_an_old_or_recent_session_waits_for_the_next_run(store: MemoryStore) -> None:
    store.upsert_threads([make_thread(fixed_id(1), updated_at_ms=(NOW - 40 * DAY) * 1000), make_thread(fixed_id(2), updated_at_ms=NOW * 1000)])

    coverage = store.session_coverage(interactive_sources=INTERACTIVE_SESSION_SOURCES, min_rollout_idle_hours=None, max_rollout_age_days=None)

    assert coverage.by_reason == {"waiting": 2}


def test_status_says_the_coverage_in_words(store: MemoryStore) -> None:
    idle = (NOW - 8 * HOUR) * 1000
    store.upsert_threads([
        make_thread(fixed_id(1), updated_at_ms=idle), make_thread(fixed_id(2), updated_at_ms=(NOW - HOUR) * 1000),
        make_thread(fixed_id(3), updated_at_ms=idle, source="exec"), make_thread(fixed_id(4), updated_at_ms=idle, source="subagent"),
    ])
    claim_and_succeed(store, fixed_id(1), idle // 1000)

    lines = coverage_lines(store.session_coverage(interactive_sources=INTERACTIVE_SESSION_SOURCES, min_rollout_idle_hours=6, max_rollout_age_days=30))

    text = "\n".join(lines)
    assert lines[0].startswith("Coverage:       1 of 4 extracted")
    assert "1 idle for less than 6 h (a later run takes them)" in text
    assert "1 from `codex exec`" in text and "1 of sub-agents" in text
    assert "older than" not in text  # nothing is: no line for a reason with no session
