"""The injection gate: consolidated memory files are checked before they go live.

What reaches `memory_summary.md`, `MEMORY.md`, `skills/` and the rest of the memory folder is
read by later sessions, so an instruction planted in a tool output, a web page or a rollout
summary must not get there by way of a consolidation. The gate runs after artifact validation and
before the baseline reset; a finding fails the run (`failed_injection_gate`) and the folder is
restored (the source of a finding is traced and quarantined by `injection_sources`). The decision
is the instruction screen's (`evidence.screen.find_injections`); this module says which files it
reads.

- `gated_files(root_dir)` is the I/O that feeds it: every regular file a session can read that
  the consolidator may have written: `memory_summary.md`, `MEMORY.md`, everything under `skills/`,
  any other file outside the workspace machinery (`.git/`, `.codex-memories/`), the diff file
  and `extensions/` (the user's own input, audited by forgetting route 7) but for the held notes
  (`paths.HELD_NOTE_DIRS`: pending and quarantined, never memory); `raw_memories.md` and
  `rollout_summaries/` only where they are not what the input sync wrote
  (`inputs.files_changed_since_sync`): a stage-1 memory is evidence of a session, gated when a
  consolidation copies it into what a session is told. Symlinks are never followed
  (`validate_artifacts` has removed them and refused hard links already; one check per decision).
- `redact_gated_files(root_dir)` rewrites the same files redacted, before the gate reads them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from codex_memories import paths
from codex_memories.evidence.screen import MAX_GATED_FILE_BYTES, GatedFile, InjectionFinding, find_injections
from codex_memories.memory_folder.inputs import files_changed_since_sync
from codex_memories.paths import MEMORY_FILE, MEMORY_SUMMARY_FILE, is_held_note
from codex_memories.redact import redact_secrets
from codex_memories.sandbox import SandboxedFolder

# Not read by a session as memory, or not the consolidator's: workspace machinery, the diff file
# code writes for the consolidator, and the user's own extension input.
_UNGATED_TOP_LEVEL = frozenset({paths.GIT_DIR, paths.WORKSPACE_STATE_DIR, paths.WORKSPACE_DIFF_FILE, paths.EXTENSIONS_DIR})
# Written by the input sync from stage-1 outputs; gated where a consolidation changed them.
_SYNCED_INPUTS = (paths.RAW_MEMORIES_FILE, paths.ROLLOUT_SUMMARIES_DIR)


def gated_files(root_dir: Path) -> list[GatedFile]:
    """The files the gate reads: the two always-loaded files first, then every other file a
    session can read that the consolidator may have written, in path order."""
    root_dir = Path(root_dir)
    changed_inputs = files_changed_since_sync(root_dir)
    relative_paths = [MEMORY_SUMMARY_FILE, MEMORY_FILE]
    for directory, subdirectories, names in os.walk(root_dir, followlinks=False):
        relative_dir = Path(directory).relative_to(root_dir).as_posix()
        if relative_dir == ".":
            subdirectories[:] = [name for name in subdirectories if name not in _UNGATED_TOP_LEVEL]
        subdirectories.sort()
        for name in sorted(names):
            relative = name if relative_dir == "." else f"{relative_dir}/{name}"
            if relative in relative_paths or relative.split("/", 1)[0] in _UNGATED_TOP_LEVEL or is_held_note(relative):
                continue
            if relative.split("/", 1)[0] in _SYNCED_INPUTS and changed_inputs is not None and relative not in changed_inputs:
                continue
            relative_paths.append(relative)
    return [gated for gated in map(lambda relative: _read_gated(root_dir, relative), relative_paths) if gated is not None]


def _read_gated(root_dir: Path, relative: str) -> GatedFile | None:
    path = root_dir / relative
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    executable = bool(info.st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
    if info.st_size > MAX_GATED_FILE_BYTES:
        return GatedFile(relative, None, executable, too_large=True)
    data = path.read_bytes()
    try:
        text: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and data.startswith((b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xfe\xed\xfa")):
        text = None
    return GatedFile(relative, text, executable)


def redact_gated_files(root_dir: Path) -> list[str]:
    """Rewrite each gated file whose text `redact_secrets` changes (through the sandboxed folder),
    so what any consolidator wrote (a command quoted verbatim, a line the model made up) goes
    live redacted like every other path; the paths rewritten. Not text, too large: left as is
    (the gate refuses those)."""
    folder = SandboxedFolder(root_dir)
    rewritten = []
    for gated in gated_files(root_dir):
        if gated.text is None or gated.too_large:
            continue
        redacted = redact_secrets(gated.text)
        if redacted != gated.text:
            folder.write_bytes(gated.path, redacted.encode("utf-8"), executable=gated.executable)
            rewritten.append(gated.path)
    return rewritten


def check_injection_gate(root_dir: Path) -> list[InjectionFinding]:
    """Phase 2's gate step: the findings over the consolidated files (empty: they may go live)."""
    return find_injections(gated_files(root_dir))
