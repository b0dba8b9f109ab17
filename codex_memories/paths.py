"""Artifact and folder names (spec section 8). Paths are built by helpers here, never inline."""

from __future__ import annotations

from pathlib import Path

MEMORIES_DIR = "memories"
# Our own files inside the Codex home (state DB, backfill cache, logs), apart from Codex's.
STATE_DIR = "codex-memories"
STATE_DB_FILE = "state.sqlite"
BACKFILL_CACHE_DIR = "backfill-cache"
SESSIONS_DIR = "sessions"
ARCHIVED_SESSIONS_DIR = "archived_sessions"
CODEX_CONFIG_FILE = "config.toml"
ROLLOUT_GLOB = "rollout-*.jsonl"

MEMORY_SUMMARY_FILE = "memory_summary.md"
MEMORY_FILE = "MEMORY.md"
RAW_MEMORIES_FILE = "raw_memories.md"
ROLLOUT_SUMMARIES_DIR = "rollout_summaries"
SKILLS_DIR = "skills"
EXTENSIONS_DIR = "extensions"
EXTENSION_INSTRUCTIONS_FILE = "instructions.md"
EXTENSION_RESOURCES_DIR = "resources"
AD_HOC_EXTENSION = "ad_hoc"
AD_HOC_NOTES_DIR = "notes"
WORKSPACE_DIFF_FILE = "phase2_workspace_diff.md"
GIT_DIR = ".git"

SUMMARY_VERSION_LINE = "v1"


def local_memory_folder(root: str) -> Path | None:
    """The memory root on local disk (a path, `~` expanded, or a `file://` URL), or None for an
    object-store URL (`s3://…`, any other fsspec scheme): the one answer to "is the root local?",
    pure, so a quick command asks it without importing fsspec."""
    if root.startswith("file://"):
        return Path(root[len("file://"):])
    if "://" in root:
        return None
    return Path(root).expanduser()


def rollout_summary_path(stem: str) -> str:
    return f"{ROLLOUT_SUMMARIES_DIR}/{stem}.md"


def extension_dir(name: str) -> str:
    return f"{EXTENSIONS_DIR}/{name}"


def ad_hoc_instructions_path() -> str:
    return f"{EXTENSIONS_DIR}/{AD_HOC_EXTENSION}/{EXTENSION_INSTRUCTIONS_FILE}"


def ad_hoc_notes_dir() -> str:
    return f"{EXTENSIONS_DIR}/{AD_HOC_EXTENSION}/{AD_HOC_NOTES_DIR}"


# Object-store roots keep their git baseline next to the memory files (storage.LocalWorkspace).
# Nothing under this folder is memory content: it is never mirrored, diffed or counted.
WORKSPACE_STATE_DIR = ".codex-memories"
# What the last input sync wrote (selection fingerprint and file stats); see artifacts.py.
SYNCED_INPUTS_FILE = "synced-inputs.json"
BASELINE_ARCHIVE_FILE = "baseline.tar"


def baseline_archive_path() -> str:
    return f"{WORKSPACE_STATE_DIR}/{BASELINE_ARCHIVE_FILE}"


def extension_instructions_path(name: str) -> str:
    return f"{EXTENSIONS_DIR}/{name}/{EXTENSION_INSTRUCTIONS_FILE}"


def extension_resources_dir(name: str) -> str:
    return f"{EXTENSIONS_DIR}/{name}/{EXTENSION_RESOURCES_DIR}"


def default_db_url(codex_home: str | Path) -> str:
    """The state DB next to Codex's own files: `<codex_home>/codex-memories/state.sqlite`."""
    return f"sqlite:///{Path(codex_home).expanduser() / STATE_DIR / STATE_DB_FILE}"


# Which working folder belongs to which project, from the sessions' own git records
# (scopes.recorded_project_keys): written by phase 1, read by the hooks.
PROJECT_KEYS_FILE = "project-keys.json"


def recorded_project_keys_path(codex_home: str | Path) -> Path:
    return Path(codex_home).expanduser() / STATE_DIR / PROJECT_KEYS_FILE


# The recall index (codex_memories.read.index): derived from the memory files, rebuilt at will.
RECALL_INDEX_FILE = "recall-index.sqlite"


def recall_index_path() -> str:
    return f"{WORKSPACE_STATE_DIR}/{RECALL_INDEX_FILE}"


# Team memory (issue 15): a project's exported memories, committed in its repository, relative to
# the repository root. Under `.codex/`, next to the project's Codex configuration.
TEAM_MEMORY_FILE = ".codex/memories.md"
AGENTS_FILE = "AGENTS.md"


# Notes held back from the memory (`memory_folder.notes`): an agent's notes waiting for the user, and
# notes the injection gate refused. Their records hold the text base64-encoded and are never read as
# memory; the gate (and its redaction pass, which would corrupt the encoding) leaves them alone.
HELD_NOTE_DIRS = (f"{EXTENSIONS_DIR}/{AD_HOC_EXTENSION}/pending", f"{EXTENSIONS_DIR}/{AD_HOC_EXTENSION}/quarantine")


def is_held_note(relative: str) -> bool:
    return any(relative == folder or relative.startswith(folder + "/") for folder in HELD_NOTE_DIRS)
