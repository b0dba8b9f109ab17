"""Where our settings come from: the names, locations and precedence every entry point shares.

Contract:
- One place for what both the pydantic settings tree (`settings.py`: the CLI, the flows, the MCP
  server) and the Codex hooks (`read/hooks.py`, which must start without pydantic) need to agree
  on: the environment prefix and aliases, the default Codex home, our own TOML file's name and how
  it is found, the state DB URL's shape, and the fields the hooks read, with their defaults,
  bounds and descriptions (`HOOK_INT_SETTINGS`). `settings.py` builds its fields from these.
- `resolve_hook_settings(flags, environ) -> HookSettings`: what the hooks read (Codex home, memory
  root, state DB URL, the SessionStart and prompt-recall budgets): flags > environment
  (`CODEX_MEMORIES_*`, `CODEX_HOME`; names matched case-insensitively, as pydantic-settings does)
  > the settings `install` pinned (`read_pinned_settings`, found through `PINNED_SETTINGS_ENV`,
  which only the hook launcher sets) > our TOML file (`CODEX_MEMORIES_CONFIG_FILE`, else the pinned
  one, else `$CODEX_HOME/codex-memories.toml`) > defaults. Without a pinned file that is the CLI's
  precedence exactly. Codex's `config.toml` sets none of these fields. Reads the environment
  mapping, at most one pinned file and one TOML file; writes nothing. A bad value is a
  `SettingsError`, one line naming the key and its allowed range, as `Settings` words it.
  tests/test_settings_sources.py proves the hook and the CLI resolve the same values.
- Pinned settings (issue 35): Codex runs hooks with its own environment, which in an IDE or a
  script holds none of our variables; `install` therefore records every hook setting it resolved
  (`pinned_settings_document`, written by `codex.install`: JSON, mode 0600 as the DB URL
  may hold a password) in `$CODEX_HOME/codex-memories/pinned-settings.json`, and a hook started without our variables
  reads the memory `run` writes. A variable set in Codex's own environment still wins: the person
  who sets one for a session means it (`doctor` says when the two differ).
- `python -m codex_memories.settings_sources` prints what `resolve_hook_settings({})` gives in
  its environment, as JSON: how `doctor` asks the hook launcher what a hook would read.
- Standard library only, on purpose: the hook imports this module on every call.
"""

from __future__ import annotations

import json
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
# Set only by the hook launcher: the pinned-settings file of the Codex home it belongs to.
PINNED_SETTINGS_ENV = f"{ENV_PREFIX}PINNED_SETTINGS"
PINNED_SETTINGS_FILE = "pinned-settings.json"
PINNED_FIELDS = ("codex_home", "memory_root", "db_url", "config_file", "session_start_budget_tokens", "prompt_recall_budget_tokens")
REINSTALL_COMMAND = "codex-memories install"

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
    environment, the settings `install` pinned, our TOML file and the defaults, in that order."""
    environ = os.environ if environ is None else environ
    pinned_file = env_value("pinned_settings", environ)
    pinned = read_pinned_settings(Path(pinned_file)) if pinned_file else {}
    config_file = flags.get("config_file") or env_value("config_file", environ)
    if not config_file and pinned.get("config_file") and Path(pinned["config_file"]).is_file():
        config_file = pinned["config_file"]  # gone since install: as for the CLI, no file is no error
    codex_home_given = flags.get("codex_home") or env_value("codex_home", environ) or pinned.get("codex_home")
    toml_path = own_config_file(config_file, codex_home_given, environ)
    file_values = read_own_config_file(toml_path) if toml_path is not None else {}

    def given(field: str) -> Any:
        for value in (flags.get(field), env_value(field, environ), pinned.get(field), file_values.get(field)):
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


# -- what install pins ------------------------------------------------------------------------------


def pinned_settings_path(codex_home: Path) -> Path:
    return Path(codex_home) / paths.STATE_DIR / PINNED_SETTINGS_FILE


def pinned_settings_document(settings: HookSettings, config_file: Path | None, sources: Mapping[str, str]) -> dict[str, Any]:
    """What `install` records: every hook setting as resolved (absolute paths), the TOML file it
    read (None: none), and where each came from (`flag`, `environment`, `config file`, `default`)
    so that `doctor` can say it."""
    return {
        "codex_home": str(Path(settings.codex_home).absolute()),
        "memory_root": str(Path(settings.memory_root).absolute()),
        "db_url": settings.db_url,
        "config_file": str(Path(config_file).absolute()) if config_file is not None else None,
        "session_start_budget_tokens": settings.session_start_budget_tokens,
        "prompt_recall_budget_tokens": settings.prompt_recall_budget_tokens,
        "sources": dict(sources),
    }


def render_pinned_settings(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def read_pinned_settings(path: Path) -> dict[str, Any]:
    """The pinned values (only the fields in `PINNED_FIELDS`, None dropped); a missing or broken
    file is a `SettingsError` whose fix is to install again (the launcher names a file install wrote)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SettingsError(f"the settings pinned by install are gone ({path}): run `{REINSTALL_COMMAND}`") from None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise SettingsError(f"cannot read the settings pinned by install ({path}: {error}): run `{REINSTALL_COMMAND}`") from None
    if not isinstance(document, dict):
        raise SettingsError(f"{path} is not the settings install pins: run `{REINSTALL_COMMAND}`")
    return {field: document[field] for field in PINNED_FIELDS if document.get(field) is not None}


def absolute_db_url(url: str) -> str:
    """`url` with a relative SQLite path made absolute: a hook runs in the session's folder."""
    scheme, separator, database = url.partition(":///")
    if scheme.startswith("sqlite") and separator and database and not database.startswith(("/", ":memory:", "~")):
        return f"{scheme}:///{Path(database).absolute()}"
    if scheme.startswith("sqlite") and database.startswith("~"):
        return f"{scheme}:///{Path(database).expanduser()}"
    return url


def setting_source(field: str, flags: Mapping[str, Any], environ: Mapping[str, str], file_values: Mapping[str, Any]) -> str:
    """Where the value of `field` came from, in the CLI's precedence: for what install records."""
    if flags.get(field) is not None:
        return "flag"
    if env_value(field, environ) is not None:
        return "environment"
    if file_values.get(field) is not None:
        return "config file"
    return "default"


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


def main() -> None:
    """`python -m codex_memories.settings_sources`: the hook settings this environment resolves,
    one JSON object (`{"error": ...}` for a bad setting); what `doctor` asks the launcher for."""
    try:
        settings = resolve_hook_settings({})
    except SettingsError as error:
        print(json.dumps({"error": str(error)}, ensure_ascii=False))
        return
    values = {name: str(value) if isinstance(value, Path) else value for name, value in vars(settings).items()}
    print(json.dumps(values, ensure_ascii=False))


if __name__ == "__main__":
    main()
