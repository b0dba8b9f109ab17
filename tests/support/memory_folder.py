"""A small memory folder in Codex's layout for the recall tests: two projects and user-level facts."""

from __future__ import annotations

from pathlib import Path

from codex_memories import paths

ATLAS = "/home/dev/work/atlas"
BILLING = "/home/dev/work/billing"
NOTE_FILE = "2026-10-02T08-15-00-pnpm.md"
ROLLOUT_SUMMARY = "2026-11-18T14-02-11-0001-ship-orders-api.md"

MEMORY = f"""<!-- Written by the codex-memories pipeline. -->

# Task Group: {ATLAS}
scope: work in atlas (1 session; themes: deploy)
applies_to: cwd={ATLAS}; reuse_rule=use when working in {ATLAS} or below it

## Task 1: Ship the orders API to production, outcome: success

### rollout_summary_files
- rollout_summaries/{ROLLOUT_SUMMARY} (cwd={ATLAS}, rollout_path=/x/rollout.jsonl, updated_at=2026-11-18T14:02:11+00:00, thread_id=t1)

### keywords
- deploy, canary, make

## Reusable knowledge
- Production deploys go through `make ship-prod`; it tags the commit and waits for the canary to pass. [Task 1]
- The integration tests need Postgres on port 5433 (`docker compose up db`). [Task 1]

# Task Group: {BILLING}
scope: work in billing (1 session; themes: release)
applies_to: cwd={BILLING}; reuse_rule=use when working in {BILLING} or below it

## Task 1: Release v2.14 of the billing service, outcome: success

### rollout_summary_files
- rollout_summaries/2026-11-12T16-20-00-0002-release.md (cwd={BILLING}, rollout_path=/x/b.jsonl, updated_at=2026-11-12T16:20:00+00:00, thread_id=t2)

### keywords
- goreleaser, argo cd, tag

## Reusable knowledge
- Production deploys are cut by pushing a `v*` tag; goreleaser builds the images and Argo CD rolls them out. [Task 1]
- Amounts are int64 cents everywhere; never use float64 for money. [Task 1]

# Task Group: ad-hoc notes
scope: facts the user explicitly asked to remember, through ad-hoc notes
applies_to: cwd=any; reuse_rule=notes are authoritative

## User preferences
- Prefer pnpm over npm for new JavaScript projects. [ad-hoc note] ({paths.ad_hoc_notes_dir()}/{NOTE_FILE})
"""

SUMMARY = f"""v1

## User Profile

Backend engineer who works on atlas and billing.

## What's in Memory

### {ATLAS}
#### 2026-11-18
- orders API deploy: make ship-prod, canary
  - desc: shipping the orders API

### {BILLING}
#### 2026-11-12
- billing release: goreleaser, argo cd
"""

ROLLOUT = f"""thread_id: t1
updated_at: 2026-11-18T14:02:11+00:00
rollout_path: /x/rollout.jsonl
cwd: {ATLAS}

# Ship the orders API to production

The canary failed twice because the health check path was wrong; fixed in the Helm chart.
"""


def write_memory_folder(root: Path) -> Path:
    """Write the folder under `root` and return it."""
    (root / paths.ROLLOUT_SUMMARIES_DIR).mkdir(parents=True, exist_ok=True)
    (root / paths.MEMORY_FILE).write_text(MEMORY, encoding="utf-8")
    (root / paths.MEMORY_SUMMARY_FILE).write_text(SUMMARY, encoding="utf-8")
    (root / paths.ROLLOUT_SUMMARIES_DIR / ROLLOUT_SUMMARY).write_text(ROLLOUT, encoding="utf-8")
    notes = root / paths.ad_hoc_notes_dir()
    notes.mkdir(parents=True, exist_ok=True)
    (notes / NOTE_FILE).write_text("Prefer pnpm over npm for new JavaScript projects.\n", encoding="utf-8")
    return root


def line_of(root: Path, relative: str, needle: str) -> int:
    """The 1-based number of the first line of `relative` that contains `needle`."""
    for number, line in enumerate((root / relative).read_text(encoding="utf-8").split("\n"), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} is not in {relative}")
