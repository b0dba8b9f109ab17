"""One settings tree for codex-memories.

Two sources of truth, kept apart on purpose:

* **Codex's own `$CODEX_HOME/config.toml`** (read only, never written): `[features] memories`
  and the `[memories]` keys of spec section 4, with Codex's code defaults and clamps. Codex
  rejects unknown keys in `[memories]`, so none of our knobs ever go there.
* **Our knobs** (provider, models, URLs, concurrency, budgets, leases, ...), from, highest first:
  CLI flags > environment variables `CODEX_MEMORIES_*` (plus `OPENAI_API_KEY`,
  `OPENAI_BASE_URL`, `CODEX_HOME`) > our own TOML file (`CODEX_MEMORIES_CONFIG_FILE`, default
  `$CODEX_HOME/codex-memories.toml`) > code defaults. The names, the file's location and the
  hook-read fields live in `settings_sources`, which the hooks resolve from without pydantic. Our layer may also override a Codex
  `[memories]` key under the same name (e.g. `CODEX_MEMORIES_MAX_ROLLOUTS_PER_STARTUP=16`).

Codex clamps out-of-range values in its own file (faithfully reproduced here); our own layer
rejects them instead: a bad value is one clear line naming the key and its allowed range
(`SettingsError`, exit code 2 in the CLI), and nothing is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    WithJsonSchema,
    field_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from codex_memories import paths
from codex_memories.llm import ProviderChoice, resolve_provider
from codex_memories.llm.codex_provider import CODEX_DEFAULT_MODEL
from codex_memories.llm.codex_runner import CodexLogin, detect_codex_login, find_codex_binary
from codex_memories.settings_sources import (
    DB_URL_RULE,
    DB_URL_SHAPE,
    DEFAULT_CODEX_HOME,
    ENV_PREFIX,
    PROMPT_RECALL_BUDGET,
    SESSION_START_BUDGET,
    URL_PASSWORD,
    IntSetting,
    SettingsError,
    env_names,
    own_config_file,
)

# Sources Codex treats as interactive (spec 1.4, INTERACTIVE_SESSION_SOURCES).
INTERACTIVE_SESSION_SOURCES: tuple[str, ...] = ("cli", "vscode", "atlas", "chatgpt")


def _int_field(setting: IntSetting) -> Any:
    return Field(default=setting.default, ge=setting.low, le=setting.high, description=setting.description)


# --------------------------------------------------------------------------------------------
# Codex's [memories] table (spec section 4): code defaults and clamps.
# --------------------------------------------------------------------------------------------

# key -> (default, low, high). Values outside are clamped, as Codex's `From<MemoriesToml>` does.
CODEX_MEMORIES_INT_KEYS: dict[str, tuple[int, int, int]] = {
    "max_raw_memories_for_consolidation": (256, 1, 4096),
    "max_unused_days": (30, 0, 365),
    "max_rollout_age_days": (10, 0, 90),
    "max_rollouts_per_startup": (2, 1, 128),
    "min_rollout_idle_hours": (6, 1, 48),
    "min_rate_limit_remaining_percent": (25, 0, 100),
}
CODEX_MEMORIES_BOOL_KEYS: dict[str, bool] = {
    "generate_memories": True,
    "use_memories": True,
    "disable_on_external_context": False,
    "dedicated_tools": False,
    "dual_write": False,
}
CODEX_MEMORIES_ALIASES = {"no_memories_if_mcp_or_web_search": "disable_on_external_context"}
CODEX_MEMORIES_STR_KEYS = ("extract_model", "consolidation_model", "version")


class CodexMemoriesConfig(BaseModel):
    """The effective `[features] memories` + `[memories]` values, after clamps and overrides."""

    model_config = ConfigDict(frozen=True)

    feature_enabled: bool = False
    generate_memories: bool = True
    use_memories: bool = True
    disable_on_external_context: bool = False
    dedicated_tools: bool = False
    dual_write: bool = False
    max_raw_memories_for_consolidation: int = 256
    max_unused_days: int = 30
    max_rollout_age_days: int = 10
    max_rollouts_per_startup: int = 2
    min_rollout_idle_hours: int = 6
    min_rate_limit_remaining_percent: int = 25
    extract_model: str | None = None
    consolidation_model: str | None = None
    version: str = "v1"
    config_path: str | None = None


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))


def read_codex_memories_config(codex_home: Path) -> CodexMemoriesConfig:
    """Read `$CODEX_HOME/config.toml` without writing it. A missing file means Codex defaults."""
    config_path = codex_home / paths.CODEX_CONFIG_FILE
    if not config_path.is_file():
        return CodexMemoriesConfig()
    try:
        document = tomllib.loads(config_path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise SettingsError(f"{config_path}: not valid TOML ({error})") from error

    features = document.get("features", {})
    feature_enabled = features.get("memories", features.get("memory_tool", False))
    if not isinstance(feature_enabled, bool):
        raise SettingsError(f"{config_path}: [features] memories must be true or false")

    table = dict(document.get("memories", {}))
    for alias, name in CODEX_MEMORIES_ALIASES.items():
        if alias in table and name not in table:
            table[name] = table.pop(alias)
    values: dict[str, Any] = {"feature_enabled": feature_enabled, "config_path": str(config_path)}
    for key, (default, low, high) in CODEX_MEMORIES_INT_KEYS.items():
        raw = table.get(key, default)
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise SettingsError(f"{config_path}: [memories] {key} must be an integer ({low}..{high})")
        values[key] = _clamp(raw, low, high)
    for key, default in CODEX_MEMORIES_BOOL_KEYS.items():
        raw = table.get(key, default)
        if not isinstance(raw, bool):
            raise SettingsError(f"{config_path}: [memories] {key} must be true or false")
        values[key] = raw
    for key in CODEX_MEMORIES_STR_KEYS:
        if key in table:
            if not isinstance(table[key], str):
                raise SettingsError(f"{config_path}: [memories] {key} must be a string")
            values[key] = table[key]
    return CodexMemoriesConfig(**values)


# --------------------------------------------------------------------------------------------
# Our own settings.
# --------------------------------------------------------------------------------------------


class Settings(BaseSettings):
    """Our knobs. Every field has a type, a default, bounds and a description."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        extra="forbid",
        populate_by_name=True,
        validate_default=True,
    )

    codex_home: Path = Field(
        default=DEFAULT_CODEX_HOME,
        validation_alias=AliasChoices(*env_names("codex_home")),
        description="Codex home: rollouts under sessions/ and archived_sessions/, config.toml.",
    )
    config_file: Path | None = Field(
        default=None,
        description="Our own optional TOML settings file (default $CODEX_HOME/codex-memories.toml).",
    )
    provider: Literal["auto", "openai", "codex", "heuristic"] = Field(
        default="auto",
        description="Model provider; auto = openai when an API key or base URL is set, else codex when "
        "a logged-in Codex CLI is found, else heuristic.",
    )
    codex_binary: str | None = Field(
        default=None,
        description="The Codex CLI for the codex provider (a path or a name on PATH); default: `codex` "
        "next to this Python, else on PATH.",
    )
    codex_sandbox: Literal["workspace-write", "external"] = Field(
        default="workspace-write",
        description="Phase 2 with the codex provider: workspace-write = Codex's own sandbox (needs "
        "bubblewrap on Linux); external = the machine is itself a sandbox (a container), Codex runs "
        "unsandboxed and our after-checks alone guard the folder.",
    )
    api_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices(*env_names("api_key")),
        description="API key for the openai provider (never logged, never a task parameter).",
    )
    base_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices(*env_names("base_url")),
        description="Base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1.",
    )
    api_mode: Literal["responses", "chat"] = Field(
        default="responses",
        description="responses = /v1/responses; chat = /v1/chat/completions (vLLM, Ollama).",
    )
    extract_model: str | None = Field(
        default=None, description="Phase-1 model; default: [memories] extract_model, else gpt-5.4-mini."
    )
    consolidation_model: str | None = Field(
        default=None, description="Phase-2 model; default: [memories] consolidation_model, else gpt-5.4."
    )
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = Field(
        default=None, description="Reasoning effort sent to the model; unset sends none."
    )
    model_timeout_seconds: float = Field(default=300.0, ge=1, le=3600, description="Per-request timeout.")
    model_retries: int = Field(default=3, ge=0, le=10, description="Task retries on transient model errors.")
    model_retry_delay_seconds: float = Field(
        default=2.0, ge=0, le=600, description="First retry delay; later retries back off exponentially."
    )
    db_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL of the state DB; default sqlite:///$CODEX_HOME/codex-memories/state.sqlite.",
    )
    memory_root: str | None = Field(
        default=None, description="Memory folder: a path or s3://bucket/prefix; default $CODEX_HOME/memories."
    )
    concurrency: int = Field(default=8, ge=1, le=64, description="Phase-1 extractions running at once.")
    rollout_token_budget: int = Field(
        default=150_000, ge=1_000, le=2_000_000, description="Tokens of transcript sent per extraction."
    )
    scan_limit: int = Field(default=5000, ge=1, le=1_000_000, description="Threads read per claim pass.")
    prune_batch_size: int = Field(default=200, ge=1, le=100_000, description="Retention-prune batch.")
    stage1_lease_seconds: int = Field(default=3600, ge=10, le=86_400, description="Phase-1 job lease.")
    stage1_retry_delay_seconds: int = Field(
        default=3600, ge=0, le=604_800, description="Backoff after a failed extraction."
    )
    phase2_lease_seconds: int = Field(default=3600, ge=5, le=86_400, description="Global phase-2 lease.")
    phase2_heartbeat_seconds: float = Field(
        default=90.0, ge=0.1, le=3600, description="Lease renewal period while the agent runs."
    )
    phase2_retry_delay_seconds: int = Field(
        default=3600, ge=0, le=604_800, description="Backoff after a failed consolidation."
    )
    review: Literal["auto", "ask"] = Field(
        default="auto",
        description=(
            "auto: a consolidation goes live at once; ask: it becomes a proposal that goes live only when "
            "approved (`codex-memories review --approve`, or the paused flow run's form in the Prefect UI)."
        ),
    )
    review_timeout_seconds: int = Field(
        default=86_400,
        ge=1,
        le=2_592_000,
        description="How long a paused ask-mode run waits for a decision; no decision in time is a reject.",
    )
    phase2_cooldown_seconds: int = Field(
        default=21_600, ge=0, le=604_800, description="Minimum gap between successful consolidations."
    )
    phase2_stage1_wait_seconds: float = Field(
        default=600.0,
        ge=0,
        le=3600,
        description=(
            "How long phase 2 waits for stage-1 extractions in flight (live leases) before it gives up "
            "as skipped_stage1_in_flight, leaving the consolidation for the next run."
        ),
    )
    agent_max_steps: int = Field(default=60, ge=1, le=1000, description="Consolidation agent step limit.")
    agent_max_tokens: int = Field(
        default=2_000_000, ge=1_000, le=100_000_000, description="Consolidation agent token budget."
    )
    agent_timeout_seconds: float = Field(
        default=1800.0, ge=1, le=86_400, description="Consolidation agent wall-clock limit."
    )
    session_start_budget_tokens: int = _int_field(SESSION_START_BUDGET)
    prompt_recall_budget_tokens: int = _int_field(PROMPT_RECALL_BUDGET)
    s3_endpoint_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices(*env_names("s3_endpoint_url")),
        description="S3-compatible endpoint (Ceph radosgw, MinIO); unset = AWS. Credentials come from "
        "the standard AWS environment and config files, never from here.",
    )
    backfill_cache_dir: Path | None = Field(
        default=None,
        description="Where backfill keeps its copies of s3:// rollouts (extraction reads them later); "
        "default $CODEX_HOME/codex-memories/backfill-cache.",
    )
    backfill_batch_size: int = Field(
        default=32, ge=1, le=1024, description="Backfill: threads claimed and extracted per batch."
    )
    backfill_max_running: int = Field(
        default=256,
        ge=1,
        le=65_536,
        description=(
            "Backfill: the team-wide cap of stage-1 extractions under a live lease, all runs and "
            "workers together (never below one batch); a claim past it is skipped_running and waits. "
            "Size it to what the model endpoint takes; how many runs go at once is the work pool's "
            "and the workers' limit."
        ),
    )
    backfill_held_wait_seconds: float = Field(
        default=900.0,
        ge=0,
        le=86_400,
        description=(
            "Backfill: how long a run waits for the threads another run holds (its lease, or the "
            "team-wide cap of running extractions) to be claimable again, before it ends Failed "
            "(Incomplete) naming them."
        ),
    )
    fresh_memory: bool = Field(
        default=False,
        description="Extract and consolidate a session right after it ends (SessionEnd, or 2 minutes idle), "
        "so the next session has it. Opt-in: each pass runs phase 1 and phase 2 in the background (a "
        "Prefect server start, and with a model provider a phase-1 and a phase-2 request on your quota).",
    )
    ignore_age_windows: bool = Field(
        default=False,
        description="Claim regardless of the idle and age windows (backfill, the bundled example).",
    )
    # Overrides of Codex [memories] keys; None = take Codex's config.toml value.
    max_raw_memories_for_consolidation: int | None = Field(default=None, ge=1, le=4096)
    max_unused_days: int | None = Field(default=None, ge=0, le=365)
    max_rollout_age_days: int | None = Field(default=None, ge=0, le=90)
    max_rollouts_per_startup: int | None = Field(default=None, ge=1, le=128)
    min_rollout_idle_hours: int | None = Field(default=None, ge=0, le=48)
    generate_memories: bool | None = Field(
        default=None,
        description="Run phase 1 (our switch; unset: Codex's [memories] generate_memories, default true). "
        "Codex's own [features] memories no longer gates it and should stay off.",
    )
    disable_on_external_context: bool | None = Field(default=None)
    memories_feature: bool | None = Field(
        default=None,
        description="Override what we read of Codex's [features] memories (reported by status and doctor; it gates nothing).",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        init_values = init_settings()
        # The init source keys a value by the field's first alias (`CODEX_MEMORIES_CODEX_HOME`).
        given_home = next((init_values[name] for name in ("codex_home", *env_names("codex_home")) if init_values.get(name)), None)
        toml_path = own_config_file(init_values.get("config_file"), given_home)
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if toml_path is not None:
            try:  # the source reads the file here
                sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_path))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
                raise SettingsError(f"{toml_path}: not valid TOML ({error})") from None
        return tuple(sources)

    # ---- derived values -------------------------------------------------------------------

    @property
    def codex_home_path(self) -> Path:
        return self.codex_home.expanduser()

    @field_validator("db_url")
    @classmethod
    def _a_database_we_run_on(cls, value: str | None) -> str | None:
        if value is not None and not DB_URL_SHAPE.match(value):
            raise ValueError(DB_URL_RULE)
        return value

    @property
    def resolved_db_url(self) -> str:
        return self.db_url or paths.default_db_url(self.codex_home_path)

    @property
    def resolved_memory_root(self) -> str:
        return self.memory_root or str(self.codex_home_path / paths.MEMORIES_DIR)

    @property
    def resolved_backfill_cache_dir(self) -> Path:
        if self.backfill_cache_dir is not None:
            return self.backfill_cache_dir.expanduser()
        return self.codex_home_path / paths.STATE_DIR / paths.BACKFILL_CACHE_DIR


class RuntimeConfig(BaseModel):
    """Our settings plus Codex's effective `[memories]` values: what the pipeline runs with."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    settings: Settings
    memories: CodexMemoriesConfig

    @property
    def provider_choice(self) -> ProviderChoice:
        """Which provider runs and why (the one resolver is `llm.resolve_provider`)."""
        settings = self.settings
        requested = settings.provider
        login = None
        if requested == "auto" and settings.api_key is None and not settings.base_url:
            login = _codex_login(settings.codex_binary, settings.codex_home_path)
        return resolve_provider(requested, settings.api_key, settings.base_url, login)

    @property
    def provider_name(self) -> str:
        return self.provider_choice.name

    @property
    def provider_reason(self) -> str:
        return self.provider_choice.reason

    @property
    def extract_model_explicit(self) -> str | None:
        """The configured phase-1 model, if any (the codex provider then passes `-m`)."""
        return self.settings.extract_model or self.memories.extract_model or None

    @property
    def consolidation_model_explicit(self) -> str | None:
        return self.settings.consolidation_model or self.memories.consolidation_model or None

    @property
    def extract_model(self) -> str:
        if self.extract_model_explicit:
            return self.extract_model_explicit
        return CODEX_DEFAULT_MODEL if self.provider_name == "codex" else "gpt-5.4-mini"

    @property
    def consolidation_model(self) -> str:
        if self.consolidation_model_explicit:
            return self.consolidation_model_explicit
        return CODEX_DEFAULT_MODEL if self.provider_name == "codex" else "gpt-5.4"


# `codex login status` costs a process start: probed once per (binary, home) and process.
_codex_logins: dict[tuple[str | None, str], CodexLogin] = {}
_codex_logins_lock = threading.Lock()


def _codex_login(binary_setting: str | None, codex_home: Path) -> CodexLogin:
    key = (binary_setting, str(codex_home))
    with _codex_logins_lock:
        found = _codex_logins.get(key)
    if found is None:
        found = detect_codex_login(find_codex_binary(binary_setting), codex_home)
        with _codex_logins_lock:
            _codex_logins[key] = found
    return found


def forget_codex_login_probes() -> None:
    """Drop the memoised login probes (tests; a long-running server after `codex login`)."""
    with _codex_logins_lock:
        _codex_logins.clear()


_OVERRIDABLE = (
    "max_raw_memories_for_consolidation",
    "max_unused_days",
    "max_rollout_age_days",
    "max_rollouts_per_startup",
    "min_rollout_idle_hours",
    "generate_memories",
    "disable_on_external_context",
)


def _select(choices: Any) -> WithJsonSchema:
    """The form field of an optional choice (`Literal[...] | None`): a plain select of the choices.
    Pydantic's `anyOf [enum, null]` showed as an empty dropdown in Prefect's V1 UI; a select left
    empty is not sent, which is "not given" (None) here."""
    return WithJsonSchema({"type": "string", "enum": list(get_args(choices))})


def _no_form_default(schema: dict[str, Any]) -> None:
    # Not given is no value at all, not a `null` the form would send for a `string` field.
    schema.pop("default", None)


_Provider = Literal["auto", "openai", "codex", "heuristic"]
_ApiMode = Literal["responses", "chat"]
_Review = Literal["auto", "ask"]


class SettingsOverrides(BaseModel):
    """What one caller sets on top of the environment, our TOML file and the defaults.

    The same model travels from the CLI into every flow (and is the one flow parameter the
    Prefect UI shows as a form), so no option is parsed, flattened and parsed again on the way.
    None means "not given". Bounds are checked once, by `Settings`, when the overrides are
    loaded. Nothing here is secret: API keys come from the environment or our settings file,
    never from a flow parameter (Prefect stores parameters).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    codex_home: str | None = Field(default=None, description="Codex home to read (sessions/, config.toml).")
    db_url: str | None = Field(default=None, description="SQLAlchemy URL of the state DB.")
    memory_root: str | None = Field(default=None, description="Memory folder: a path or s3://bucket/prefix.")
    provider: Annotated[_Provider | None, _select(_Provider)] = Field(
        default=None, title="Provider", description="Model provider: auto, openai, codex or heuristic.", json_schema_extra=_no_form_default
    )
    base_url: str | None = Field(default=None, description="An OpenAI-compatible server's URL.")
    api_mode: Annotated[_ApiMode | None, _select(_ApiMode)] = Field(
        default=None, title="API mode", description="responses or chat.", json_schema_extra=_no_form_default
    )
    config_file: str | None = Field(default=None, description="Our own TOML settings file.")
    extract_model: str | None = Field(default=None, description="The phase-1 model.")
    consolidation_model: str | None = Field(default=None, description="The phase-2 model.")
    concurrency: int | None = Field(default=None, description="Extractions at once (1..64).")
    max_rollouts_per_startup: int | None = Field(default=None, description="Threads claimed per run (1..128).")
    ignore_age_windows: bool | None = Field(default=None, description="Claim regardless of the idle and age windows.")
    backfill_batch_size: int | None = Field(default=None, description="Backfill: threads per batch (1..1024).")
    review: Annotated[_Review | None, _select(_Review)] = Field(
        default=None, title="Review", description="auto, or ask: consolidations wait for approval.", json_schema_extra=_no_form_default
    )
    review_timeout_seconds: int | None = Field(default=None, description="Seconds a paused ask-mode run waits (a reject after).")

    @classmethod
    def checked(cls, **values: Any) -> SettingsOverrides:
        """The overrides of `values` (None = not given); a value this model refuses (a provider
        that is not one of ours, a number that is not one) is a one-line `SettingsError` named
        like every other bad setting, not pydantic's report."""
        try:
            return cls(**values)
        except ValidationError as error:
            raise SettingsError(describe_validation_error(error)) from None

    def with_values(self, **values: Any) -> SettingsOverrides:
        """These overrides and `values` on top (None = not given), checked as `checked` does."""
        return self.checked(**{**self.model_dump(exclude_none=True), **{key: value for key, value in values.items() if value is not None}})

    def load(self) -> RuntimeConfig:
        """The effective configuration; a bad value is a one-line `SettingsError`."""
        return load_runtime_config(**self.model_dump(exclude_none=True))


def load_runtime_config(**cli_values: Any) -> RuntimeConfig:
    """Build the effective configuration. CLI values of None are "not given"."""
    given = {key: value for key, value in cli_values.items() if value is not None}
    try:
        settings = Settings(**given)
    except ValidationError as error:
        raise SettingsError(describe_validation_error(error)) from None
    memories = read_codex_memories_config(settings.codex_home_path)
    overrides = {
        key: getattr(settings, key) for key in _OVERRIDABLE if getattr(settings, key) is not None
    }
    if settings.memories_feature is not None:
        overrides["feature_enabled"] = settings.memories_feature
    if overrides:
        memories = memories.model_copy(update=overrides)
    return RuntimeConfig(settings=settings, memories=memories)


def describe_validation_error(error: ValidationError) -> str:
    """One line per bad key: name, given value, the rule it broke and the allowed range."""
    lines = []
    for problem in error.errors():
        key = ".".join(str(part) for part in problem["loc"]) or "settings"
        field = Settings.model_fields.get(str(problem["loc"][0])) if problem["loc"] else None
        allowed = _allowed_range(field) if field is not None else ""
        given = problem.get("input")
        shown = "***" if key == "api_key" else repr(URL_PASSWORD.sub(r"\1:***@", given) if isinstance(given, str) else given)
        lines.append(f"invalid setting {key}={shown}: {problem['msg']}{allowed}")
    return "; ".join(lines)


def _allowed_range(field: Any) -> str:
    low = high = None
    for constraint in field.metadata:
        low = getattr(constraint, "ge", low) if getattr(constraint, "ge", None) is not None else low
        high = getattr(constraint, "le", high) if getattr(constraint, "le", None) is not None else high
    if low is None and high is None:
        return ""
    return f" (allowed: {low if low is not None else '-inf'}..{high if high is not None else 'inf'})"


# What a run reads from the environment besides our settings: object-store credentials (boto),
# the openai client's and Codex's own variables, the HTTP clients' proxies and CA bundles.
_FINGERPRINT_ENV_PREFIXES = ("AWS_", "OPENAI_", "CODEX_")
_FINGERPRINT_ENV_NAMES = frozenset(
    name
    for base in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
    for name in (base, base.lower())
) | {"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE"}


def config_fingerprint(config: RuntimeConfig, environ: Mapping[str, str] | None = None) -> str:
    """sha256 of everything a run's behaviour depends on that two processes could see differently.

    Two processes with the same fingerprint run a flow the same way (the CLI hands a run to
    `codex-memories serve` only then): every resolved setting (secrets included, by value, since
    only the hash leaves the process), Codex's effective `[memories]` values, the provider chosen
    and why, the environment a run reads besides our settings (`_FINGERPRINT_ENV_PREFIXES`), the
    installed code, and the working directory when a configured path is relative to it."""
    environ = os.environ if environ is None else environ
    settings = config.settings
    values = settings.model_dump(mode="json")
    values["api_key"] = settings.api_key.get_secret_value() if settings.api_key is not None else None
    document: dict[str, Any] = {
        "settings": values,
        "resolved": {
            "codex_home": str(settings.codex_home_path),
            "db_url": settings.resolved_db_url,
            "memory_root": settings.resolved_memory_root,
            "backfill_cache_dir": str(settings.resolved_backfill_cache_dir),
        },
        "memories": config.memories.model_dump(mode="json"),
        "provider": [config.provider_name, config.provider_reason],
        "environment": {
            name: value
            for name, value in environ.items()
            if name.startswith(_FINGERPRINT_ENV_PREFIXES) or name in _FINGERPRINT_ENV_NAMES
        },
        "code": str(Path(__file__).resolve().parent),
    }
    if _depends_on_working_directory(settings):
        document["working_directory"] = os.getcwd()
    encoded = json.dumps(document, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


def _depends_on_working_directory(settings: Settings) -> bool:
    paths_given = [settings.codex_home_path, settings.resolved_backfill_cache_dir]
    if settings.config_file is not None:
        paths_given.append(settings.config_file.expanduser())
    local_root = paths.local_memory_folder(settings.resolved_memory_root)
    if local_root is not None:
        paths_given.append(local_root)
    if any(not path.is_absolute() for path in paths_given):
        return True
    # sqlite:///relative.db is relative to the working directory, sqlite:////abs.db is not.
    scheme, _, database = settings.resolved_db_url.partition(":///")
    return scheme.startswith("sqlite") and bool(database) and not database.startswith(("/", ":memory:"))
