"""The hook launcher keeps the hooks working when the Python environment that installed them
moves or goes, and says so loudly (log, stderr, doctor, every run) when nothing can stand in,
without ever breaking the session."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codex_memories.codex.doctor import codex_home_warnings, doctor
from codex_memories.codex.hooks_file import hooks_path
from codex_memories.codex.install import install
from codex_memories.codex.launcher import LauncherTarget, current_target, launcher_path, launcher_problem
from codex_memories.read.hook_log import hook_log_path
from codex_memories.read.hook_notices import launcher_gone_notice

FACT = "the atlas build uses make -j8 (PELICAN-7731)"
VENV_BIN = Path(sys.executable).parent
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    codex_home = tmp_path / "codex-home"
    memories = codex_home / "memories"
    memories.mkdir(parents=True)
    (memories / "memory_summary.md").write_text(f"# Memory summary\n\n## What's in Memory\n\n### user-level (every project)\n- {FACT}\n", encoding="utf-8")
    return codex_home


@pytest.fixture
def environment(tmp_path: Path) -> Path:
    """A Python environment of its own that can be moved or deleted: `env/bin/python` runs this
    test's interpreter (a venv's python cannot be copied on its own)."""
    python = tmp_path / "env" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n', encoding="utf-8")
    python.chmod(0o755)
    return tmp_path / "env"


def install_from(home: Path, environment: Path, tmp_path: Path, options: list[str] | None = None) -> None:
    target = current_target(home, options or [])
    target = LauncherTarget(python=str(environment / "bin" / "python"), hook_module=target.hook_module, log=target.log, options=target.options)
    install(home, home / "memories", tmp_path / "codex-memories", launcher_target=target, codex_binary=tmp_path / "no-codex")


def call_hook(home: Path, event: str, path: str, tmp_path: Path, source: str = "startup") -> subprocess.CompletedProcess[str]:
    """What Codex does: run the hooks.json command through the shell, the hook JSON (compact, as
    Codex writes it) on stdin."""
    [group] = json.loads(hooks_path(home).read_text(encoding="utf-8"))["hooks"][event]
    command = group["hooks"][0]["command"]
    stdin = json.dumps({"session_id": "s", "hook_event_name": event, "cwd": str(tmp_path), "source": source}, separators=(",", ":"))
    environment = {"PATH": path, "CODEX_HOME": str(home), "HOME": str(tmp_path)}
    return subprocess.run(["/bin/sh", "-c", command], input=stdin, capture_output=True, text=True, env=environment, timeout=120, check=False)


def context_of(completed: subprocess.CompletedProcess[str]) -> str:
    assert completed.returncode == 0, completed.stderr
    answer = json.loads(completed.stdout)
    return answer.get("hookSpecificOutput", {}).get("additionalContext", "")


def test_the_launcher_runs_the_recorded_interpreter(home: Path, environment: Path, tmp_path: Path) -> None:
    install_from(home, environment, tmp_path)
    assert FACT in context_of(call_hook(home, "SessionStart", SYSTEM_PATH, tmp_path))
    assert launcher_problem(home) is None and codex_home_warnings(home, str(home / "memories")) == []


def test_when_the_environment_is_moved_the_hooks_fall_back_to_codex_memories_hook_on_path(home: Path, environment: Path, tmp_path: Path) -> None:
    install_from(home, environment, tmp_path)
    environment.rename(tmp_path / "moved-env")

    assert FACT in context_of(call_hook(home, "SessionStart", f"{VENV_BIN}:{SYSTEM_PATH}", tmp_path))
    assert "failed_" not in hook_log_path(home).read_text(encoding="utf-8")


def test_when_nothing_can_run_the_hook_the_session_start_tells_the_person_and_every_call_says_why(
    home: Path, environment: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_from(home, environment, tmp_path)
    shutil.rmtree(environment)

    completed = call_hook(home, "SessionStart", SYSTEM_PATH, tmp_path)

    assert completed.returncode == 0
    assert json.loads(completed.stdout) == {"systemMessage": launcher_gone_notice(str(environment / "bin" / "python"))}
    assert "`codex-memories install`" in json.loads(completed.stdout)["systemMessage"]
    # Once per session: not again after a compaction, never on the other events.
    for event, source in (("SessionStart", "compact"), ("UserPromptSubmit", "startup"), ("Stop", "startup")):
        again = call_hook(home, event, SYSTEM_PATH, tmp_path, source=source)
        assert (again.returncode, again.stdout.strip()) == (0, "{}"), (event, source)
    hook_log_path(home).write_text("", encoding="utf-8")
    completed = call_hook(home, "SessionStart", SYSTEM_PATH, tmp_path)
    [line] = hook_log_path(home).read_text(encoding="utf-8").splitlines()
    assert " SessionStart failed_hook_environment_missing 0ms " in line
    assert str(environment / "bin" / "python") in line and "no codex-memories-hook on PATH" in line
    assert "run `codex-memories install` again" in line
    assert line in completed.stderr
    # doctor and every run name it (the fallback this process would find is not on PATH).
    monkeypatch.setenv("PATH", SYSTEM_PATH)
    [warning] = codex_home_warnings(home, str(home / "memories"))
    assert warning.startswith("warning: the hook launcher's Python environment is gone") and "every hook adds nothing" in warning
    report = doctor(home, home / "memories", f"sqlite:///{tmp_path / 'state.sqlite'}", ("heuristic", "auto"), codex_binary=tmp_path / "no-codex")
    [check] = [check for check in report.checks if check.name == "hook launcher"]
    assert not check.ok and "run `codex-memories install` again" in check.message


def test_installing_again_from_the_new_environment_changes_only_the_launcher(home: Path, environment: Path, tmp_path: Path) -> None:
    install(home, home / "memories", tmp_path / "codex-memories", trust=True, codex_binary=tmp_path / "no-codex")
    hooks_before = hooks_path(home).read_bytes()
    config_before = (home / "config.toml").read_bytes()
    launcher_before = launcher_path(home).read_bytes()

    install_from(home, environment, tmp_path)

    assert hooks_path(home).read_bytes() == hooks_before and (home / "config.toml").read_bytes() == config_before
    assert launcher_path(home).read_bytes() != launcher_before
    assert FACT in context_of(call_hook(home, "SessionStart", SYSTEM_PATH, tmp_path))


def test_a_memory_root_given_to_install_reaches_the_hooks_through_the_launcher(home: Path, environment: Path, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    shutil.copytree(home / "memories", other)
    (other / "memory_summary.md").write_text("# Memory summary\n\n### user-level (every project)\n- kept elsewhere (HERON-12)\n", encoding="utf-8")
    install_from(home, environment, tmp_path, options=["--memory-root", str(other)])
    assert "HERON-12" in context_of(call_hook(home, "SessionStart", SYSTEM_PATH, tmp_path))
