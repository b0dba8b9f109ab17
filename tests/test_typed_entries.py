"""Typed-entry suffixes: written, read back, expired, and merged from the model's entries."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from codex_memories.typed_entries import (
    EntryMeta,
    TypedEntry,
    apply_entries,
    drop_expired_lines,
    has_expired_entry,
    split_entry,
    with_meta,
)

META = EntryMeta(type="constraint", weight=0.9, reason="the branch is being refactored; see #12", expires=date(2026, 12, 6))


def test_a_suffix_round_trips_and_stays_the_last_thing_on_the_line() -> None:
    line = with_meta('"don\'t commit to main this week"', META)
    assert line == (
        '"don\'t commit to main this week" '
        "{memory: type=constraint; weight=0.9; expires=2026-12-06; reason=the branch is being refactored; see #12}"
    )
    assert split_entry(line) == ('"don\'t commit to main this week"', META)


def test_a_reason_with_braces_cannot_end_the_suffix_early() -> None:
    line = with_meta("use f-strings", EntryMeta(type="preference", weight=0.6, reason="format() with {} is noisy"))
    bare, meta = split_entry(line)
    assert bare == "use f-strings"
    assert meta is not None and meta.reason == "format() with () is noisy"


@pytest.mark.parametrize(
    "suffix",
    ["{memory: type=rule; weight=0.5}", "{memory: type=fact; weight=2}", "{memory: type=fact; weight=0.5; expires=soon}"],
)
def test_a_suffix_that_does_not_parse_is_kept_as_plain_text(suffix: str) -> None:
    line = f"keep this {suffix}"
    assert split_entry(line) == (line, None)


def test_an_entry_holds_through_its_expiry_day_and_expires_at_the_next_midnight_utc() -> None:
    assert not META.expired(datetime(2026, 12, 6, 23, 59, tzinfo=UTC))
    assert META.expired(datetime(2026, 12, 7, 0, 0, tzinfo=UTC))
    with pytest.raises(ValueError):
        META.expired(datetime(2026, 12, 7))


def test_only_expired_bullet_lines_are_dropped() -> None:
    text = "\n".join(
        [
            "Preference signals:",
            f"- {with_meta('old freeze', META)}",
            f"- {with_meta('lasting rule', EntryMeta(type='constraint', weight=1.0))}",
            "- a plain bullet",
            f"[1] {with_meta('numbered evidence', META)}",
            f"prose mentioning {with_meta('an entry', META)}",
        ]
    )
    later = datetime(2026, 12, 8, tzinfo=UTC)
    kept, expired = drop_expired_lines(text, later)
    assert [entry.text for entry in expired] == ["old freeze", "numbered evidence"]
    assert "old freeze" not in kept and "lasting rule" in kept and "a plain bullet" in kept and "prose mentioning" in kept
    assert has_expired_entry(text, later) and not has_expired_entry(kept, later)
    assert drop_expired_lines(text, datetime(2026, 12, 1, tzinfo=UTC)) == (text, [])


def test_model_entries_annotate_their_bullet_or_are_added_under_the_right_section() -> None:
    raw = '---\ndescription: x\n---\n### Task 1: t\n\nPreference signals:\n- "Use httpx, not requests."\n'
    merged = apply_entries(
        raw,
        [
            TypedEntry(text="use httpx, not requests", meta=EntryMeta(type="constraint", weight=0.9)),
            TypedEntry(text="staging listens on 5433", meta=EntryMeta(type="fact", weight=0.5)),
        ],
    )
    assert '- "Use httpx, not requests." {memory: type=constraint; weight=0.9}' in merged
    assert merged.endswith("Reusable knowledge:\n- staging listens on 5433 {memory: type=fact; weight=0.5}\n")


def test_an_unknown_type_or_a_weight_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError):
        EntryMeta(type="rule", weight=0.5)
    with pytest.raises(ValueError):
        EntryMeta(type="fact", weight=1.5)
