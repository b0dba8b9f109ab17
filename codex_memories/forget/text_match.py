"""Forgetting by text (route `text_match`): every memory line holding a text, and every name.

Issue 15 made `forget --match TEXT` remove the lines; issue 29 asked that a confidential code name
forgotten on request leave no trace in the memory folder: not in a line, not in a file name, not
in the folder's git history. So one edit (`forget.text_edit`: the lines holding the text, the
headings left empty, the names carrying it) is applied to every copy of the memory that holds it:

1. the stage-1 outputs (any memory mode) phase 2 renders its inputs from: their `raw_memory` and
   `rollout_summary` lines, and their `rollout_slug`, which names the rollout summary file
   (`<ts>-<hash4>-<slug>.md`): a slug carrying the text becomes a neutral one (its other words);
2. the memory folder: `MEMORY.md`, `memory_summary.md`, `raw_memories.md`, `rollout_summaries/`,
   the ad-hoc notes and `skills/` lose the lines; a rollout summary, a note or a skill file whose
   name carries the text is renamed (a summary to exactly the name the next phase-2 sync makes
   from the rewritten slug, so it does not come back under the old one), and every mention of a
   renamed file is rewritten to the new name; a note left blank is deleted. Files keep their
   modification times (a scrub is not new content: a note folded in by the last phase 2 must not
   look newly added to the SessionStart hook);
3. the folder's git baseline (`<root>/.git`, the one Codex's layout keeps; for an object-store
   root the same repository inside `.codex-memories/baseline.tar`, worked on in a local mirror
   that is then pushed): the same edit is applied to the baseline commit's tree, which is
   replaced by one new parentless commit, and every object it no longer reaches is pruned
   (`workspace.rewrite_baseline`). Live folder and baseline change alike, so what the user
   changed since the last consolidation is still a change the next phase 2 sees, and nothing the
   forget did is (the consolidator is never shown the forgotten text as a deleted line);
4. what a phase 2 left beside a local folder: staging copies of stopped runs and a proposal
   waiting for review (`review = ask`) both hold the old memory and its baseline; they are
   deleted (the proposal could not be applied over the rewritten baseline anyway; the next
   phase 2 proposes again);
5. derived data: the synced-inputs record is invalidated and a local recall index removed (its readers rebuild it);
   the exported team memory files lose their generated lines holding the text
   (`forget.team_files`).

- `check_match_text(text)`: one line of at least `MIN_MATCH_CHARACTERS` non-blank characters.
- `plan_match_forget(store, root, text)` reads only and returns the `MatchForgetPlan`;
  `describe()` lists exactly what will change: each line with its number and text, each heading
  left empty, each rename, each stage-1 output's lines and slug, the baseline, the leftovers.
- `forget_match(store, root, text)` refuses while phase 2 holds its lease (`ResetRefused`), plans
  again, records the text's hashes in the folder's forget ledger (`forget.ledger`; a read-only
  folder fails here, before anything changed) and applies the plan in the order above (the DB first: it is what the folder is
  re-created from). Returns one `ForgetAction` whose target and `removed` never hold the text:
  line numbers, counts and the new names only (`audited_match_text`). Idempotent: a second run
  finds nothing and returns no action.
- Effect: at once. Sessions read the live folder, so the next SessionStart, prompt recall and
  MCP read no longer see the text; the next phase 2 finds its inputs and baseline already
  without it.

Known limits, said by `describe()` where they apply: the record lines (`text_edit.is_record_line`:
a session's folder, its project, the scope of a task group) keep the text, since removing one
would move memories to another scope and phase 2 writes them again from the session record; the
rollout files themselves are the user's Codex sessions and are never edited, so a thread Codex
continues is extracted again from them. `forget --thread`/`--project` keep such threads out for
good.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codex_memories import paths
from codex_memories.forget.audit import ForgetAction, ForgetIncomplete
from codex_memories.forget.ledger import record_in_ledger
from codex_memories.forget.manual import Phase2Copy, phase2_copies, refuse_while_consolidating
from codex_memories.forget.selective import SelectiveForgetError
from codex_memories.forget.team_files import TEAM_FILES_FACT, TeamFiles
from codex_memories.forget.text_edit import LineEdit, Needle, edit_lines
from codex_memories.memory_folder.inputs import forget_synced_inputs
from codex_memories.memory_folder.notes import FALLBACK_SLUG
from codex_memories.memory_folder.staging import discard
from codex_memories.memory_folder.workspace import (
    BaselineChange,
    baseline_commit,
    baseline_files,
    read_baseline_blobs,
    rewrite_baseline,
)
from codex_memories.raw_memories import rollout_summary_stem, sanitize_slug
from codex_memories.redact import find_secret_kinds, redact_secrets
from codex_memories.sandbox import SandboxedFolder, UnsafePathError
from codex_memories.state.records import ForgetRoute, Stage1Output
from codex_memories.state.store import MemoryStore
from codex_memories.storage import LocalWorkspace, MemoryRoot

MIN_MATCH_CHARACTERS = 3
_REWRITE_ATTEMPTS = 3
_SUMMARY_STEM = re.compile(r"(?P<prefix>[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2}-[0-9A-Za-z]{4})(?:-(?P<slug>.+))?")
_NOTE_STEM = re.compile(r"(?P<prefix>[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2})-(?P<slug>.+)")
# What a renamed file is called when no word of its name is left.
NEUTRAL_SKILL_NAME = "skill"
NEUTRAL_FILE_NAME = "renamed"
_GIT_FILE_MODE = "100644"


def check_match_text(text: str) -> str:
    """The text to match, or `SelectiveForgetError` when it is blank, too short or multi-line."""
    if "\n" in text or "\r" in text:
        raise SelectiveForgetError("the text to forget must be one line (each memory line is matched on its own)")
    stripped = text.strip()
    if len(stripped) < MIN_MATCH_CHARACTERS:
        raise SelectiveForgetError(
            f"the text to forget must have at least {MIN_MATCH_CHARACTERS} characters: a shorter one matches most memory lines"
        )
    return stripped


def shown_match_text(text: str) -> str:
    """The text as the terminal shows it to the user who typed it: redacted when it looks secret."""
    return redact_secrets(text) if find_secret_kinds(text) else text


def audited_match_text(text: str) -> str:
    """The target as the audit, the run report and the logs keep it: never the text itself (a
    forgotten code name must not survive in the audit of its forgetting)."""
    return f"a text of {len(text)} characters"


# ---- the plan -----------------------------------------------------------------------------


@dataclass(frozen=True)
class FileChange:
    """One file of the memory folder or of its baseline, and what the forget makes of it."""

    path: str
    new_path: str  # == path unless the name carries the text
    edit: LineEdit | None  # the lines forgotten (None: a file only renamed)
    data: bytes | None  # the content afterwards; None: the file goes (a note left blank)
    mode: str = _GIT_FILE_MODE  # the baseline's file mode
    mtime_ns: int | None = None  # the live file's modification time, kept

    @property
    def renamed(self) -> bool:
        return self.data is not None and self.new_path != self.path

    @property
    def rewritten(self) -> bool:
        return self.data is not None and self.edit is not None and self.edit.changed


@dataclass(frozen=True)
class OutputChange:
    """One stage-1 output: its payload lines forgotten and its slug made neutral."""

    output: Stage1Output
    raw_memory: LineEdit
    rollout_summary: LineEdit
    slug: str | None  # the slug afterwards

    @property
    def slug_renamed(self) -> bool:
        return self.slug != self.output.rollout_slug

    @property
    def old_stem(self) -> str:
        return rollout_summary_stem(self.output.thread_id, self.output.source_updated_at, self.output.rollout_slug)

    @property
    def new_stem(self) -> str:
        return rollout_summary_stem(self.output.thread_id, self.output.source_updated_at, self.slug)


@dataclass(frozen=True)
class MatchForgetPlan:
    text: str
    folder: list[FileChange]
    outputs: list[OutputChange]
    baseline: list[FileChange]
    baseline_unusable: bool = False  # a `.git` that is not a readable baseline: it goes whole
    leftovers: list[Phase2Copy] = field(default_factory=list)  # copies beside a local folder
    kept: list[str] = field(default_factory=list)  # record lines holding the text, left: "where:n: line"
    thread_folders: list[str] = field(default_factory=list)  # thread cwds holding the text
    team: TeamFiles = field(default_factory=TeamFiles)  # the exported team files, read before
    team_files: list[str] = field(default_factory=list)  # what they would lose

    @property
    def empty(self) -> bool:
        """Nothing in the memory folder, its baseline or the stage-1 outputs holds the text."""
        return not (self.folder or self.outputs or self.baseline or self.baseline_unusable)

    def removed(self) -> dict[str, Any]:
        """What the audit keeps: numbers and the new names, never the text or an old name."""
        removed: dict[str, Any] = {
            "files": {
                change.new_path: [number for number, _ in change.edit.removed]
                for change in self.folder
                if change.data is not None and change.edit is not None and change.edit.removed
            },
            "renamed": sorted(change.new_path for change in self.folder if change.renamed),
            "notes_deleted": sum(change.data is None for change in self.folder),
            "stage1_outputs": [
                {
                    "thread_id": change.output.thread_id,
                    "raw_memory_lines": len(change.raw_memory.removed),
                    "rollout_summary_lines": len(change.rollout_summary.removed),
                    "slug_renamed": change.slug_renamed,
                    "was_selected_for_phase2": change.output.selected_for_phase2,
                }
                for change in self.outputs
            ],
        }
        if self.baseline or self.baseline_unusable:
            removed["git_baseline"] = (
                {"deleted": True}
                if self.baseline_unusable
                else {
                    "files_rewritten": sum(change.rewritten for change in self.baseline),
                    "files_renamed": sum(change.renamed for change in self.baseline),
                    "files_deleted": sum(change.data is None for change in self.baseline),
                }
            )
        if self.leftovers:
            removed["deleted"] = [str(leftover.path) for leftover in self.leftovers]
        return removed

    def describe(self) -> list[str]:
        """The dry run's lines: exactly what `forget_match` changes, the text shown."""
        lines: list[str] = []
        for change in self.folder:
            lines += _describe_file(change)
        for change in self.outputs:
            where = f"stage-1 output of thread {change.output.thread_id}"
            lines += _describe_edit(f"{where}, raw_memory", change.raw_memory)
            lines += _describe_edit(f"{where}, rollout_summary", change.rollout_summary)
            if change.slug_renamed:
                lines.append(f"{where}, slug {change.output.rollout_slug} -> {change.slug or '(none)'}")
        if self.baseline_unusable:
            lines.append(f"{paths.GIT_DIR}: deleted (not a readable git baseline; the next phase 2 makes a new one)")
        elif self.baseline:
            rewritten = sum(change.rewritten for change in self.baseline)
            renamed = sum(change.renamed for change in self.baseline)
            deleted = sum(change.data is None for change in self.baseline)
            lines.append(
                f"{paths.GIT_DIR} (the folder's git baseline): {rewritten} file(s) rewritten, {renamed} renamed, {deleted} deleted "
                "alike; one new commit replaces its history and the old objects are pruned"
            )
        lines += [f"{leftover.path}: deleted ({leftover.why})" for leftover in self.leftovers]
        lines += [f"{line}  (kept: it says where a memory comes from or which project it belongs to)" for line in self.kept]
        if self.kept or self.thread_folders:
            folders = self.thread_folders
            shown = (
                f"{len(folders)} session folder(s) hold the text ({', '.join(folders[:3])}{' and more' if len(folders) > 3 else ''}); "
                if folders
                else ""
            )
            lines.append(
                f"not changed: {shown}the lines that record a session's folder or project keep it, and phase 2 writes them again "
                "from the session's record: `codex-memories forget --project <folder>` forgets those sessions"
            )
        return [redact_secrets(line) for line in lines] + self.team_files


def _describe_file(change: FileChange) -> list[str]:
    if change.data is None:
        return [*_describe_edit(change.path, change.edit), f"{change.path}: deleted (nothing is left in the note)"]
    lines = [f"{change.path} -> {change.new_path} (renamed: the name carries the text)"] if change.renamed else []
    if change.edit is not None:
        lines += _describe_edit(change.path, change.edit)
        if change.edit.references:
            lines.append(f"{change.path}: {change.edit.references} mention(s) of renamed files now name the new file")
    return lines


def _describe_edit(where: str, edit: LineEdit | None) -> list[str]:
    if edit is None:
        return []
    gone = [(number, f"{where}:{number}: {line}") for number, line in edit.removed]
    gone += [(number, f"{where}:{number}: {line}  (heading left with nothing under it)") for number, line in edit.emptied_headings]
    return [line for _, line in sorted(gone)]


def plan_match_forget(store: MemoryStore, root: MemoryRoot, text: str) -> MatchForgetPlan:
    """Everything `forget_match` would change (see the module contract); reads only."""
    needle = Needle(check_match_text(text))
    with _working_copy(root) as workspace:
        return _plan(store, workspace.path, needle, live=not workspace.is_mirror)


def forget_match(store: MemoryStore, root: MemoryRoot, text: str, *, reason: str = "memory lines forgotten on request") -> list[ForgetAction]:
    """Forget every line and name holding `text` in every copy of the memory (module contract)."""
    needle = Needle(check_match_text(text))
    refuse_while_consolidating(store, "forget")
    with _working_copy(root) as workspace:
        plan = _plan(store, workspace.path, needle, live=not workspace.is_mirror)
        if plan.empty and not plan.team_files:
            return []
        # 0. The folder's forget ledger, before anything changes: a folder that refuses the write
        #    stops the forget here, and a run with another state DB finds the text forgotten.
        record_in_ledger(root, lambda ledger: ledger.add_text(needle.text))
        done: list[str] = ["forget ledger"]
        try:
            # 1. The stage-1 outputs: what the next phase-2 sync renders raw_memories.md and the rollout
            #    summaries from, so they go first.
            for change in plan.outputs:
                rewrite_output(store, change.output.thread_id, needle)
            done.append("stage-1 outputs")
            # 2. The memory folder, then 3. its baseline, then 4. what phase 2 left beside it.
            _apply_to_folder(workspace.path, plan.folder)
            done.append("memory folder")
            if plan.baseline_unusable:
                SandboxedFolder(workspace.path).delete_tree(paths.GIT_DIR)
            elif plan.baseline:
                rewrite_baseline(workspace.path, {change.path: _baseline_change(change) for change in plan.baseline})
            done.append("git baseline")
            for leftover in plan.leftovers:
                discard(leftover.path)
            # 5. Derived data: the next phase 2 must render its inputs again; the recall index held the lines.
            if not plan.empty:
                forget_synced_inputs(workspace.path)
                _drop_recall_index(root)
                workspace.push()
        except Exception as error:
            # Said and audited: the ledger already holds the text, so every later run keeps it
            # out of the state DB and the synced inputs; `forget --match` again finishes the rest.
            # The cause by its kind only: a message may name a file whose name holds the text.
            stopped = f"stopped after {', '.join(done)}: {getattr(error, 'strerror', None) or type(error).__name__}"
            raise ForgetIncomplete(
                f"forget --match {stopped}; run it again to finish (the memory folder's ledger already keeps the text out of every run)",
                [
                    ForgetAction(
                        route=ForgetRoute.text_match, target=audited_match_text(needle.text), reason=f"{reason}; {stopped}",
                        removed={"completed": done},
                    )
                ],
            ) from error
    removed = plan.team.record(store, plan.removed())
    if plan.empty and TEAM_FILES_FACT not in removed:
        return []
    return [ForgetAction(route=ForgetRoute.text_match, target=audited_match_text(needle.text), reason=reason, removed=removed)]


@contextmanager
def _working_copy(root: MemoryRoot) -> Iterator[LocalWorkspace]:
    """The folder itself when it is local; else a local mirror of it (files and baseline), pushed
    only when the caller calls `push()` (git needs a local repository)."""
    if root.local_path is not None:
        yield LocalWorkspace(root)
        return
    with tempfile.TemporaryDirectory(prefix="codex-memories-forget-") as scratch:
        workspace = LocalWorkspace(root, Path(scratch) / "mirror")
        workspace.pull()
        yield workspace


def _plan(store: MemoryStore, directory: Path, needle: Needle, *, live: bool) -> MatchForgetPlan:
    outputs, kept = output_changes(store, needle)
    summary_stems = {change.old_stem: change.new_stem for change in outputs if change.slug_renamed}
    folder = SandboxedFolder(directory)
    exists = directory.is_dir()
    live_files = _live_files(folder) if exists else {}
    baseline = baseline_files(directory) if exists else []
    # A `.git` that is not a readable baseline cannot be scrubbed: it goes, as phase 2 would replace it.
    unusable = exists and not baseline and folder.kind(paths.GIT_DIR) is not None and baseline_commit(directory) is None
    renames = _renames([*live_files, *(file.path for file in baseline)], needle, summary_stems)
    references = _references(renames)

    folder_changes = []
    for path, mtime_ns in live_files.items():
        read = (lambda path=path: _read(folder, path))
        change, kept_here = _file_change(path, read, needle, renames, references)
        kept += [f"{path}:{number}: {line}" for number, line in kept_here]
        if change is not None:
            folder_changes.append(FileChange(change.path, change.new_path, change.edit, change.data, mtime_ns=mtime_ns))

    baseline_changes = []
    wanted = [file for file in baseline if file.path in renames or holds_memory_lines(file.path)]
    blobs = read_baseline_blobs(directory, [file.oid for file in wanted])
    for file in wanted:
        change, _ = _file_change(file.path, lambda oid=file.oid: blobs[oid], needle, renames, references)
        if change is not None:
            baseline_changes.append(FileChange(change.path, change.new_path, change.edit, change.data, mode=file.mode))

    changes = bool(folder_changes or outputs or baseline_changes or unusable)
    leftovers = phase2_copies(directory) if live and changes else []
    cwds = store.thread_cwds()
    team = TeamFiles.before(store, cwds, text=needle.text)
    return MatchForgetPlan(
        text=needle.text, folder=folder_changes, outputs=outputs, baseline=baseline_changes, baseline_unusable=unusable,
        leftovers=leftovers, kept=kept, thread_folders=[cwd for cwd in cwds if needle.in_line(cwd)], team=team,
        team_files=team.planned(),
    )


def output_changes(store: MemoryStore, needle: Needle) -> tuple[list[OutputChange], list[str]]:
    """The outputs that change, and the record lines of any output that keep the text."""
    changes, kept = [], []
    for output in store.stage1_outputs_where(lambda raw, summary, slug: needle.may_hold(raw) or needle.may_hold(summary) or _slug_holds(needle, slug)):
        change = output_change(output, needle)
        if change.raw_memory.changed or change.rollout_summary.changed or change.slug_renamed:
            changes.append(change)
        for field_name, edit in (("raw_memory", change.raw_memory), ("rollout_summary", change.rollout_summary)):
            kept += [f"stage-1 output of thread {output.thread_id}, {field_name}:{number}: {line}" for number, line in edit.kept]
    return changes, kept


def output_change(output: Stage1Output, needle: Needle) -> OutputChange:
    slug = output.rollout_slug
    if _slug_holds(needle, slug):
        slug = needle.neutral_name(slug or "") or None
        if needle.in_name(sanitize_slug(slug)):
            slug = None  # a word the file name form joins differently: no slug at all
    return OutputChange(output, edit_lines(output.raw_memory, needle), edit_lines(output.rollout_summary, needle), slug)


def _slug_holds(needle: Needle, slug: str | None) -> bool:
    return needle.in_name(slug) or needle.in_name(sanitize_slug(slug))


def _live_files(folder: SandboxedFolder) -> dict[str, int]:
    """The content files of the folder (not `.git/`, not our bookkeeping) and their mtimes."""
    entries = folder.walk(skip=lambda entry: entry.kind == "dir" and entry.path in (paths.GIT_DIR, paths.WORKSPACE_STATE_DIR))
    return {entry.path: entry.mtime_ns for entry in entries if entry.kind == "file" and (holds_memory_lines(entry.path) or may_be_renamed(entry.path))}


def _read(folder: SandboxedFolder, path: str) -> bytes:
    try:
        return folder.read_bytes(path)
    except UnsafePathError as error:
        raise SelectiveForgetError(f"{error}; replace it with a plain file, then forget again") from None


def holds_memory_lines(path: str) -> bool:
    """The files whose lines a session or the consolidator reads (the ones a forget edits)."""
    if path in (paths.MEMORY_FILE, paths.MEMORY_SUMMARY_FILE, paths.RAW_MEMORIES_FILE):
        return True
    return path.endswith(".md") and path.startswith((paths.ROLLOUT_SUMMARIES_DIR + "/", paths.ad_hoc_notes_dir() + "/", paths.SKILLS_DIR + "/"))


def may_be_renamed(path: str) -> bool:
    """The files named after what they hold: rollout summaries, ad-hoc notes, skills."""
    directory, _, name = path.rpartition("/")
    if directory in (paths.ROLLOUT_SUMMARIES_DIR, paths.ad_hoc_notes_dir()):
        return name.endswith(".md")
    return path.startswith(paths.SKILLS_DIR + "/")


def memory_line_files(root: MemoryRoot) -> list[str]:
    """The memory folder's files whose lines a session or the consolidator reads, sorted."""
    if not root.is_dir(None):
        return []
    return [path for path in root.walk_files(exclude_git=True) if holds_memory_lines(path)]


def _renames(candidates: Iterable[str], needle: Needle, summary_stems: dict[str, str]) -> dict[str, str]:
    """Old path -> new path for every file whose name carries the text (live and baseline alike)."""
    taken = set(candidates)
    renames: dict[str, str] = {}
    for path in sorted(taken):
        if not may_be_renamed(path):
            continue
        directory, _, name = path.rpartition("/")
        stem = name.removesuffix(".md")
        if directory == paths.ROLLOUT_SUMMARIES_DIR and stem in summary_stems:
            renames[path] = paths.rollout_summary_path(summary_stems[stem])  # exactly what the next sync writes
            continue
        new_path = _neutral_path(path, needle)
        if new_path != path:
            new_path = _free_path(new_path, taken)
            taken.add(new_path)
            renames[path] = new_path
    return renames


def _neutral_path(path: str, needle: Needle) -> str:
    directory, _, name = path.rpartition("/")
    stem, dot, extension = name.rpartition(".") if "." in name else (name, "", "")
    if directory == paths.ROLLOUT_SUMMARIES_DIR:
        return f"{directory}/{_neutral_stem(stem, _SUMMARY_STEM, needle, None)}.md"
    if directory == paths.ad_hoc_notes_dir():
        return f"{directory}/{_neutral_stem(stem, _NOTE_STEM, needle, FALLBACK_SLUG)}.md"
    parts = path.split("/")  # skills/<skill>/.../<file>
    folders = [parts[0]] + [needle.neutral_name(part) or NEUTRAL_SKILL_NAME for part in parts[1:-1]]
    return "/".join([*folders, (needle.neutral_name(stem) or NEUTRAL_FILE_NAME) + dot + extension])


def _neutral_stem(stem: str, pattern: re.Pattern[str], needle: Needle, fallback_slug: str | None) -> str:
    """A dated name keeps its date (and hash): only the slug after it loses the text's words."""
    match = pattern.fullmatch(stem)
    if match is None:
        return needle.neutral_name(stem) or NEUTRAL_FILE_NAME
    slug = match.group("slug")
    if not needle.in_name(slug):
        return stem
    neutral = needle.neutral_name(slug) or fallback_slug
    return f"{match.group('prefix')}-{neutral}" if neutral else match.group("prefix")


def _free_path(path: str, taken: set[str]) -> str:
    if path not in taken:
        return path
    stem, dot, extension = path.rpartition(".")
    number = 2
    while f"{stem}-{number}{dot}{extension}" in taken:
        number += 1
    return f"{stem}-{number}{dot}{extension}"


def _references(renames: dict[str, str]) -> dict[str, str]:
    """What a mention of a renamed file looks like -> what it becomes: a summary or a note is
    named by its stem (`rollout_summary_file: <stem>.md`, `rollout_summaries/<stem>.md`), a
    skill by its path."""
    references = {}
    for old, new in renames.items():
        if old.startswith(paths.SKILLS_DIR + "/"):
            references[old] = new
            old_parts, new_parts = old.split("/"), new.split("/")
            for depth in range(2, len(old_parts)):
                if old_parts[depth - 1] != new_parts[depth - 1]:
                    references["/".join(old_parts[:depth]) + "/"] = "/".join(new_parts[:depth]) + "/"
        else:
            references[old.rpartition("/")[2].removesuffix(".md")] = new.rpartition("/")[2].removesuffix(".md")
    return references


def _file_change(
    path: str, read: Callable[[], bytes], needle: Needle, renames: dict[str, str], references: dict[str, str]
) -> tuple[FileChange | None, tuple[tuple[int, str], ...]]:
    """What becomes of one file, and its record lines that keep the text."""
    new_path = renames.get(path, path)
    edit = None
    kept: tuple[tuple[int, str], ...] = ()
    data: bytes | None = None
    if holds_memory_lines(path):
        # Undecodable bytes pass through unchanged (surrogateescape): only whole lines go.
        original = read().decode("utf-8", "surrogateescape")
        edit = edit_lines(original, needle, references)
        kept = edit.kept
        if edit.changed:
            data = edit.text.encode("utf-8", "surrogateescape")
            if path.startswith(paths.ad_hoc_notes_dir() + "/") and not edit.text.strip():
                return FileChange(path, new_path, edit, None), kept
        else:
            edit = None
    if edit is None and new_path == path:
        return None, kept
    return FileChange(path, new_path, edit, data if data is not None else read()), kept


def _baseline_change(change: FileChange) -> BaselineChange:
    return BaselineChange(path=change.new_path, mode=change.mode, data=change.data)


def _apply_to_folder(directory: Path, changes: list[FileChange]) -> None:
    """Renames first (each atomic), then the rewritten contents, then the deletions; a folder a
    rename emptied goes too (its name may carry the text)."""
    folder = SandboxedFolder(directory)
    emptied: set[str] = set()
    for change in changes:
        if change.renamed:
            folder.rename(change.path, change.new_path)
            emptied.add(change.path.rpartition("/")[0])
    for change in changes:
        if change.data is None:
            folder.delete(change.path, missing_ok=True)
        elif change.rewritten:
            folder.write_bytes(change.new_path, change.data, mtime_ns=change.mtime_ns)
    for directory_path in sorted(emptied, key=lambda item: item.count("/"), reverse=True):
        _remove_empty_folders(folder, directory_path)


def _remove_empty_folders(folder: SandboxedFolder, path: str) -> None:
    while path and path not in (paths.ROLLOUT_SUMMARIES_DIR, paths.ad_hoc_notes_dir(), paths.SKILLS_DIR):
        if folder.kind(path) != "dir" or folder.list_dir(path):
            return
        folder.delete_tree(path)
        path = path.rpartition("/")[0]


def rewrite_output(store: MemoryStore, thread_id: str, needle: Needle) -> None:
    for _attempt in range(_REWRITE_ATTEMPTS):
        output = store.get_stage1_output(thread_id)
        if output is None:
            return  # deleted meanwhile: nothing left to re-create the lines
        change = output_change(output, needle)
        if store.rewrite_stage1_output_payload(
            thread_id=thread_id,
            source_updated_at=output.source_updated_at,
            raw_memory=change.raw_memory.text,
            rollout_summary=change.rollout_summary.text,
            rollout_slug=change.slug,
        ):
            return
    raise RuntimeError(f"the stage-1 output of thread {thread_id} kept changing while its lines were forgotten; run forget again")


def _drop_recall_index(root: MemoryRoot) -> None:
    """Remove the folder's recall index: it held the forgotten lines, so no search may find them
    there. Its readers rebuild a missing index (`read.index.open_index`: the prompt hook in the
    background, `recall` and phase 2 at once), so forgetting needs no search machinery."""
    local = root.local_path
    if local is None:
        return  # object-store roots keep no recall index of their own (it lives with the reader)
    (local / paths.recall_index_path()).unlink(missing_ok=True)
