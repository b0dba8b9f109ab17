"""Transcripts built ahead of the extraction map: the same transcript as built in the task,
bounded look-ahead, and a file that cannot be read left to the task (which reports it)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

from codex_memories.extract.prefetch import TranscriptPrefetch
from codex_memories.ingest.transcript import build_memory_transcript
from codex_memories.state.records import Stage1Claim
from tests.support.rollout_factory import write_rollout

WHEN = datetime(2026, 11, 1, tzinfo=UTC)


class CountingExecutor(ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.submitted = 0

    def submit(self, *args, **kwargs):
        self.submitted += 1
        return super().submit(*args, **kwargs)


def test_prefetched_transcripts_equal_the_task_built_ones_and_stay_bounded(tmp_path):
    claims = []
    for index in range(6):
        path = write_rollout(tmp_path, created_at=WHEN + timedelta(minutes=index), user_messages=[f"task {index}"], tool_calls=[("ls", f"out {index}", 0)])
        claims.append(Stage1Claim(thread_id=f"t{index}", ownership_token=f"o{index}", source_updated_at=1, rollout_path=str(path)))
    missing = Stage1Claim(thread_id="gone", ownership_token="og", source_updated_at=1, rollout_path=str(tmp_path / "gone.jsonl"))
    executor = CountingExecutor()
    prefetch = TranscriptPrefetch([*claims, missing], token_budget=5_000, ahead=2, executor=executor)
    assert executor.submitted == 2  # no more than `ahead` built and not taken
    for claim in claims:
        transcript = prefetch.take(claim)
        assert transcript is not None
        assert transcript.text == build_memory_transcript(Path(claim.rollout_path), token_budget=5_000).text
    assert prefetch.take(missing) is None  # the task builds it and reports the unreadable file
    assert executor.submitted == 7
    executor.shutdown()


def test_the_quality_check_in_the_worker_process_gives_the_same_report(monkeypatch):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from codex_memories.extract import prefetch
    from codex_memories.extract.quality import check_extraction_batch
    from tests.extract.test_quality import CRAFTED_FAILURES, good

    rows = [good("t-ok"), *CRAFTED_FAILURES.values()]
    worker = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
    monkeypatch.setattr(prefetch, "_pool", worker)
    try:
        prefetch.prepare_quality_check()
        in_worker = prefetch.run_quality_check(rows)
    finally:
        worker.shutdown()
    assert in_worker == check_extraction_batch(rows)
    assert not in_worker.success


def test_a_broken_worker_process_never_loses_the_quality_check(monkeypatch):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from codex_memories.extract import prefetch
    from tests.extract.test_quality import good

    worker = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
    worker.shutdown()  # submit now raises: the check runs in this thread
    monkeypatch.setattr(prefetch, "_pool", worker)
    prefetch.prepare_quality_check()
    report = prefetch.run_quality_check([good("t-ok")])
    assert report.success and [row.thread_id for row in report.rows] == ["t-ok"]


def test_a_daemonic_process_builds_transcripts_in_a_thread_even_with_a_core_to_spare(monkeypatch):
    import multiprocessing

    from codex_memories.extract import prefetch

    monkeypatch.setattr(prefetch, "_pool", None)
    monkeypatch.setattr(prefetch, "_thread", None)
    monkeypatch.setattr(prefetch, "spare_cores", lambda: 2.0)
    monkeypatch.setattr(multiprocessing.current_process(), "daemon", True)  # as in a Pool worker
    executor = prefetch.transcript_pool()
    try:
        assert isinstance(executor, ThreadPoolExecutor)  # a daemonic process may not start children
        assert prefetch._pool is None
    finally:
        executor.shutdown()


def test_a_long_rollout_discovery_read_is_built_ahead_from_its_kept_lines_in_a_worker_process(tmp_path):
    """Discovery's index of a long rollout reaches the transcript worker (a spawned process, as
    in a phase-1 run with a spare core) under the path the thread record carries, is used there,
    and gives the transcript the whole file gives."""
    import dataclasses
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from codex_memories.ingest.discovery import discover_rollouts
    from codex_memories.ingest.rollout_reader import LineStats
    from codex_memories.state.store import MemoryStore
    from tests.support.rollout_factory import write_large_rollout

    home = tmp_path / "home"
    long_path = home / "sessions" / "2026" / "11" / "03" / "rollout-2026-11-03T09-00-00-019a4a00-0000-7000-8000-000000000001.jsonl"
    write_large_rollout(long_path, 1_500_000, seed=4)
    write_rollout(home, created_at=WHEN, user_messages=["short one"])
    store = MemoryStore.open(f"sqlite:///{tmp_path / 'state.sqlite'}")
    try:
        report = discover_rollouts(store, home, generate_memories=True, disable_on_external_context=False, now_ms=0)
        recorded = {store.get_thread(thread_id).rollout_path for thread_id in report.thread_ids}
    finally:
        store.close()
    kept_lines = report.kept_lines()
    assert set(kept_lines) == {str(long_path)} and str(long_path) in recorded
    # A marker in the index's line counts shows the worker built from the index, not the file.
    marked = {str(long_path): dataclasses.replace(kept_lines[str(long_path)], stats=LineStats(lines_total=-1))}
    claim = Stage1Claim(thread_id="long", ownership_token="o-long", source_updated_at=1, rollout_path=str(long_path))
    worker = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
    try:
        built = TranscriptPrefetch([claim], token_budget=20_000, ahead=1, executor=worker, kept_lines=kept_lines).take(claim)
        from_marked = TranscriptPrefetch([claim], token_budget=20_000, ahead=1, executor=worker, kept_lines=marked).take(claim)
    finally:
        worker.shutdown()
    whole = build_memory_transcript(long_path, token_budget=20_000)
    assert built is not None and from_marked is not None
    assert (built.text, built.stats, built.truncated_tokens) == (whole.text, whole.stats, whole.truncated_tokens)
    assert from_marked.stats.lines_total == -1


def test_a_transcript_queued_behind_the_quality_import_is_left_to_the_task(tmp_path, monkeypatch):
    """The worker runs one job at a time: while great-expectations imports there, the first
    extractions must not wait seconds for a transcript queued behind it."""
    import threading

    from codex_memories.extract import prefetch

    worker = ThreadPoolExecutor(max_workers=1)  # stands in for the worker process: one job at a time
    release = threading.Event()
    monkeypatch.setattr(prefetch, "_pool", worker)
    monkeypatch.setattr(prefetch, "_quality_import", None)
    monkeypatch.setattr(prefetch, "import_validation_modules", release.wait)
    claims = []
    for index in range(3):
        path = write_rollout(tmp_path, created_at=WHEN + timedelta(minutes=index), user_messages=[f"task {index}"])
        claims.append(Stage1Claim(thread_id=f"t{index}", ownership_token=f"o{index}", source_updated_at=1, rollout_path=str(path)))
    try:
        prefetch.prepare_quality_check()
        ahead = TranscriptPrefetch(claims, token_budget=5_000, ahead=3, executor=worker)
        assert ahead.take(claims[0]) is None  # left to the task, not waited for
        assert prefetch.quality_import_running()  # so take() did not wait for the import
        release.set()
        prefetch._quality_import.result(timeout=30)
        built = ahead.take(claims[1])  # the import is done: transcripts come from the worker again
        assert built is not None
        assert built.text == build_memory_transcript(Path(claims[1].rollout_path), token_budget=5_000).text
    finally:
        release.set()
        worker.shutdown()


def _sigint_state(pid: int) -> dict[str, bool]:
    """Whether SIGINT is blocked, ignored or caught (a Python handler) in process `pid`."""
    fields = dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":\t" in line)
    bit = 1 << (2 - 1)  # SIGINT is 2; the masks are hex bitsets, signal n at bit n-1
    return {name: bool(int(fields[key], 16) & bit) for name, key in (("blocked", "SigBlk"), ("ignored", "SigIgn"), ("caught", "SigCgt"))}


def test_the_transcript_worker_never_takes_a_ctrl_c_while_it_starts(monkeypatch):
    """A Ctrl-C reaches the whole process group. The worker ignores SIGINT from its initializer
    on, but it imports for a while before that; it must not be interruptible in that window
    either (a KeyboardInterrupt traceback beside our one-line message, seen in a full run)."""
    import time

    from codex_memories.extract import prefetch

    monkeypatch.setattr(prefetch, "_pool", None)
    monkeypatch.setattr(prefetch, "spare_cores", lambda: 2.0)
    pool = prefetch.transcript_pool()
    try:
        [pid] = list(pool._processes)
        seen = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            state = _sigint_state(pid)
            seen.append(state)
            if state["ignored"] and not state["blocked"]:
                break  # the initializer ran: ignored, and the mask is back to normal
            time.sleep(0.005)
        assert all(state["blocked"] or state["ignored"] for state in seen), seen
        assert seen[0]["blocked"], "the first look is inside the start-up window: SIGINT blocked there"
        assert seen[-1] == {"blocked": False, "ignored": True, "caught": False}, seen[-1]
        assert not signal_mask_has_sigint(), "this thread's mask is as it was"
    finally:
        prefetch.stop_transcript_pool()


def signal_mask_has_sigint() -> bool:
    import signal

    return signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, set())
