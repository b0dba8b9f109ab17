"""Where our settings come from: the names, locations and precedence every entry point shares.

Contract:
- One place for what both the pydantic settings tree (`settings.py`: the CLI, the flows, the MCP
  server) and the Codex hooks (`read/hooks.py`, which must start without pydantic) need to agree
  on: the environment prefix and aliases, the default Codex home, our own TOML file's name and how
  it is found, the state DB URL's shape, and the fields the hooks read, with their defaults,
  bounds and descriptions (`HOOK_INT_SETTINGS`). `settings.py` builds its fields from these.
- `resolve_hook_settings(flags, environ) -> HookSettings`: what the hooks read (Codex home, memory
  root, state DB URL, the SessionStart and prompt-recall budgets) with the CLI's precedence:
  flags > environment (`CODEX_MEMORIES_*`, `CODEX_HOME`; names matched case-insensitively, as
  pydantic-settings does) > our TOML file (`CODEX_MEMORIES_CONFIG_FILE`, else
  `$CODEX_HOME/codex-memories.toml`) > defaults. Codex's `config.toml` sets none of these fields.
  Reads the environment mapping and at most one TOML file (`tomllib`); writes nothing. A bad value
  is a `SettingsError`, one line naming the key and its allowed range, as `Settings` words it.
  tests/test_settings_sources.py proves the hook and the CLI resolve the same values.
- Standard library only, on purpose: the hook imports this module on every call.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codex_memories import paths

ENV_PREFIX = "CODEX_MEMORIES_"
DEFAULT_CODEX_HOME = Path("~/.codex")
OWN_CONFIG_FILE_NAME = "codex-memories.toml"
CONFIG_FILE_ENV = f"{ENV_PREFIX}CONFIG_FILE"

# Fields that also answer to a name without our prefix, first name found wins (the order
# pydantic-settings tries a field's `AliasChoices`). Environment names only: with the field name
# among the choices, pydantic-settings also took it as an environment name (case-insensitively),
# so a bare `CODEX_HOME` beat `CODEX_MEMORIES_CODEX_HOME` and a stray `BASE_URL` or `API_KEY`
# became ours. Code and our TOML file still use the field name (`populate_by_name`).
ENV_ALIASES: dict[str, tuple[str, ...]] = {
    "codex_home": (f"{ENV_PREFIX}CODEX_HOME", "CODEX_HOME"),
    "api_key": (f"{ENV_PREFIX}API_KEY", "OPENAI_API_KEY"),
    "base_url": (f"{ENV_PREFIX}BASE_URL", "OPENAI_BASE_URL"),
    "s3_endpoint_url": (f"{ENV_PREFIX}S3_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
}

# The state DB's backends (docs/settings.md): SQLite by default, PostgreSQL for teams, with any
# driver SQLAlchemy knows for them. Anything else is a bad setting at load time, not a driver
# import error or an unparsable URL in the middle of a run.
DB_URL_SHAPE = re.compile(r"^(?:sqlite|postgresql|postgres)(?:\+\w+)?://")
DB_URL_RULE = "must be a SQLite (sqlite:///PATH) or PostgreSQL (postgresql+psycopg://...) URL"
# user:password@ in a URL, for error messages.
URL_PASSWORD = re.compile(r"(//[^:/@]*):[^@/]*@")


class SettingsError(ValueError):
    """A bad setting: the message is one line naming the key and its allowed values."""


@dataclass(frozen=True)
class IntSetting:
    """An integer knob's name, default, bounds (inclusive) and description, for both resolvers."""

    name: str
    default: int
    low: int
    high: int
    description: str


SESSION_START_BUDGET = IntSetting(
    "session_start_budget_tokens",
    2_400,
    100,
    100_000,
    "Budget of the whole SessionStart text (rules, how-to, index), in Codex's count for a hook's "
    "text (UTF-8 bytes / 4). The default stays under the 2,500 at which Codex cuts a hook's context "
    "(a little under: a later Codex may count differently); above 2,500, `install` sets the handler's "
    "additionalContextLimit to the budget.",
)
PROMPT_RECALL_BUDGET = IntSetting(
    "prompt_recall_budget_tokens",
    400,
    20,
    20_000,
    "Token budget of the memory lines recalled for one prompt (the UserPromptSubmit hook).",
)
HOOK_INT_SETTINGS = (SESSION_START_BUDGET, PROMPT_RECALL_BUDGET)


def env_names(field: str) -> tuple[str, ...]:
    """The environment variables that set `field`, highest first."""
    return ENV_ALIASES.get(field, (f"{ENV_PREFIX}{field.upper()}",))


def env_value(field: str, environ: Mapping[str, str]) -> str | None:
    lowered = {name.lower(): value for name, value in environ.items()}
    for name in env_names(field):
        if name.lower() in lowered:
            return lowered[name.lower()]
    return None


def own_config_file(
    config_file: str | Path | None, codex_home: str | Path | None, environ: Mapping[str, str] | None = None
) -> Path | None:
    """Our TOML settings file: the one given (flag, then `CODEX_MEMORIES_CONFIG_FILE`), which must
    exist, else `<codex home>/codex-memories.toml` when it exists, else None. `codex_home` is the
    flag's value; the environment's and the default are looked up here."""
    environ = os.environ if environ is None else environ
    explicit = config_file or env_value("config_file", environ)
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise SettingsError(f"config_file: {path} does not exist")
        return path
    home = codex_home or env_value("codex_home", environ) or DEFAULT_CODEX_HOME
    candidate = Path(home).expanduser() / OWN_CONFIG_FILE_NAME
    return candidate if candidate.is_file() else None


def read_own_config_file(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise SettingsError(f"config_file: cannot read {path}: {error}") from None


def check_db_url(value: str) -> str:
    """`value` when it names a database we run on; else a one-line `SettingsError`."""
    if not DB_URL_SHAPE.match(value):
        shown = URL_PASSWORD.sub(r"\1:***@", value)
        raise SettingsError(f"invalid setting db_url={shown!r}: {DB_URL_RULE}")
    return value


# -- what the hooks read ---------------------------------------------------------------------------

_INTEGER_TEXT = re.compile(r"\s*([+-]?[0-9](?:_?[0-9])*)(?:\.0*)?\s*")


@dataclass(frozen=True)
class HookSettings:
    codex_home: Path
    memory_root: Path
    db_url: str
    session_start_budget_tokens: int
    prompt_recall_budget_tokens: int


def resolve_hook_settings(flags: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> HookSettings:
    """The hooks' settings from `flags` (field name -> value; None or missing = not given), the
    environment, our TOML file and the defaults, in that order."""
    environ = os.environ if environ is None else environ
    toml_path = own_config_file(flags.get("config_file"), flags.get("codex_home"), environ)
    file_values = read_own_config_file(toml_path) if toml_path is not None else {}

    def given(field: str) -> Any:
        for value in (flags.get(field), env_value(field, environ), file_values.get(field)):
            if value is not None:
                return value
        return None

    codex_home = Path(_text(given("codex_home") or DEFAULT_CODEX_HOME, "codex_home")).expanduser()
    memory_root = _text(given("memory_root"), "memory_root") or str(codex_home / paths.MEMORIES_DIR)
    db_url = given("db_url")
    budgets = {setting.name: _bounded_int(given(setting.name), setting) for setting in HOOK_INT_SETTINGS}
    return HookSettings(
        codex_home=codex_home,
        memory_root=Path(memory_root).expanduser(),
        db_url=check_db_url(_text(db_url, "db_url")) if db_url is not None else paths.default_db_url(codex_home),
        **budgets,
    )


def _text(value: Any, field: str) -> str:
    if isinstance(value, Path):
        return str(value)
    if value is not None and not isinstance(value, str):
        raise SettingsError(f"invalid setting {field}={value!r}: Input should be a valid string")
    return value or ""


def _bounded_int(value: Any, setting: IntSetting) -> int:
    if value is None:
        return setting.default
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and (match := _INTEGER_TEXT.fullmatch(value)) and match.group(1).isascii():
        number = int(match.group(1))
    if number is None:
        raise SettingsError(f"invalid setting {setting.name}={value!r}: Input should be a valid integer")
    if number < setting.low or number > setting.high:
        rule = f"greater than or equal to {setting.low}" if number < setting.low else f"less than or equal to {setting.high}"
        raise SettingsError(f"invalid setting {setting.name}={value!r}: Input should be {rule} (allowed: {setting.low}..{setting.high})")
    return number
