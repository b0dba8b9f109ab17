import json
import os
import subprocess
import sys

import pytest

from codex_memories.extract.quality import (
    ALL_CHECKS,
    CHECK_FRONT_MATTER,
    CHECK_FRONT_MATTER_KEYS,
    CHECK_NO_SECRETS,
    CHECK_RAW_MEMORY_SIZE,
    CHECK_SLUG_FORMAT,
    CHECK_SUMMARY_PRESENT,
    CHECK_SUMMARY_SIZE,
    CHECK_TASK_OUTCOME,
    QualityRow,
    check_extraction_batch,
    parse_front_matter,
)

GOOD_RAW_MEMORY = """---
description: Added jitter to webhook retries
task: add jitter to webhook backoff
task_group: billing-api
task_outcome: success
cwd: /src/billing-api
keywords: webhook, retry, jitter
---

### Task 1: add jitter to webhook backoff
task: add jitter to webhook backoff
task_group: billing-api
task_outcome: success

Reusable knowledge:
- cargo test -p webhook runs the webhook tests
"""
GOOD_SUMMARY = "# Added jitter to webhook retries\n\nRollout context: /src/billing-api\n"
LEAKED_KEY = "sk-" + "abcdefghijklmnopqrstuvwxyz123456"
SMALL_LIMIT = 4096


def good(thread_id: str, **changes) -> QualityRow:
    values = {"thread_id": thread_id, "raw_memory": GOOD_RAW_MEMORY, "rollout_summary": GOOD_SUMMARY, "rollout_slug": "add-jitter"}
    values.update(changes)
    return QualityRow(**values)


CRAFTED_FAILURES = {
    CHECK_SUMMARY_PRESENT: good("t-summary", rollout_summary=""),
    CHECK_SLUG_FORMAT: good("t-slug", rollout_slug="Add Jitter!"),
    CHECK_FRONT_MATTER: good("t-front-matter", raw_memory="Notes first.\n" + GOOD_RAW_MEMORY),
    CHECK_FRONT_MATTER_KEYS: good("t-keys", raw_memory=GOOD_RAW_MEMORY.replace("keywords: webhook, retry, jitter\n", "")),
    CHECK_TASK_OUTCOME: good("t-outcome", raw_memory=GOOD_RAW_MEMORY.replace("task_outcome: success\ncwd", "task_outcome: great\ncwd")),
    CHECK_NO_SECRETS: good("t-secret", rollout_summary=GOOD_SUMMARY + f"key was {LEAKED_KEY}\n"),
    CHECK_RAW_MEMORY_SIZE: good("t-raw-size", raw_memory=GOOD_RAW_MEMORY + "- padding\n" * 500),
    CHECK_SUMMARY_SIZE: good("t-summary-size", rollout_summary=GOOD_SUMMARY + "é" * SMALL_LIMIT),
}


def test_every_check_has_a_crafted_failure():
    assert set(CRAFTED_FAILURES) == set(ALL_CHECKS)


def test_good_rows_and_empty_rows_pass():
    rows = [
        good("t-1"),
        good("t-2", rollout_slug=None),
        good("t-3", rollout_slug=""),
        QualityRow(thread_id="t-empty", raw_memory="", rollout_summary="", rollout_slug=""),
    ]
    report = check_extraction_batch(rows)
    assert report.success
    assert [row.passed for row in report.rows] == [True, True, True, True]
    assert all(item.success for item in report.expectations)
    assert [item.expectation for item in report.expectations] == list(ALL_CHECKS)


def test_a_batch_of_only_empty_outputs_passes_without_running_expectations():
    report = check_extraction_batch([QualityRow(thread_id="t", raw_memory="", rollout_summary="", rollout_slug=None)])
    assert report.success
    assert report.expectations == []


def test_each_check_fails_alone_on_its_crafted_row():
    rows = [good("t-good"), *CRAFTED_FAILURES.values()]
    report = check_extraction_batch(rows, max_field_bytes=SMALL_LIMIT)

    assert not report.success
    by_thread = {row.thread_id: row for row in report.rows}
    assert by_thread["t-good"].passed
    for check, row in CRAFTED_FAILURES.items():
        assert by_thread[row.thread_id].failed_expectations == [check], row.thread_id
        assert report.failed_expectations_for(row.thread_id) == [check]
    for item in report.expectations:
        assert item.success is False
        assert item.unexpected_count == 1, item.expectation


@pytest.mark.parametrize("check", list(CRAFTED_FAILURES))
def test_a_single_bad_row_fails_only_its_check(check):
    report = check_extraction_batch([CRAFTED_FAILURES[check]], max_field_bytes=SMALL_LIMIT)
    assert report.rows[0].failed_expectations == [check]
    assert {item.expectation for item in report.expectations if not item.success} == {check}


def test_default_size_limit_is_64_kib():
    just_fits = good("t-fits", rollout_summary="x" * (64 * 1024))
    too_big = good("t-big", rollout_summary="x" * (64 * 1024 + 1))
    report = check_extraction_batch([just_fits, too_big])
    assert [row.failed_expectations for row in report.rows] == [[], [CHECK_SUMMARY_SIZE]]


def test_summary_is_json_serialisable_for_the_run_artifact():
    report = check_extraction_batch([good("t-1"), CRAFTED_FAILURES[CHECK_SLUG_FORMAT]])
    summary = json.loads(json.dumps(report.summary()))
    slug_entry = next(item for item in summary if item["expectation"] == CHECK_SLUG_FORMAT)
    assert slug_entry == {
        "expectation": CHECK_SLUG_FORMAT,
        "expectation_type": "expect_column_values_to_match_regex",
        "success": False,
        "unexpected_count": 1,
        "element_count": 2,
    }


def test_nothing_is_written_to_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    check_extraction_batch([good("t-1"), *CRAFTED_FAILURES.values()], max_field_bytes=SMALL_LIMIT)
    assert os.listdir(tmp_path) == []


def test_importing_the_module_does_not_import_great_expectations():
    code = "import sys, codex_memories.extract.quality; print('great_expectations' in sys.modules, 'pandas' in sys.modules)"
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.split() == ["False", "False"]


def test_zero_or_negative_size_limit_is_rejected():
    with pytest.raises(ValueError):
        check_extraction_batch([good("t")], max_field_bytes=0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("---\na: 1\nb: two words\n---\nbody", {"a": "1", "b": "two words"}),
        ("---\r\na: 1\r\n---\r\n", {"a": "1"}),
        ("---\na: 1\n", None),
        ("body\n---\na: 1\n---\n", None),
    ],
)
def test_front_matter_parsing(text, expected):
    assert parse_front_matter(text) == expected
