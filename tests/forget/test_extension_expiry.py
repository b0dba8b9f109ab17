"""Forgetting route 6, extension expiry: which resources expire, and the actions returned."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from codex_memories.forget.audit import ForgetAction
from codex_memories.forget.extension_expiry import (
    expire_extension_resources,
    expiry_actions,
    prune_old_extension_resources,
    resource_timestamp,
)
from codex_memories.state.records import ForgetRoute
from codex_memories.storage import open_memory_root

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture(params=["local", "memory"])
def root(request, tmp_path):
    if request.param == "local":
        return open_memory_root(tmp_path / "memories")
    return open_memory_root(f"memory://tests-{uuid.uuid4().hex}/memories")


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H-%M-%S")


# Scenario 58
def test_extension_resources_older_than_seven_days_are_pruned(root):
    now = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
    old = f"extensions/chronicle/resources/{_stamp(now - timedelta(days=8))}-abcd-10min-old.md"
    recent = f"extensions/chronicle/resources/{_stamp(now - timedelta(days=6))}-abcd-10min-recent.md"
    undated = "extensions/chronicle/resources/index.md"
    not_markdown = f"extensions/chronicle/resources/{_stamp(now - timedelta(days=30))}-data.json"
    root.write_text("extensions/chronicle/instructions.md", "read these")
    for path in (old, recent, undated, not_markdown):
        root.write_text(path, "x")
    # No instructions.md: not an extension, so nothing there is pruned.
    orphan = f"extensions/orphan/resources/{_stamp(now - timedelta(days=30))}-old.md"
    root.write_text(orphan, "x")

    assert prune_old_extension_resources(root, now) == [old]
    assert not root.exists(old)
    for path in (recent, undated, not_markdown, orphan):
        assert root.exists(path)


def test_prune_without_extensions_folder_is_a_no_op(root):
    assert prune_old_extension_resources(root, datetime.now(UTC)) == []


def test_prune_requires_an_aware_time(root):
    with pytest.raises(ValueError):
        prune_old_extension_resources(root, datetime(2026, 1, 1))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("2025-10-14T09-30-00-note.md", datetime(2025, 10, 14, 9, 30, tzinfo=UTC)),
        ("2025-1-14T09-30-00-note.md", None),
        ("2025-13-14T09-30-00-note.md", None),
        ("index.md", None),
    ],
)
def test_resource_timestamp_table(name, expected):
    assert resource_timestamp(name) == expected



@pytest.mark.parametrize(
    ("resources", "expected_expired"),
    [
        ({}, []),
        ({"chronicle": [8]}, ["chronicle/8"]),
        ({"chronicle": [6, 7.1, 30]}, ["chronicle/30", "chronicle/7.1"]),
        ({"chronicle": [2], "imports": [9]}, ["imports/9"]),
    ],
    ids=["nothing", "one-expired", "only-the-old-ones", "per-extension"],
)
def test_expiry_returns_one_action_per_deleted_resource_sorted_by_path(root, resources, expected_expired):
    paths = {}
    for extension, ages in resources.items():
        root.write_text(f"extensions/{extension}/instructions.md", "read these")
        for age in ages:
            path = f"extensions/{extension}/resources/{_stamp(NOW - timedelta(days=age))}-r{age}.md"
            root.write_text(path, "x")
            paths[f"{extension}/{age}"] = path

    actions = expire_extension_resources(root, NOW)

    expected_paths = sorted(paths[key] for key in expected_expired)
    assert actions == [
        ForgetAction(
            route=ForgetRoute.extension_expiry,
            target=path,
            reason="extension resource older than 7 days",
            removed={"file": path},
        )
        for path in expected_paths
    ]
    assert all(not root.exists(path) for path in expected_paths)
    assert expire_extension_resources(root, NOW) == []  # idempotent


def test_expiry_actions_are_pure_and_carry_the_route_enum():
    [action] = expiry_actions(["extensions/x/resources/2026-01-01T00-00-00-a.md"])
    assert action.route is ForgetRoute.extension_expiry
    assert action.removed == {"file": "extensions/x/resources/2026-01-01T00-00-00-a.md"}
