"""Phase-2 scale: select + sync + diff with 4,096 selected stage-1 outputs, and the early finish.

Setup (untimed): a fresh SQLite store holding `--outputs` (default 4,096, the largest
`max_raw_memories_for_consolidation`) enabled threads, each with a stage-1 output of realistic
size (a raw memory of ~1.5-3.5 KB with front matter and task blocks, a summary of ~1-2.5 KB, a
slug), all recent enough to be selected.

Measured, per repetition, with the library functions the phase-2 tasks call (no Prefect), the
global job claimed (untimed) before each run as the flow does:
(i)   fresh memory root: `check_settled` (no record yet), `prepare_workspace` (layout, empty
      baseline) reported apart; then `select_inputs` + `sync_inputs` (`sync_rollout_summaries` +
      `rebuild_raw_memories`) + `workspace_diff`; then the baseline reset (`publish_workspace`),
      the success mark and `record_settled`, each reported apart;
(ii)  a no-change rerun on that root: step 2 (the early finish), `check_settled` (one aggregate query, the record,
      one `git status`), which must find the folder settled; the success mark it leads to is
      reported apart (the same mark every no-change run makes);
(ii') the same rerun without the early finish, as the flow does it when the check cannot
      decide: `prepare_workspace` (apart) + `select_inputs` + `sync_inputs` + `workspace_diff`
      (the diff must be empty);
(iii) the baseline, `git add -A && git diff --cached --stat` in the same root right after.
Goal: (ii) ≤ 3 × (iii).

    .venv/bin/python -m benchmarks.phase2_scale [--outputs 4096] [--repeats 3] [--save-report]
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.support import (
    machine_description,
    markdown_table,
    median,
    save_report,
    scratch_dir,
    spread,
)

SECTION = "phase2_scale"
MAX_UNUSED_DAYS = 30
# The same tracked set as the product: everything but its own bookkeeping folder.
PLAIN_GIT = "git add -A -- . ':(exclude).codex-memories' && git diff --cached --stat"

_WORDS = (
    "retry backoff webhook sender pnpm vitest migration alembic column index postgres flaky "
    "timeout fixture config loader rename callers changelog lint ruff mypy docker compose cache "
    "invalidation token refresh session cookie feature flag rollout canary metrics dashboard"
).split()


def _sentence(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(low, high)))


def _raw_memory(rng: random.Random, project: str, cwd: str, index: int) -> str:
    lines = [
        "---",
        f"description: {_sentence(rng, 6, 14)} in {project}",
        f"task: {_sentence(rng, 3, 7)}",
        f"task_group: {project}",
        f"task_outcome: {rng.choice(['success', 'success', 'partial', 'fail'])}",
        f"cwd: {cwd}",
        f"keywords: {', '.join(rng.sample(_WORDS, 5))}",
        "---",
        "",
    ]
    for task in range(rng.randint(1, 3)):
        lines += [
            f"### Task {task + 1}: {_sentence(rng, 3, 8)}",
            f"task: {_sentence(rng, 3, 7)}",
            f"task_group: {project}",
            "task_outcome: success",
            "",
            "Preference signals:",
            *(f"- {_sentence(rng, 8, 20)}" for _ in range(rng.randint(1, 3))),
            "",
            "Reusable knowledge:",
            *(f"- {_sentence(rng, 10, 25)}" for _ in range(rng.randint(2, 5))),
            "",
            "Failures and how to do differently:",
            f"- {_sentence(rng, 8, 20)}",
            "",
            "References:",
            f"- {cwd}/src/{rng.choice(_WORDS)}.py:{rng.randint(1, 400)} (thread {index})",
            "",
        ]
    return "\n".join(lines)


def _summary(rng: random.Random, project: str, cwd: str) -> str:
    lines = [f"# {_sentence(rng, 4, 9)}", "", f"Rollout context: {cwd}", ""]
    for task in range(rng.randint(1, 3)):
        lines += [
            f"## Task {task + 1}: {_sentence(rng, 3, 7)}",
            f"Outcome: {rng.choice(['success', 'partial'])}",
            "",
            "Reusable knowledge:",
            *(f"- {_sentence(rng, 10, 22)}" for _ in range(rng.randint(2, 4))),
            "",
        ]
    lines += ["References:", f"[1] {cwd}/src/{rng.choice(_WORDS)}.py", ""]
    return "\n".join(lines)


def populate_store(store: Any, count: int) -> int:
    """`count` enabled threads with one stage-1 output each; returns the payload bytes."""
    from datetime import UTC, datetime, timedelta

    from sqlalchemy import text

    from codex_memories.state.records import ThreadRecord
    from tests.support.rollout_factory import uuid7_at

    rng = random.Random(4096)
    now = datetime.now(UTC)
    projects = [f"project-{n}" for n in range(40)]
    threads, outputs = [], []
    payload = 0
    for index in range(count):
        created = now - timedelta(days=rng.uniform(0.5, 20))
        thread_id = uuid7_at(created, rng=rng)
        project = rng.choice(projects)
        cwd = f"/home/dana/src/{project}"
        updated_ms = int((created + timedelta(minutes=rng.randint(5, 240))).timestamp() * 1000)
        threads.append(
            ThreadRecord(
                id=thread_id,
                rollout_path=f"/home/dana/.codex/sessions/{created:%Y/%m/%d}/rollout-{thread_id}.jsonl",
                created_at_ms=int(created.timestamp() * 1000),
                updated_at_ms=updated_ms,
                source="cli",
                cwd=cwd,
                first_user_message=_sentence(rng, 5, 15),
                git_branch=rng.choice(["main", "feature/retry", None]),
            )
        )
        raw, summary = _raw_memory(rng, project, cwd, index), _summary(rng, project, cwd)
        payload += len(raw.encode()) + len(summary.encode())
        outputs.append(
            {
                "thread_id": thread_id,
                "source_updated_at": updated_ms // 1000,
                "raw_memory": raw,
                "rollout_summary": summary,
                "rollout_slug": f"{project}-{rng.choice(_WORDS)}-{rng.choice(_WORDS)}",
                "generated_at": updated_ms // 1000 + 60,
                "usage_count": rng.choice([None, None, 1, 2, 5]),
                "last_usage": None,
            }
        )
    store.upsert_threads(threads)
    with store.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO stage1_outputs (thread_id, source_updated_at, raw_memory, rollout_summary,"
                " rollout_slug, generated_at, usage_count, last_usage, selected_for_phase2)"
                " VALUES (:thread_id, :source_updated_at, :raw_memory, :rollout_summary, :rollout_slug,"
                " :generated_at, :usage_count, :last_usage, 0)"
            ),
            outputs,
        )
    return payload


def _timed(function: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    value = function(*args, **kwargs)
    return value, time.perf_counter() - started


def one_repetition(store: Any, root_dir: Path, count: int) -> dict[str, float]:
    from codex_memories.consolidate.steps import (
        Phase2Lease,
        check_settled,
        claim_global_lock,
        mark_succeeded,
        publish_workspace,
        pull_and_prepare_workspace,
        record_settled,
        select_inputs,
        sync_inputs,
    )
    from codex_memories.memory_folder.inputs import storage_bytes
    from codex_memories.memory_folder.workspace import workspace_diff
    from codex_memories.storage import LocalWorkspace, open_memory_root

    workspace = LocalWorkspace(open_memory_root(str(root_dir)))
    timings: dict[str, float] = {}

    def claim() -> Phase2Lease:
        result = claim_global_lock(store, worker_id="benchmark", lease_seconds=3600, cooldown_seconds=0, force=True)
        if result.ownership_token is None:
            raise RuntimeError(f"could not claim the global job: {result.outcome}")
        return Phase2Lease(ownership_token=result.ownership_token, input_watermark=result.input_watermark or 0, worker_id="benchmark")

    def settled_check(prefix: str, lease: Phase2Lease) -> Any:
        check, timings[f"{prefix} check"] = _timed(
            check_settled, root_dir, store, lease=lease, max_outputs=count, max_unused_days=MAX_UNUSED_DAYS,
            now=int(time.time()),
        )
        return check

    def select_sync_diff(prefix: str, lease: Phase2Lease) -> Any:
        selection, timings[f"{prefix} select"] = _timed(
            select_inputs, store, lease=lease, max_outputs=count, max_unused_days=MAX_UNUSED_DAYS
        )
        if len(selection.refs) != count:
            raise RuntimeError(f"selected {len(selection.refs)} of {count} outputs")
        synced, timings[f"{prefix} sync"] = _timed(sync_inputs, workspace, selection, store)
        if synced.reused != (prefix == "full rerun"):
            raise RuntimeError(f"{prefix}: the sync {'reused' if synced.reused else 'rewrote'} the files")
        diff, timings[f"{prefix} diff"] = _timed(workspace_diff, root_dir)
        return selection, diff

    lease = claim()
    check = settled_check("fresh", lease)
    if check.settled:
        raise RuntimeError("a fresh root was found settled")
    _removed, timings["fresh prepare"] = _timed(pull_and_prepare_workspace, workspace)
    selection, diff = select_sync_diff("fresh", lease)
    if len(diff.changes) < count + 1:
        raise RuntimeError(f"the fresh diff shows {len(diff.changes)} changes, expected at least {count + 1}")
    _none, timings["fresh reset"] = _timed(publish_workspace, workspace)
    _mark, timings["fresh mark"] = _timed(mark_succeeded, store, lease=lease, selection=selection, usage=None)
    recorded, timings["fresh record"] = _timed(record_settled, root_dir, store, check, storage_bytes=storage_bytes(root_dir))
    if not recorded:
        raise RuntimeError("the fresh run's success was not recorded")

    lease = claim()
    check = settled_check("rerun", lease)
    if not check.settled or len(check.selection.refs) != count:
        raise RuntimeError(f"the no-change rerun was not found settled: {check.reason}")
    _mark, timings["rerun mark"] = _timed(mark_succeeded, store, lease=lease, selection=check.selection, usage=None)

    lease = claim()
    _removed, timings["full rerun prepare"] = _timed(pull_and_prepare_workspace, workspace)
    _selection, diff = select_sync_diff("full rerun", lease)
    if diff.changes:
        raise RuntimeError(f"the no-change rerun shows {len(diff.changes)} changes, e.g. {diff.changes[:3]}")
    mark_succeeded(store, lease=lease, selection=_selection, usage=None)

    completed, timings["plain git"] = _timed(
        subprocess.run, ["sh", "-c", PLAIN_GIT], cwd=root_dir, capture_output=True, check=True
    )
    if completed.stdout.strip():
        raise RuntimeError(f"plain git saw changes: {completed.stdout[:200]!r}")
    return timings


def summarize(count: int, payload: int, files: int, tree_bytes: int, runs: list[dict[str, float]]) -> str:
    def values(*keys: str) -> list[float]:
        return [sum(run[key] for key in keys) for run in runs]

    fresh = values("fresh select", "fresh sync", "fresh diff")
    rerun = values("rerun check")
    full_rerun = values("full rerun select", "full rerun sync", "full rerun diff")
    plain = values("plain git")
    ratios = [r / p for r, p in zip(rerun, plain, strict=True)]
    full_ratios = [r / p for r, p in zip(full_rerun, plain, strict=True)]
    rows = [
        ["(i) fresh root: select + sync + diff", spread(fresh, unit=" s"), spread([f / p for f, p in zip(fresh, plain, strict=True)], 1)],
        ["  select", spread(values("fresh select"), unit=" s"), ""],
        [f"  sync ({count:,} summaries + raw_memories.md written, one flush)", spread(values("fresh sync"), unit=" s"), ""],
        ["  diff (everything added)", spread(values("fresh diff"), unit=" s"), ""],
        ["  (apart) the early finish on the empty root (no record)", spread(values("fresh check"), unit=" s"), ""],
        ["  (apart) prepare on the empty root", spread(values("fresh prepare"), unit=" s"), ""],
        ["  (apart) baseline reset afterwards (reusing the diff's objects)", spread(values("fresh reset"), unit=" s"), ""],
        ["  (apart) success mark", spread(values("fresh mark"), unit=" s"), ""],
        ["  (apart) settled record written", spread(values("fresh record"), unit=" s"), ""],
        ["**(ii) no-change rerun: the early finish (settled check)**", spread(rerun, unit=" s"), f"**{spread(ratios)}**"],
        ["  (apart) the success mark it finishes with", spread(values("rerun mark"), unit=" s"), ""],
        ["(ii') the same rerun without the early finish: select + sync + diff", spread(full_rerun, unit=" s"), spread(full_ratios)],
        ["  select", spread(values("full rerun select"), unit=" s"), ""],
        ["  sync (the synced-inputs record matches: nothing loaded, read or written)", spread(values("full rerun sync"), unit=" s"), ""],
        ["  diff (empty)", spread(values("full rerun diff"), unit=" s"), ""],
        ["  (apart) its prepare (baseline check, index refresh)", spread(values("full rerun prepare"), unit=" s"), ""],
        [f"**(iii) baseline: `{PLAIN_GIT}`**", spread(plain, unit=" s"), "1"],
    ]
    ratio = median(ratios)
    return "\n".join(
        [
            f"{count:,} selected stage-1 outputs ({payload / 1e6:.1f} MB of raw memories + summaries in SQLite); "
            f"the synced tree holds {files:,} files, {tree_bytes / 1e6:.1f} MB; {len(runs)} repetitions, each on a "
            "fresh memory root.",
            "",
            markdown_table(["step", "seconds, median (range)", "× (iii), median (range)"], rows),
            "",
            f"Goal (ii) ≤ 3 × (iii): ratio {ratio:.2f} — "
            + ("**met**." if ratio <= 3 else f"**missed** by {ratio - 3:.2f} (×{ratio / 3:.2f} the allowance)."),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--outputs", type=int, default=4096, help="selected stage-1 outputs (max 4096)")
    parser.add_argument("--repeats", type=int, default=3, help="repetitions, each on a fresh memory root")
    parser.add_argument("--save-report", action="store_true", help="also write the report to benchmarks/.work/reports/")
    args = parser.parse_args()

    from codex_memories.state.store import MemoryStore

    work = scratch_dir("phase2-")
    try:
        store = MemoryStore.open(f"sqlite:///{work / 'state.sqlite'}")
        payload = populate_store(store, args.outputs)
        runs = []
        files = tree_bytes = 0
        for repetition in range(args.repeats):
            root_dir = work / f"memories-{repetition}"
            runs.append(one_repetition(store, root_dir, args.outputs))
            tree = [path for path in root_dir.rglob("*") if path.is_file() and ".git" not in path.relative_to(root_dir).parts]
            files, tree_bytes = len(tree), sum(path.stat().st_size for path in tree)
            shutil.rmtree(root_dir)
            print(f"repetition {repetition + 1}/{args.repeats}: " + ", ".join(f"{k} {v:.2f}" for k, v in runs[-1].items()),
                  file=sys.stderr, flush=True)
        store.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    body = summarize(args.outputs, payload, files, tree_bytes, runs)
    print(body)
    if args.save_report:
        command = f".venv/bin/python -m benchmarks.phase2_scale --outputs {args.outputs} --repeats {args.repeats} --save-report"
        header = (
            "## Phase-2 scale (`phase2_scale.py`)\n\n"
            "Select + sync + workspace diff with the largest selection (4,096 stage-1 outputs), on a fresh memory "
            "root and as a no-change rerun, against plain `git add -A && git diff --cached --stat` on the same tree "
            "in the same run. See the script's docstring for the method.\n\n"
            f"Command: `{command}`\n\n"
            f"Machine: {machine_description()}\n\n"
        )
        save_report(SECTION, header + body)


if __name__ == "__main__":
    main()
