"""The hook and the CLI resolve every setting the hook reads to the same value, from the same
flags, environment and TOML file, and refuse the same bad values."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

from codex_memories.read.hook_log import HookOutcome, hook_log_path
from codex_memories.read.hooks import hook_options, parse_hook_argv, run
from codex_memories.settings import load_runtime_config
from codex_memories.settings_sources import SettingsError, resolve_hook_settings


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No CODEX_* variable from the machine; HOME is an empty folder (so `~/.codex` is ours)."""
    for name in [n for n in os.environ if n.upper().startswith("CODEX_")]:
        monkeypatch.delenv(name)
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def cli_values(**flags: Any) -> dict[str, Any]:
    settings = load_runtime_config(**flags).settings
    return {
        "codex_home": settings.codex_home_path,
        "memory_root": Path(settings.resolved_memory_root).expanduser(),
        "db_url": settings.resolved_db_url,
        "session_start_budget_tokens": settings.session_start_budget_tokens,
        "prompt_recall_budget_tokens": settings.prompt_recall_budget_tokens,
    }


def hook_values(**flags: Any) -> dict[str, Any]:
    return dataclasses.asdict(resolve_hook_settings(flags))


def write_toml(path: Path, values: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{key} = {json.dumps(value)}" for key, value in values.items()]
    path.write_text("# ours\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return path


# Each case: environment, our TOML file in the resolved Codex home (or None), flags, and what
# the hook must read (None: only "the same as the CLI").
CASES = {
    "defaults": ({}, None, {}, {"session_start_budget_tokens": 2_400, "prompt_recall_budget_tokens": 400}),
    "CODEX_HOME": ({"CODEX_HOME": "{tmp}/home-a"}, None, {}, {"memory_root": "{tmp}/home-a/memories"}),
    "prefixed home beats CODEX_HOME": (
        {"CODEX_HOME": "{tmp}/home-a", "CODEX_MEMORIES_CODEX_HOME": "{tmp}/home-b"}, None, {}, {"codex_home": "{tmp}/home-b"},
    ),
    "our TOML file": (
        {"CODEX_HOME": "{tmp}/home-a"},
        {"memory_root": "{tmp}/from-toml", "db_url": "sqlite:///{tmp}/toml.sqlite", "session_start_budget_tokens": 3_000, "prompt_recall_budget_tokens": 250},
        {},
        {"memory_root": "{tmp}/from-toml", "session_start_budget_tokens": 3_000, "prompt_recall_budget_tokens": 250},
    ),
    "environment beats the file": (
        {"CODEX_HOME": "{tmp}/home-a", "CODEX_MEMORIES_MEMORY_ROOT": "{tmp}/from-env", "CODEX_MEMORIES_SESSION_START_BUDGET_TOKENS": " 3_500 "},
        {"memory_root": "{tmp}/from-toml", "session_start_budget_tokens": 3_000},
        {},
        {"memory_root": "{tmp}/from-env", "session_start_budget_tokens": 3_500},
    ),
    "flags beat the environment": (
        {"CODEX_HOME": "{tmp}/home-a", "CODEX_MEMORIES_MEMORY_ROOT": "{tmp}/from-env", "CODEX_MEMORIES_DB_URL": "sqlite:///{tmp}/env.sqlite"},
        {"prompt_recall_budget_tokens": 250},
        {"memory_root": "{tmp}/from-flag", "db_url": "postgresql+psycopg://u:pw@db.example/m", "prompt_recall_budget_tokens": "600"},
        {"memory_root": "{tmp}/from-flag", "db_url": "postgresql+psycopg://u:pw@db.example/m", "prompt_recall_budget_tokens": 600},
    ),
    "a flag's codex home finds its TOML file": (
        {"CODEX_HOME": "{tmp}/home-a"}, {"memory_root": "{tmp}/b-root"}, {"codex_home": "{tmp}/home-b"}, {"memory_root": "{tmp}/b-root"},
    ),
    "the config file named in the environment": (
        {"CODEX_HOME": "{tmp}/home-a", "CODEX_MEMORIES_CONFIG_FILE": "{tmp}/elsewhere.toml"},
        None,
        {},
        {"memory_root": "{tmp}/elsewhere-root"},
    ),
    "names are case-insensitive": ({"codex_memories_memory_root": "{tmp}/lower"}, None, {}, {"memory_root": "{tmp}/lower"}),
    "a tilde expands": ({"CODEX_MEMORIES_MEMORY_ROOT": "~/mem"}, None, {}, {"memory_root": "{home}/mem"}),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_the_hook_and_the_cli_resolve_every_field_the_hook_reads_alike(
    case: str, clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    environment, toml, flags, expected = CASES[case]

    def fill(value: Any) -> Any:
        return value.replace("{tmp}", str(tmp_path)).replace("{home}", str(clean_env)) if isinstance(value, str) else value

    for name, value in environment.items():
        monkeypatch.setenv(name, fill(value))
    flags = {key: fill(value) for key, value in flags.items()}
    write_toml(tmp_path / "elsewhere.toml", {"memory_root": fill("{tmp}/elsewhere-root")})
    if toml is not None:
        home = Path(flags.get("codex_home") or os.environ["CODEX_HOME"])
        write_toml(home / "codex-memories.toml", {key: fill(value) for key, value in toml.items()})

    hook, cli = hook_values(**flags), cli_values(**flags)

    assert hook == cli
    for name, value in expected.items():
        assert hook[name] == (Path(fill(value)) if name in ("codex_home", "memory_root") else value)


@pytest.mark.parametrize(
    ("environment", "toml", "flags", "message"),
    [
        ({"CODEX_MEMORIES_SESSION_START_BUDGET_TOKENS": "50"}, None, {}, "session_start_budget_tokens='50'"),
        ({}, {"prompt_recall_budget_tokens": 100_000}, {}, "prompt_recall_budget_tokens=100000"),
        ({}, None, {"prompt_recall_budget_tokens": "many"}, "prompt_recall_budget_tokens='many'"),
        ({"CODEX_MEMORIES_DB_URL": "mysql://u:secret@h/db"}, None, {}, "db_url="),
        ({}, {"memory_root": 7}, {}, "memory_root=7"),
        ({"CODEX_MEMORIES_CONFIG_FILE": "/nonexistent/ours.toml"}, None, {}, "config_file: /nonexistent/ours.toml does not exist"),
    ],
)
def test_the_hook_and_the_cli_refuse_the_same_bad_values_in_one_line(
    environment: dict[str, str], toml: dict[str, Any] | None, flags: dict[str, Any], message: str,
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "home"))
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    if toml is not None:
        write_toml(tmp_path / "home" / "codex-memories.toml", toml)
    with pytest.raises(SettingsError) as from_cli:
        cli_values(**flags)
    with pytest.raises(SettingsError) as from_hook:
        hook_values(**flags)
    for error in (from_cli.value, from_hook.value):
        assert message in str(error) and "\n" not in str(error)
    assert "secret" not in str(from_hook.value) and "secret" not in str(from_cli.value)


def test_the_hook_reads_its_budgets_and_memory_root_from_our_toml_file_and_flags_still_win(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    codex_home = tmp_path / "home"
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    write_toml(codex_home / "codex-memories.toml", {"memory_root": str(tmp_path / "mem"), "session_start_budget_tokens": 900})

    from_settings = hook_options(parse_hook_argv(["SessionStart"]))
    flagged = hook_options(parse_hook_argv(["SessionStart", "--budget", "700", "--memory-root", str(tmp_path / "other")]))

    assert (from_settings.memory_root, from_settings.summary_budget_tokens) == (tmp_path / "mem", 900)
    assert (flagged.memory_root, flagged.summary_budget_tokens) == (tmp_path / "other", 700)
    assert from_settings.codex_home == codex_home


def test_a_bad_setting_makes_the_hook_print_an_empty_object_and_log_failed_settings(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    codex_home = tmp_path / "home"
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    monkeypatch.setenv("CODEX_MEMORIES_PROMPT_RECALL_BUDGET_TOKENS", "lots")

    assert run(["UserPromptSubmit"], json.dumps({"prompt": "hi"})) == "{}"

    [line] = hook_log_path(codex_home).read_text(encoding="utf-8").splitlines()
    assert f"UserPromptSubmit {HookOutcome.failed_settings.value}" in line and "prompt_recall_budget_tokens='lots'" in line
    assert "prompt_recall_budget_tokens" in capsys.readouterr().err


def test_bare_api_key_and_base_url_variables_are_not_ours_and_the_prefixed_codex_home_wins(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("API_KEY", "sk-someone-elses")
    monkeypatch.setenv("BASE_URL", "http://unrelated.example")
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "a"))
    monkeypatch.setenv("CODEX_MEMORIES_CODEX_HOME", str(tmp_path / "b"))
    settings = load_runtime_config().settings
    assert (settings.api_key, settings.base_url) == (None, None)
    assert settings.codex_home_path == resolve_hook_settings({}).codex_home == tmp_path / "b"


# -- settings pinned at install (issue 35) ---------------------------------------------------------


def pin(tmp_path: Path, codex_home: Path, **values: Any) -> dict[str, str]:
    """A pinned-settings file as install writes it, and the environment the launcher adds."""
    from codex_memories.settings_sources import PINNED_SETTINGS_ENV, pinned_settings_path, render_pinned_settings

    path = pinned_settings_path(codex_home)
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"codex_home": str(codex_home), "memory_root": str(codex_home / "memories"), "db_url": f"sqlite:///{tmp_path}/db", **values}
    path.write_text(render_pinned_settings(document), encoding="utf-8")
    return {PINNED_SETTINGS_ENV: str(path)}


def test_a_hook_started_without_our_variables_reads_every_setting_install_pinned(clean_env: Path, tmp_path: Path) -> None:
    codex_home = tmp_path / "home"
    toml = write_toml(tmp_path / "elsewhere.toml", {"prompt_recall_budget_tokens": 321})
    environ = pin(
        tmp_path, codex_home, memory_root=str(tmp_path / "mem"), db_url=f"sqlite:///{tmp_path}/pinned.db", config_file=str(toml),
        session_start_budget_tokens=1_234,
    )

    settings = resolve_hook_settings({}, environ)

    assert (settings.codex_home, settings.memory_root, settings.db_url) == (codex_home, tmp_path / "mem", f"sqlite:///{tmp_path}/pinned.db")
    assert (settings.session_start_budget_tokens, settings.prompt_recall_budget_tokens) == (1_234, 321)


def test_a_variable_in_codex_s_environment_beats_the_pinned_value_and_the_pinned_value_beats_our_toml_file(
    clean_env: Path, tmp_path: Path
) -> None:
    codex_home = tmp_path / "home"
    write_toml(codex_home / "codex-memories.toml", {"memory_root": str(tmp_path / "from-toml"), "db_url": f"sqlite:///{tmp_path}/toml.db"})
    environ = {**pin(tmp_path, codex_home, memory_root=str(tmp_path / "pinned")), "CODEX_MEMORIES_DB_URL": f"sqlite:///{tmp_path}/env.db"}

    settings = resolve_hook_settings({}, environ)

    assert settings.memory_root == tmp_path / "pinned"
    assert settings.db_url == f"sqlite:///{tmp_path}/env.db"


@pytest.mark.parametrize("content", [None, "{not json", "[1, 2]"])
def test_a_pinned_settings_file_that_is_gone_or_broken_is_a_settings_error_that_says_install_again(
    clean_env: Path, tmp_path: Path, content: str | None
) -> None:
    from codex_memories.settings_sources import PINNED_SETTINGS_ENV

    path = tmp_path / "pinned.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(SettingsError, match="codex-memories install"):
        resolve_hook_settings({}, {PINNED_SETTINGS_ENV: str(path)})


def test_without_a_pinned_file_the_hook_keeps_the_cli_precedence(clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CODEX_MEMORIES_MEMORY_ROOT", str(tmp_path / "mem"))
    assert hook_values() == {**cli_values(), "memory_root": tmp_path / "mem"}


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:///state.db", "sqlite:///{cwd}/state.db"),
        ("sqlite:////abs/state.db", "sqlite:////abs/state.db"),
        ("sqlite+pysqlite:///rel/s.db", "sqlite+pysqlite:///{cwd}/rel/s.db"),
        ("sqlite:///:memory:", "sqlite:///:memory:"),
        ("postgresql+psycopg://u:p@h/db", "postgresql+psycopg://u:p@h/db"),
    ],
)
def test_install_pins_a_relative_sqlite_path_as_an_absolute_one(url: str, expected: str) -> None:
    from codex_memories.settings_sources import absolute_db_url

    assert absolute_db_url(url) == expected.format(cwd=Path.cwd())
