"""Phase 2's provenance check: a line a consolidation adds goes live only if its words do not come
from tool output alone.

The consolidator reads the selected sessions' stage-1 memories, and a model that repeats what it
reads carries whatever a tool printed in those sessions into `MEMORY.md`, `memory_summary.md`
and the skills, where the next session reads it as a standing instruction. Phase 1 already
withholds such lines from each stage-1 answer (`extract.provenance`); this check holds for every
consolidator and for memories written before that, by going back to the sessions themselves.

Contract:
- `find_tool_derived_lines(root_dir, outputs, read_items=...)` decides, reading only:
  1. The new lines: every judged logical line (`extract.provenance.memory_lines`, of at least
     `MIN_UNITS` units) of the files
     the injection gate reads (`injection_gate.gated_files`: the files a session reads that the
     consolidator may have written) whose words are not those of a line that was already live
     (any line of those files in the baseline commit: checked when it was added, or written by
     the user). Nothing is judged twice, and a user's hand edit is never second-guessed.
  2. Their sources: the selected stage-1 outputs (`outputs`) holding at least
     `SOURCE_SHARE` of a new line's units in their raw memory or rollout summary. A line no
     stage-1 output holds came from the consolidator itself, an ad-hoc note or an extension
     (the user's own input): it stays.
  3. Each source session's rollout, streamed (`read_items`, by default
     `ingest.transcript.iter_kept_items`), compared by origin: the user's words and the agent's
     actions vouch for a line, tool output taints it (`LineSupport.tool_derived`); the user's
     ad-hoc notes and extension resources under `extensions/` count as the user's words.
  A line is tool-derived when, against the pooled sessions of all its sources, its words come
  from tool output and not from the user or the agent; a line that speaks for the user
  (`extract.user_claims`: a rule section, a rule type, "the user wants ...") goes too when no
  user turn of those sessions (or a note or extension the user wrote) backs it
  (`UNBACKED_CLAIM_REASON`). A line one of whose sources cannot be
  read (the rollout was deleted or moved) is not judged: it is `unverified`, kept and counted.
- `remove_tool_derived_lines(root_dir, found)` removes them (a heading or key line keeps its
  marker with `WITHHELD`), rewriting each file once through the sandboxed folder, and returns the
  audit actions (route `tool_output_provenance`, one per line: its file, the redacted excerpt,
  the threads it was traced to). The run goes on with the rest: good memory keeps flowing, and
  the same stage-1 memory gives the same removal next time (the line never goes live).
- `check_provenance(root_dir, refs, store)` is phase 2's step: both of the above over the
  selection's stage-1 outputs, the actions recorded in the forget audit (so the run's report
  lists them).
- Same files, outputs and rollouts: same result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codex_memories import paths
from codex_memories.consolidate.injection_gate import gated_files
from codex_memories.evidence.screen import MAX_GATED_FILE_BYTES, GatedFile, excerpt
from codex_memories.extract.provenance import (
    MIN_UNITS,
    TRUSTED_ORIGINS,
    Attribution,
    MemoryLine,
    memory_lines,
    session_texts,
    units,
    without_lines,
)
from codex_memories.extract.user_claims import ClaimCheck, is_user_claim, rule_section_lines
from codex_memories.forget.audit import ForgetAction, record_actions
from codex_memories.ingest.transcript import ItemOrigin, iter_kept_items
from codex_memories.memory_folder.workspace import baseline_texts
from codex_memories.paths import is_held_note
from codex_memories.sandbox import SandboxedFolder
from codex_memories.state.records import ForgetRoute, Stage1Output, Stage1OutputRef
from codex_memories.state.store import MemoryStore

SOURCE_SHARE = 0.5
REMOVAL_REASON = "its words came from tool output in the session(s) it was traced to, not from the user or the agent's actions"
UNBACKED_CLAIM_REASON = "it speaks for the user, but no user turn of the session(s) it was traced to says it"

ReadItems = Callable[[Path], Iterable[dict[str, Any]]]


@dataclass(frozen=True)
class DerivedLine:
    path: str
    line: MemoryLine
    thread_ids: tuple[str, ...]
    reason: str = REMOVAL_REASON


@dataclass
class ProvenanceFindings:
    derived: list[DerivedLine] = field(default_factory=list)
    new_lines: int = 0  # judged: new since the baseline
    traced: int = 0  # of those, found in a selected stage-1 memory
    unverified: int = 0  # traced to a session whose rollout could not be read: kept

    def summary(self) -> str:
        return (
            f"{self.new_lines} new line(s) checked, {self.traced} traced to a session, "
            f"{len(self.derived)} removed (copied from tool output, or speaking for the user with no user turn behind it), "
            f"{self.unverified} unverified (rollout unreadable)"
        )


@dataclass(frozen=True)
class _NewLine:
    path: str
    line: MemoryLine


def find_tool_derived_lines(
    root_dir: Path, outputs: Sequence[Stage1Output], *, read_items: ReadItems = iter_kept_items
) -> ProvenanceFindings:
    root_dir = Path(root_dir)
    files = [gated for gated in gated_files(root_dir) if gated.text is not None]
    findings = ProvenanceFindings()
    new_lines = _new_lines(root_dir, files)
    findings.new_lines = len(new_lines)
    if not new_lines:
        return findings
    sources = _sources(new_lines, outputs)
    traced = [(line, threads) for line, threads in zip(new_lines, sources, strict=True) if threads]
    findings.traced = len(traced)
    if not traced:
        return findings
    by_thread = {output.thread_id: output for output in outputs}
    wanted = sorted({thread_id for _, threads in traced for thread_id in threads})
    readable: set[str] = set()
    attribution = Attribution([line.line.comparable for line, _ in traced])
    claims = ClaimCheck()
    for extension_text in _extension_texts(root_dir):
        attribution.feed(ItemOrigin.user, extension_text)
        claims.add(ItemOrigin.user, extension_text)
    for thread_id in wanted:
        rollout_path = by_thread[thread_id].rollout_path
        if not rollout_path:
            continue
        try:
            for origin, text in session_texts(read_items(Path(rollout_path))):
                attribution.feed(origin, text, whole_short_text=origin in TRUSTED_ORIGINS)
                claims.add(origin, text)
        except OSError:
            continue  # deleted or moved since: the lines it supports cannot be judged
        readable.add(thread_id)
    in_rules = {gated.path: rule_section_lines(gated.text or "") for gated in files}
    for index, (line, threads) in enumerate(traced):
        if not set(threads) <= readable:
            findings.unverified += 1
        elif attribution.support(index).tool_derived:
            findings.derived.append(DerivedLine(line.path, line.line, threads))
        elif is_user_claim(line.line.text, in_rule_section=line.line.first in in_rules[line.path]) and not claims.check(
            line.line.comparable
        ).backed:
            findings.derived.append(DerivedLine(line.path, line.line, threads, UNBACKED_CLAIM_REASON))
    return findings


def _new_lines(root_dir: Path, files: Sequence[GatedFile]) -> list[_NewLine]:
    """The judged lines of `files` whose words were not on a line of those files at the baseline."""
    baseline = baseline_texts(root_dir, [gated.path for gated in files])
    live = {tuple(units(line.comparable)) for text in baseline.values() for line in memory_lines(text)}
    found = []
    for gated in files:
        for line in memory_lines(gated.text or ""):
            words = tuple(units(line.comparable))
            if len(words) >= MIN_UNITS and words not in live:
                found.append(_NewLine(gated.path, line))
    return found


def _sources(new_lines: Sequence[_NewLine], outputs: Sequence[Stage1Output]) -> list[tuple[str, ...]]:
    """For each new line, the threads whose stage-1 memory holds enough of its words."""
    attribution = Attribution([line.line.comparable for line in new_lines])
    for output in outputs:
        for text in (output.raw_memory, output.rollout_summary):
            attribution.feed(output.thread_id, text or "", whole_short_text=False)
    threads = sorted(output.thread_id for output in outputs)
    sources = []
    for index, line in enumerate(new_lines):
        needed = SOURCE_SHARE * len(attribution.line_units[index])
        sources.append(tuple(thread for thread in threads if attribution.covered(index, (thread,)) >= needed and needed > 0))
    return sources


def _extension_texts(root_dir: Path) -> Iterator[str]:
    """The user's own input in the folder: ad-hoc notes and extension resources (regular files);
    not the notes held back (an agent's pending notes are not the user's words)."""
    folder = SandboxedFolder(root_dir)
    if folder.kind(paths.EXTENSIONS_DIR) != "dir":
        return
    for entry in folder.walk(paths.EXTENSIONS_DIR):
        if entry.kind == "file" and entry.size <= MAX_GATED_FILE_BYTES and not is_held_note(entry.path):
            yield folder.read_bytes(entry.path).decode("utf-8", "replace")


def remove_tool_derived_lines(root_dir: Path, findings: ProvenanceFindings) -> list[ForgetAction]:
    """Remove the lines found, file by file; the audit actions of what went (not yet recorded)."""
    folder = SandboxedFolder(Path(root_dir))
    by_path: dict[str, list[DerivedLine]] = {}
    for derived in findings.derived:
        by_path.setdefault(derived.path, []).append(derived)
    actions = []
    for path, derived in sorted(by_path.items()):
        text = folder.read_bytes(path).decode("utf-8")
        folder.write_bytes(path, without_lines(text, [item.line for item in derived]).encode("utf-8"), executable=False)
        actions += [
            ForgetAction(
                route=ForgetRoute.tool_output_provenance,
                target=path,
                reason=item.reason,
                removed={"line": item.line.first + 1, "text": excerpt(item.line.text), "threads": list(item.thread_ids)},
            )
            for item in derived
        ]
    return actions


def check_provenance(root_dir: Path, refs: Sequence[Stage1OutputRef], store: MemoryStore) -> ProvenanceFindings:
    """Phase 2's step: find, remove and audit the new lines copied from tool output."""
    outputs = store.load_stage1_outputs(refs) if refs else []
    findings = find_tool_derived_lines(root_dir, outputs)
    record_actions(store, remove_tool_derived_lines(root_dir, findings))
    return findings
