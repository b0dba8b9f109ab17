"""Settings: Codex's config.toml (read only, clamped) and our own layered knobs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codex_memories.settings import (
    CodexMemoriesConfig,
    SettingsError,
    load_runtime_config,
    read_codex_memories_config,
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in list(os.environ):
        if name.startswith("CODEX_MEMORIES_") or name in {"OPENAI_API_KEY", "OPENAI_BASE_URL"}:
            monkeypatch.delenv(name)
    home = tmp_path / "codex_home"
    home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(home))
    return home


def write_config(home: Path, text: str) -> Path:
    path = home / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_missing_config_gives_codex_code_defaults(clean_environment: Path) -> None:
    assert read_codex_memories_config(clean_environment) == CodexMemoriesConfig()
    defaults = CodexMemoriesConfig()
    assert (defaults.max_rollout_age_days, defaults.max_rollouts_per_startup) == (10, 2)
    assert defaults.feature_enabled is False


def test_codex_clamps_out_of_range_values_as_codex_does(clean_environment: Path) -> None:
    write_config(
        clean_environment,
        "[features]\nmemories = true\n[memories]\nmax_raw_memories_for_consolidation = 0\n"
        "max_rollouts_per_startup = 0\nmin_rate_limit_remaining_percent = 101\n"
        "max_unused_days = 9999\nmax_rollout_age_days = -4\nmin_rollout_idle_hours = 100\n",
    )
    config = read_codex_memories_config(clean_environment)
    assert config.feature_enabled is True
    assert config.max_raw_memories_for_consolidation == 1
    assert config.max_rollouts_per_startup == 1
    assert config.min_rate_limit_remaining_percent == 100
    assert config.max_unused_days == 365
    assert config.max_rollout_age_days == 0
    assert config.min_rollout_idle_hours == 48


def test_negative_rate_limit_percent_clamps_to_zero(clean_environment: Path) -> None:
    write_config(clean_environment, "[memories]\nmin_rate_limit_remaining_percent = -1\n")
    assert read_codex_memories_config(clean_environment).min_rate_limit_remaining_percent == 0


def test_legacy_alias_for_disable_on_external_context(clean_environment: Path) -> None:
    write_config(clean_environment, "[memories]\nno_memories_if_mcp_or_web_search = true\n")
    assert read_codex_memories_config(clean_environment).disable_on_external_context is True


def test_codex_config_is_never_written(clean_environment: Path) -> None:
    path = write_config(clean_environment, "[features]\nmemories = true\n")
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    load_runtime_config(max_rollouts_per_startup=16, concurrency=4)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def test_precedence_cli_over_env_over_own_file_over_codex(
    clean_environment: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(clean_environment, "[memories]\nmax_rollouts_per_startup = 3\n")
    assert load_runtime_config().memories.max_rollouts_per_startup == 3
    (clean_environment / "codex-memories.toml").write_text(
        "max_rollouts_per_startup = 5\nconcurrency = 3\n", encoding="utf-8"
    )
    config = load_runtime_config()
    assert (config.memories.max_rollouts_per_startup, config.settings.concurrency) == (5, 3)
    monkeypatch.setenv("CODEX_MEMORIES_MAX_ROLLOUTS_PER_STARTUP", "7")
    assert load_runtime_config().memories.max_rollouts_per_startup == 7
    assert load_runtime_config(max_rollouts_per_startup=9).memories.max_rollouts_per_startup == 9


def test_bad_value_names_the_key_and_its_range(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SettingsError, match=r"concurrency=100.*allowed: 1\.\.64"):
        load_runtime_config(concurrency=100)
    monkeypatch.setenv("CODEX_MEMORIES_PHASE2_LEASE_SECONDS", "soon")
    with pytest.raises(SettingsError, match="phase2_lease_seconds"):
        load_runtime_config()


def test_unknown_key_in_own_file_is_an_error(clean_environment: Path) -> None:
    (clean_environment / "codex-memories.toml").write_text("concurrencyy = 3\n", encoding="utf-8")
    with pytest.raises(SettingsError, match="concurrencyy"):
        load_runtime_config()


def test_bad_codex_value_type_is_an_error(clean_environment: Path) -> None:
    write_config(clean_environment, '[memories]\nmax_unused_days = "thirty"\n')
    with pytest.raises(SettingsError, match="max_unused_days"):
        read_codex_memories_config(clean_environment)


def test_provider_is_heuristic_without_key_or_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_runtime_config().provider_name == "heuristic"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert load_runtime_config().provider_name == "openai"
    assert load_runtime_config(provider="heuristic").provider_name == "heuristic"


def test_api_key_is_secret_in_repr_and_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-abcdefghijklmnopqrstuvwxyz0123")
    config = load_runtime_config()
    assert "abcdefghijklmnop" not in repr(config)
    assert config.settings.api_key is not None


def test_defaults_live_under_codex_home(clean_environment: Path) -> None:
    settings = load_runtime_config().settings
    assert settings.resolved_db_url == f"sqlite:///{clean_environment}/codex-memories/state.sqlite"
    assert settings.resolved_memory_root == str(clean_environment / "memories")


def test_cli_bad_setting_is_one_line_and_exit_code_2(clean_environment: Path, tmp_path: Path) -> None:
    db_file = tmp_path / "state.sqlite"
    result = subprocess.run(
        [sys.executable, "-m", "codex_memories_cli.main", "phase1", "--concurrency", "0", "--db", f"sqlite:///{db_file}"],
        capture_output=True,
        text=True,
        env={**os.environ, "CODEX_HOME": str(clean_environment)},
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "concurrency" in result.stderr and "1..64" in result.stderr
    assert "Traceback" not in result.stderr
    assert not db_file.exists()


@pytest.mark.parametrize(
    ("arguments", "fragments"),
    [
        (["phase1", "--concurrency", "abc"], ["Invalid value for '--concurrency'", "'codex-memories phase1 --help'"]),
        (["phase1", "--no-such-option"], ["No such option: --no-such-option", "'codex-memories phase1 --help'"]),
        (["phase1", "stray"], ["unexpected extra argument", "'codex-memories phase1 --help'"]),
        (["recall"], ["Missing option '--query'", "'codex-memories recall --help'"]),
        (["no-such-command"], ["No such command 'no-such-command'", "'codex-memories --help'"]),
        (["serve", "--port", "99999"], ["Invalid value for '--port'", "65535", "'codex-memories serve --help'"]),
    ],
    ids=["bad-value", "unknown-option", "extra-argument", "missing-option", "unknown-command", "port-out-of-range"],
)
def test_cli_command_line_error_is_one_line_and_exit_code_2(
    clean_environment: Path, tmp_path: Path, arguments: list[str], fragments: list[str]
) -> None:
    """Click's own handling prints these as a framed box of several lines; ours, as one line."""
    db_file = tmp_path / "state.sqlite"
    result = subprocess.run(
        [sys.executable, "-m", "codex_memories_cli.main", *arguments],
        capture_output=True,
        text=True,
        env={**os.environ, "CODEX_HOME": str(clean_environment), "CODEX_MEMORIES_DB_URL": f"sqlite:///{db_file}"},
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("codex-memories: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0]
    assert not db_file.exists()


def test_cli_help_and_no_arguments_still_print_the_help(clean_environment: Path) -> None:
    environment = {**os.environ, "CODEX_HOME": str(clean_environment)}
    for arguments, code in ((["--help"], 0), ([], 2)):
        result = subprocess.run(
            [sys.executable, "-m", "codex_memories_cli.main", *arguments], capture_output=True, text=True, env=environment, timeout=60
        )
        assert result.returncode == code, result.stderr
        assert "Usage: codex-memories" in result.stdout and "phase1" in result.stdout
        assert result.stderr == ""


@pytest.mark.parametrize(
    "url", ["sqlite:///state.sqlite", "sqlite://", "sqlite+pysqlite:///x.sqlite", "postgresql://h/db", "postgres://h/db", "postgresql+psycopg://u:p@h:5432/db"]
)
def test_db_url_of_sqlite_or_postgresql_is_taken(url: str) -> None:
    assert load_runtime_config(db_url=url).settings.resolved_db_url == url


@pytest.mark.parametrize("url", ["nonsense", "state.sqlite", "mysql://h/db", "mongodb://h/db", "://x", "SQLITE:///x.sqlite"])
def test_db_url_of_another_kind_is_a_bad_setting_named_in_one_line(url: str) -> None:
    with pytest.raises(SettingsError) as raised:
        load_runtime_config(db_url=url)
    message = str(raised.value)
    assert message.startswith(f"invalid setting db_url={url!r}: ") and "SQLite" in message and "PostgreSQL" in message
    assert "\n" not in message


def test_a_refused_db_url_does_not_show_its_password() -> None:
    with pytest.raises(SettingsError) as raised:
        load_runtime_config(db_url="mysql://bob:hunter2-secret@db.example:3306/memories")
    assert "hunter2" not in str(raised.value)
    assert "mysql://bob:***@db.example:3306/memories" in str(raised.value)


def test_cli_error_from_an_unreachable_database_is_one_line(clean_environment: Path) -> None:
    """The driver's message spans several lines; the CLI prints it as one."""
    result = subprocess.run(
        [sys.executable, "-m", "codex_memories_cli.main", "status", "--db", "postgresql+psycopg://nobody@127.0.0.1:1/none"],
        capture_output=True,
        text=True,
        env={**os.environ, "CODEX_HOME": str(clean_environment)},
        timeout=60,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("codex-memories: cannot use the state database: "), result.stderr
    assert "Connection refused" in lines[0] and "sqlalche.me" not in lines[0] and "psycopg.OperationalError" not in lines[0]
    assert "Traceback" not in result.stderr


def test_a_value_the_overrides_refuse_is_a_one_line_setting_error_like_any_other() -> None:
    from codex_memories.settings import SettingsOverrides

    with pytest.raises(SettingsError) as raised:
        SettingsOverrides.checked(provider="gpt", concurrency="many")
    message = str(raised.value)
    assert "\n" not in message and "pydantic" not in message
    assert "invalid setting provider='gpt': Input should be 'auto', 'openai', 'codex' or 'heuristic'" in message
    assert "invalid setting concurrency='many'" in message and "(allowed: 1..64)" in message


@pytest.mark.parametrize("content", [b"x = [\n", b"\xff\xfe"], ids=["not-toml", "not-utf8"])
def test_our_settings_file_that_is_not_toml_is_a_one_line_setting_error(clean_environment: Path, content: bytes) -> None:
    own = clean_environment / "codex-memories.toml"
    own.write_bytes(content)

    with pytest.raises(SettingsError) as raised:
        load_runtime_config()
    assert str(raised.value).startswith(f"{own}: not valid TOML (") and "\n" not in str(raised.value)
