"""Batch data-quality gate for stage-1 extractions, run with great-expectations before any DB write.

Input: one `QualityRow` per extraction (thread id, raw memory, rollout summary, slug), already
redacted. Output: a `BatchQualityReport` with, per row, pass/fail and the names of the checks it
failed, plus a JSON-serialisable summary of the validation (one entry per check) for the run
artifact. The caller turns a failed row into the `failed_quality_check` outcome with the failed
check names in `jobs.last_error`.

Checks (each a named expectation over one column of a pandas frame built from the rows):
- `summary_present_when_raw_memory`: a non-empty raw memory comes with a non-empty summary;
- `rollout_slug_format`: the slug is null/empty or matches `^[a-z0-9_-]{1,80}$`;
- `raw_memory_starts_with_front_matter`: a non-empty raw memory starts with a `---` line and has
  a closing `---` line;
- `raw_memory_front_matter_keys`: that front matter holds description, task, task_group,
  task_outcome, cwd and keywords;
- `raw_memory_task_outcome_value`: its task_outcome is success, partial, fail or uncertain;
- `no_secret_pattern_left`: no redaction pattern still matches any of the three fields;
- `raw_memory_size` / `rollout_summary_size`: UTF-8 size within the configured bound (64 KiB).

Rows whose raw memory and summary are both empty (the "no output" outcome) pass trivially and are
not sent to great-expectations. The context is ephemeral: nothing is written to disk.
great-expectations is imported inside `check_extraction_batch`: importing it takes seconds and the
CLI must not pay that at start-up.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from codex_memories.redact import find_secret_kinds

DEFAULT_MAX_FIELD_BYTES = 64 * 1024
SLUG_PATTERN = r"^[a-z0-9_-]{1,80}$"
TASK_OUTCOMES = ("success", "partial", "fail", "uncertain")
FRONT_MATTER_KEYS = ("description", "task", "task_group", "task_outcome", "cwd", "keywords")

CHECK_SUMMARY_PRESENT = "summary_present_when_raw_memory"
CHECK_SLUG_FORMAT = "rollout_slug_format"
CHECK_FRONT_MATTER = "raw_memory_starts_with_front_matter"
CHECK_FRONT_MATTER_KEYS = "raw_memory_front_matter_keys"
CHECK_TASK_OUTCOME = "raw_memory_task_outcome_value"
CHECK_NO_SECRETS = "no_secret_pattern_left"
CHECK_RAW_MEMORY_SIZE = "raw_memory_size"
CHECK_SUMMARY_SIZE = "rollout_summary_size"

ALL_CHECKS = (
    CHECK_SUMMARY_PRESENT,
    CHECK_SLUG_FORMAT,
    CHECK_FRONT_MATTER,
    CHECK_FRONT_MATTER_KEYS,
    CHECK_TASK_OUTCOME,
    CHECK_NO_SECRETS,
    CHECK_RAW_MEMORY_SIZE,
    CHECK_SUMMARY_SIZE,
)

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_FRONT_MATTER_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)[ \t]*:[ \t]*(.*?)[ \t]*$")
# The same opening-and-closing test as `_FRONT_MATTER`, written for pandas' `str.contains`.
_FRONT_MATTER_REGEX = r"(?s)\A---[ \t]*\r?\n.*?\r?\n---[ \t]*(?:\r?\n|\Z)"
_SUITE_NAME = "stage1_extraction_batch"
_META_KEY = "check"


class QualityRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    thread_id: str
    raw_memory: str
    rollout_summary: str
    rollout_slug: str | None = None

    @property
    def is_empty_output(self) -> bool:
        return self.raw_memory == "" and self.rollout_summary == ""


class RowQualityResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    thread_id: str
    passed: bool
    failed_expectations: list[str] = Field(default_factory=list)


class ExpectationSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    expectation: str
    expectation_type: str
    success: bool
    unexpected_count: int
    element_count: int


class BatchQualityReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    success: bool
    rows: list[RowQualityResult]
    expectations: list[ExpectationSummary]

    def failed_expectations_for(self, thread_id: str) -> list[str]:
        return [name for row in self.rows if row.thread_id == thread_id for name in row.failed_expectations]

    def summary(self) -> list[dict[str, Any]]:
        """One JSON-ready dict per check: `expectation`, `expectation_type`, `success`, `unexpected_count`, ..."""
        return [item.model_dump() for item in self.expectations]


def parse_front_matter(raw_memory: str) -> dict[str, str] | None:
    """The `key: value` lines between the leading `---` lines, or None when there is no such block."""
    match = _FRONT_MATTER.match(raw_memory)
    if match is None:
        return None
    fields: dict[str, str] = {}
    for line in match.group(1).splitlines():
        parsed = _FRONT_MATTER_LINE.match(line)
        if parsed and parsed.group(1) not in fields:
            fields[parsed.group(1)] = parsed.group(2)
    return fields


def import_validation_modules() -> None:
    """great-expectations and pandas, imported (about 3 s of CPU) where the check will run, ahead
    of it (`codex_memories.extract.prefetch.prepare_quality_check`)."""
    import great_expectations  # noqa: F401
    import pandas  # noqa: F401


def check_extraction_batch(rows: list[QualityRow], *, max_field_bytes: int = DEFAULT_MAX_FIELD_BYTES) -> BatchQualityReport:
    """Validate a batch of extractions. Pure apart from CPU time: no files, no network."""
    if max_field_bytes <= 0:
        raise ValueError("max_field_bytes must be positive")
    if all(row.is_empty_output for row in rows):
        return BatchQualityReport(
            success=True,
            rows=[RowQualityResult(thread_id=row.thread_id, passed=True) for row in rows],
            expectations=[],
        )

    checked_positions = [position for position, row in enumerate(rows) if not row.is_empty_output]
    checked = [rows[position] for position in checked_positions]
    failures_by_frame_index, expectations = _validate(checked, max_field_bytes)
    failures_by_row = {
        row_position: failures_by_frame_index.get(frame_index, [])
        for frame_index, row_position in enumerate(checked_positions)
    }
    results = []
    for position, row in enumerate(rows):
        failed = sorted(set(failures_by_row.get(position, [])), key=_check_order)
        results.append(RowQualityResult(thread_id=row.thread_id, passed=not failed, failed_expectations=failed))
    return BatchQualityReport(
        success=all(result.passed for result in results),
        rows=results,
        expectations=expectations,
    )


def _frame_columns(rows: list[QualityRow]) -> dict[str, list[Any]]:
    columns: dict[str, list[Any]] = {
        "thread_id": [],
        "summary_present_when_raw_memory": [],
        "rollout_slug": [],
        "raw_memory": [],
        "front_matter_keys_present": [],
        "task_outcome": [],
        "no_secret_pattern_left": [],
        "raw_memory_bytes": [],
        "rollout_summary_bytes": [],
    }
    for row in rows:
        front_matter = parse_front_matter(row.raw_memory) if row.raw_memory else None
        has_raw_memory = row.raw_memory != ""
        columns["thread_id"].append(row.thread_id)
        columns["summary_present_when_raw_memory"].append(not has_raw_memory or row.rollout_summary != "")
        # Null and empty slugs are both "no slug": the summary file stem simply omits it.
        columns["rollout_slug"].append(row.rollout_slug or None)
        # Null values are skipped by column-map expectations, which is "only when non-empty".
        columns["raw_memory"].append(row.raw_memory if has_raw_memory else None)
        columns["front_matter_keys_present"].append(
            None if not has_raw_memory or front_matter is None else all(key in front_matter for key in FRONT_MATTER_KEYS)
        )
        columns["task_outcome"].append(None if not front_matter or "task_outcome" not in front_matter else front_matter["task_outcome"])
        secret_kinds = [kind for text in (row.raw_memory, row.rollout_summary, row.rollout_slug or "") for kind in find_secret_kinds(text)]
        columns["no_secret_pattern_left"].append(not secret_kinds)
        columns["raw_memory_bytes"].append(len(row.raw_memory.encode("utf-8")))
        columns["rollout_summary_bytes"].append(len(row.rollout_summary.encode("utf-8")))
    return columns


def _validate(rows: list[QualityRow], max_field_bytes: int) -> tuple[dict[int, list[str]], list[ExpectationSummary]]:
    import great_expectations as gx
    import pandas as pd
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    frame = pd.DataFrame(_frame_columns(rows))
    config = DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(),
        progress_bars=ProgressBarsConfig(globally=False),
        analytics_enabled=False,
    )
    context = gx.get_context(project_config=config, mode="ephemeral")
    asset = context.data_sources.add_pandas("stage1_extractions").add_dataframe_asset(name="extraction_rows")
    batch = asset.add_batch_definition_whole_dataframe("whole_batch").get_batch(batch_parameters={"dataframe": frame})

    suite = gx.ExpectationSuite(name=_SUITE_NAME)
    for expectation in _expectations(gx, max_field_bytes):
        suite.add_expectation(expectation)
    suite = context.suites.add(suite)
    validation = batch.validate(suite, result_format="COMPLETE")

    failures: dict[int, list[str]] = {}
    summaries: list[ExpectationSummary] = []
    for result in validation.results:
        config_meta = result.expectation_config.meta or {}
        name = config_meta.get(_META_KEY, result.expectation_config.type)
        details = result.result or {}
        if _raised_exception(result.exception_info):
            # A check that could not run fails every row: an outage must never look like a pass.
            positions = list(range(len(rows)))
            unexpected = len(rows)
        else:
            positions = [int(position) for position in details.get("unexpected_index_list") or []]
            unexpected = int(details.get("unexpected_count") or 0)
        for position in positions:
            failures.setdefault(position, []).append(name)
        summaries.append(
            ExpectationSummary(
                expectation=name,
                expectation_type=result.expectation_config.type,
                success=bool(result.success),
                unexpected_count=unexpected,
                element_count=int(details.get("element_count") or len(rows)),
            )
        )
    summaries.sort(key=lambda item: _check_order(item.expectation))
    return failures, summaries


def _raised_exception(exception_info: Any) -> bool:
    # great-expectations reports either one flat dict or one dict per metric it computed.
    if not isinstance(exception_info, dict):
        return False
    if exception_info.get("raised_exception"):
        return True
    return any(isinstance(value, dict) and value.get("raised_exception") for value in exception_info.values())


def _check_order(name: str) -> int:
    return ALL_CHECKS.index(name) if name in ALL_CHECKS else len(ALL_CHECKS)


def _expectations(gx: Any, max_field_bytes: int) -> list[Any]:
    expectations = gx.expectations
    return [
        expectations.ExpectColumnValuesToBeInSet(
            column="summary_present_when_raw_memory", value_set=[True], meta={_META_KEY: CHECK_SUMMARY_PRESENT}
        ),
        expectations.ExpectColumnValuesToMatchRegex(
            column="rollout_slug", regex=SLUG_PATTERN, meta={_META_KEY: CHECK_SLUG_FORMAT}
        ),
        expectations.ExpectColumnValuesToMatchRegex(
            column="raw_memory", regex=_FRONT_MATTER_REGEX, meta={_META_KEY: CHECK_FRONT_MATTER}
        ),
        expectations.ExpectColumnValuesToBeInSet(
            column="front_matter_keys_present", value_set=[True], meta={_META_KEY: CHECK_FRONT_MATTER_KEYS}
        ),
        expectations.ExpectColumnValuesToBeInSet(
            column="task_outcome", value_set=list(TASK_OUTCOMES), meta={_META_KEY: CHECK_TASK_OUTCOME}
        ),
        expectations.ExpectColumnValuesToBeInSet(
            column="no_secret_pattern_left", value_set=[True], meta={_META_KEY: CHECK_NO_SECRETS}
        ),
        expectations.ExpectColumnValuesToBeBetween(
            column="raw_memory_bytes", min_value=0, max_value=max_field_bytes, meta={_META_KEY: CHECK_RAW_MEMORY_SIZE}
        ),
        expectations.ExpectColumnValuesToBeBetween(
            column="rollout_summary_bytes", min_value=0, max_value=max_field_bytes, meta={_META_KEY: CHECK_SUMMARY_SIZE}
        ),
    ]
