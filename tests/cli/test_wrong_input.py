"""Wrong input never looks like success (issue 30): run as a user runs the CLI (subprocess), with
a private HOME and nothing of the caller's settings; every test also checks the files left behind.

- A mistyped Codex home is one line and exit 2 for every command that reads sessions or writes
  into the home; the commands that only look (`status`, `doctor`, `show`, `recall`, `inject`,
  `review` without a decision) write nothing: no state DB, no folder.
- Every bad setting, `--provider gpt` included, is one line naming the key and exit 2.
- Every subcommand takes every common option (`inject --db` was refused).
- `doctor` says "not yet" for what the first run creates, and FAIL only for what is wrong.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codex_memories import paths

CLI = [sys.executable, "-m", "codex_memories_cli.main"]
COMMON_FLAGS = (
    "--codex-home", "--db", "--memory-root", "--provider", "--base-url", "--api-mode", "--extract-model",
    "--consolidation-model", "--concurrency", "--config-file", "--max-rollouts", "--ignore-age-windows",
)


def cli(tmp_path: Path, *arguments: str, codex_home: Path | None = None, **variables: str) -> subprocess.CompletedProcess[str]:
    """`codex-memories ...` with HOME under `tmp_path`, run from `tmp_path/work`, and only
    `CODEX_HOME` (when given) and `variables` of our settings in the environment."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("CODEX_MEMORIES_", "CODEX_HOME", "OPENAI_"))}
    environment["HOME"] = str(tmp_path / "user-home")
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environment.get('PATH', '')}"  # the pinned `codex`
    if codex_home is not None:
        environment["CODEX_HOME"] = str(codex_home)
    environment.update(variables)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return subprocess.run([*CLI, *arguments], capture_output=True, text=True, env=environment, cwd=work, timeout=180)


def tree(folder: Path) -> dict[str, int]:
    """Every path under `folder` with its size (folders: -1)."""
    return {
        str(path.relative_to(folder)): (-1 if path.is_dir() else path.stat().st_size)
        for path in sorted(folder.rglob("*"))
    }


def assert_one_line(result: subprocess.CompletedProcess[str], code: int, *fragments: str) -> str:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("codex-memories: "), result.stderr
    assert "Traceback" not in result.stderr and "pydantic" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def codex_home_with_config(tmp_path: Path) -> Path:
    home = tmp_path / "user-home" / ".codex"
    home.mkdir(parents=True)
    (home / paths.CODEX_CONFIG_FILE).write_text("[features]\nmemories = false\n", encoding="utf-8")
    return home


# ---- a mistyped Codex home -------------------------------------------------------------------


WRITERS = [["run"], ["phase1"], ["backfill"], ["serve", "--port", "1"], ["install"], ["install", "--dry-run"], ["uninstall"]]


@pytest.mark.parametrize("command", WRITERS, ids=lambda command: " ".join(command))
def test_a_codex_home_that_does_not_exist_is_refused_with_its_path_and_exit_2(tmp_path: Path, command: list[str]) -> None:
    typo = tmp_path / "user-home" / ".codx"
    (tmp_path / "user-home").mkdir()
    before = tree(tmp_path)

    result = cli(tmp_path, *command, codex_home=typo)

    assert_one_line(result, 2, f"the Codex home {typo} does not exist", "--codex-home or CODEX_HOME")
    assert result.stdout == ""
    assert tree(tmp_path) == {**before, "work": -1}


@pytest.mark.parametrize("command", [["run"], ["phase1"], ["backfill"]], ids=lambda command: " ".join(command))
def test_a_folder_with_nothing_codex_writes_is_not_a_codex_home(tmp_path: Path, command: list[str]) -> None:
    wrong = tmp_path / "projects"
    (wrong / "src").mkdir(parents=True)
    (wrong / "README.md").write_text("not a Codex home\n", encoding="utf-8")
    before = tree(tmp_path)

    result = cli(tmp_path, *command, "--codex-home", str(wrong), "--provider", "heuristic")

    assert_one_line(result, 2, f"{wrong} is not a Codex home", "sessions/", "config.toml")
    assert tree(tmp_path) == {**before, "work": -1}


def test_a_codex_home_with_only_a_config_is_taken_and_the_run_reports_no_session(tmp_path: Path) -> None:
    """A new Codex user (a config, no session yet) is not a typo: `phase1` runs and finds nothing."""
    home = codex_home_with_config(tmp_path)

    result = cli(tmp_path, "phase1", "--provider", "heuristic", "--local", codex_home=home, PREFECT_HOME=str(tmp_path / "prefect"))

    assert result.returncode == 0, result.stderr[-3000:]
    assert "not a Codex home" not in result.stderr


# ---- read-only commands write nothing --------------------------------------------------------


LOOKERS = [
    ["status"],
    ["status", "--json"],
    ["doctor"],
    ["show"],
    ["show", "--why", "--json"],
    ["recall", "--query", "how do I deploy?"],
    ["inject"],
    ["review"],
]


@pytest.mark.parametrize("home_kind", ["missing", "never-run"])
@pytest.mark.parametrize("command", LOOKERS, ids=lambda command: " ".join(command))
def test_commands_that_only_look_create_no_state_db_and_no_folder(tmp_path: Path, command: list[str], home_kind: str) -> None:
    if home_kind == "missing":
        home = tmp_path / "user-home" / ".codx"
        (tmp_path / "user-home").mkdir()
    else:
        home = codex_home_with_config(tmp_path)
    (tmp_path / "work").mkdir()
    before = tree(tmp_path)

    result = cli(tmp_path, *command, codex_home=home)

    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode in (0, 1), (result.stdout, result.stderr)  # doctor fails a check; review finds no proposal
    assert tree(tmp_path) == before
    assert not (home / paths.STATE_DIR).exists() and not (home / paths.MEMORIES_DIR).exists()


def test_status_of_a_home_that_never_ran_says_no_run_yet_instead_of_zeros(tmp_path: Path) -> None:
    home = codex_home_with_config(tmp_path)

    result = cli(tmp_path, "status", codex_home=home)

    assert result.returncode == 0, result.stderr
    assert "No run yet" in result.stdout and "`codex-memories run`" in result.stdout
    assert " 0 " not in result.stdout and "{" not in result.stdout
    assert f"Codex home:     {home}" in result.stdout
    assert "not made yet" in result.stdout  # the memory folder


def test_status_says_when_the_codex_home_is_not_one(tmp_path: Path) -> None:
    typo = tmp_path / "user-home" / ".codx"

    result = cli(tmp_path, "status", codex_home=typo)

    assert result.returncode == 0, result.stderr
    assert f"warning: the Codex home {typo} does not exist" in result.stdout
    assert not typo.exists()


# ---- bad settings: one line, exit 2 ----------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "variables", "fragments"),
    [
        (["--provider", "gpt"], {}, ["invalid setting provider='gpt'", "'auto', 'openai', 'codex' or 'heuristic'"]),
        (["--api-mode", "soap"], {}, ["invalid setting api_mode='soap'", "'responses' or 'chat'"]),
        (["--concurrency", "0"], {}, ["invalid setting concurrency=0", "1..64"]),
        (["--max-rollouts", "500"], {}, ["invalid setting max_rollouts_per_startup=500", "1..128"]),
        (["--db", "mysql://bob:hunter2@db/memories"], {}, ["invalid setting db_url='mysql://bob:***@db/memories'"]),
        ([], {"CODEX_MEMORIES_PROVIDER": "gpt"}, ["invalid setting provider='gpt'"]),
        ([], {"CODEX_MEMORIES_SESSION_START_BUDGET_TOKENS": "-5"}, ["session_start_budget_tokens"]),
    ],
    ids=["provider", "api-mode", "concurrency", "max-rollouts", "db-url", "provider-from-environment", "budget-from-environment"],
)
@pytest.mark.parametrize("command", [["run"], ["status"], ["inject"], ["show"], ["note", "remember this"], ["doctor"]], ids=lambda c: c[0])
def test_every_bad_setting_is_one_line_naming_the_key_and_exit_2(
    tmp_path: Path, command: list[str], arguments: list[str], variables: dict[str, str], fragments: list[str]
) -> None:
    home = codex_home_with_config(tmp_path)
    (tmp_path / "work").mkdir()
    before = tree(tmp_path)

    result = cli(tmp_path, *command, *arguments, codex_home=home, **variables)

    line = assert_one_line(result, 2, *fragments)
    assert "errors.pydantic.dev" not in line and "hunter2" not in line
    assert result.stdout == ""
    assert tree(tmp_path) == before


# ---- the common options, on every subcommand ---------------------------------------------------


def test_every_subcommand_takes_every_common_option() -> None:
    import typer

    from codex_memories_cli.main import app

    group = typer.main.get_command(app)
    missing = {}
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        if name == "hook":  # Codex's entry point: it takes the hook script's own options
            continue
        flags = {flag for parameter in command.params for flag in parameter.opts + parameter.secondary_opts}
        lacking = [flag for flag in COMMON_FLAGS if flag not in flags]
        if lacking:
            missing[name] = lacking
    assert len(group.commands) > 20  # type: ignore[attr-defined]
    assert missing == {}


def test_inject_takes_the_db_option_it_used_to_refuse(tmp_path: Path) -> None:
    home = codex_home_with_config(tmp_path)
    memory_root = tmp_path / "memories"
    memory_root.mkdir()
    (memory_root / paths.MEMORY_SUMMARY_FILE).write_text("v1\n\n## User preferences\n- prefers pnpm\n", encoding="utf-8")

    result = cli(tmp_path, "inject", "--db", f"sqlite:///{tmp_path / 'state.sqlite'}", "--memory-root", str(memory_root), codex_home=home)

    assert result.returncode == 0, result.stderr
    assert "- prefers pnpm (memory_summary.md:4)" in result.stdout
    assert not (tmp_path / "state.sqlite").exists()


# ---- doctor: "not yet" is not a failure --------------------------------------------------------


def doctor_lines(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    assert "Traceback" not in result.stderr, result.stderr
    return {line.split("] ", 1)[1].split(":", 1)[0]: line for line in result.stdout.splitlines()}


def test_doctor_says_not_yet_for_the_state_db_and_memory_root_the_first_run_creates(tmp_path: Path) -> None:
    home = codex_home_with_config(tmp_path)

    lines = doctor_lines(cli(tmp_path, "doctor", codex_home=home))

    assert lines["state db"].startswith("[not yet] state db: no state DB yet at ") and "the first run creates it" in lines["state db"]
    assert lines["memory root"] == f"[not yet] memory root: {home / 'memories'} does not exist yet: the first phase 2 creates it"
    assert not (home / paths.STATE_DIR).exists()


def test_doctor_fails_a_memory_root_that_cannot_be_created(tmp_path: Path) -> None:
    home = codex_home_with_config(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")

    result = cli(tmp_path, "doctor", "--memory-root", str(blocker / "memories"), codex_home=home)

    assert result.returncode == 1
    assert doctor_lines(result)["memory root"] == f"[FAIL] memory root: {blocker / 'memories'} does not exist, and it cannot be created: {blocker} is not a folder"


def test_doctor_of_a_mistyped_home_fails_it_and_runs_no_check_that_would_write_there(tmp_path: Path) -> None:
    typo = tmp_path / "user-home" / ".codx"

    result = cli(tmp_path, "doctor", codex_home=typo)

    assert result.returncode == 1
    lines = doctor_lines(result)
    assert lines["codex home"].startswith(f"[FAIL] codex home: the Codex home {typo} does not exist")
    # Their fixes (`install`, a first run) would write into the mistyped folder.
    for name in ("hooks", "mcp server", "state db", "memory root"):
        assert name not in lines
    assert not typo.exists()
