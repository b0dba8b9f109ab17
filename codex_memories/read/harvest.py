"""Harvest memory citations from rollout files into usage counts (spec 5.4).

Contract:
- `harvest_citations(store, rollout_paths)` scans each rollout from the byte offset stored for it
  (`get_harvest_offset`; 0 when never scanned), parses every `<oai-mem-citation>` block that
  `rollout_scan.scan_rollout` found in assistant messages past that offset, and in one transaction
  records one use of every valid rollout id of each block and moves the offset to the scan's end
  (`record_harvested_citations`).
- `scans` (optional): scans of some of these files made earlier in the same run (discovery's,
  from offset 0, `DiscoveryReport.read_scans`). A file with one is not read again: its blocks past
  the stored offset are exactly those a scan resumed there would return (a scan tracks every
  line to dedupe and returns the blocks of lines at or after its start offset), and its end
  offset is the scan's. Lines appended since that scan are left for the next run, whose
  discovery sees the file changed. When the stored offset is past the scan's end (another
  process harvested further in between, or the file was rewritten), the file is read as before.
- Idempotent: a rescan starts where the last one stopped, so no block is counted twice; a block
  written after the last scan is counted by the next one. An unterminated last line is left for
  the next scan (the end offset stops before it).
- A malformed block counts nothing and is reported (`problems`); a file that cannot be read as a
  rollout (`rollout_files.open_rollout`: not a regular file, too large, corrupt, unreadable) is
  reported with its outcome code (`unreadable`) and keeps its offset. Nothing raises for bad input.
- Safe across processes: the offset only moves if it is still where this scan started, so when
  two runs harvest the same file at once, one counts its new blocks and the other counts nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from codex_memories.ingest.rollout_files import rollout_failure
from codex_memories.ingest.rollout_scan import Citation, RolloutScan, scan_rollout
from codex_memories.outcomes import failure_reason
from codex_memories.read.citations import parse_citation_block
from codex_memories.state.store import MemoryStore


@dataclass
class HarvestReport:
    rollouts_scanned: int = 0
    citation_blocks: int = 0
    cited_ids: int = 0
    usage_recorded: int = 0
    problems: list[tuple[str, str]] = field(default_factory=list)  # (rollout path, what was wrong)
    unreadable: list[tuple[str, str]] = field(default_factory=list)


def harvest_citations(
    store: MemoryStore, rollout_paths: Iterable[str | Path], *, scans: Mapping[str, RolloutScan] | None = None
) -> HarvestReport:
    report = HarvestReport()
    for rollout_path in rollout_paths:
        key = str(rollout_path)
        offset = store.get_harvest_offset(key)
        earlier = scans.get(key) if scans is not None else None
        if earlier is not None and earlier.end_offset >= offset:
            citations: list[Citation] = [block for block in earlier.citations if block.line_offset >= offset]
            end_offset = earlier.end_offset
        else:
            try:
                scan = scan_rollout(Path(key), start_offset=offset)
            except OSError as error:  # not a regular file, too large, corrupt, gone: this file's outcome
                report.unreadable.append((key, failure_reason(*rollout_failure(error))))
                continue
            citations, end_offset = scan.citations, scan.end_offset
        report.rollouts_scanned += 1
        cited: list[str] = []
        for citation in citations:
            parsed = parse_citation_block(citation.text)
            report.citation_blocks += 1
            cited += parsed.rollout_ids
            report.problems.extend((key, problem) for problem in parsed.problems)
        if end_offset == offset:
            continue
        recorded = store.record_harvested_citations(
            rollout_path=key, expected_offset=offset, new_offset=end_offset, thread_ids=cited
        )
        if recorded is not None:  # None: another run harvested this stretch first
            report.cited_ids += len(cited)
            report.usage_recorded += recorded
    return report
