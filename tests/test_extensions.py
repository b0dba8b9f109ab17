"""Persistent extension resources (spec 7.4, scenario 69)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codex_memories.extensions import (
    InvalidExtensionInput,
    PersistentResource,
    persistent_extension_needs_sync,
    sync_persistent_extension_resources,
)
from tests.support.secrets import PLANTED_SECRETS, SECRET_VALUES

NAME = "external-import"
RESOURCES = f"extensions/{NAME}/resources"


def resource(source_id: str, target: str, sha: str, content: str) -> PersistentResource:
    return PersistentResource(source_id=source_id, target_file_name=target, content_sha256=sha, content=content)


def test_scenario_69_sync_updates_changed_resources_removes_stale_ones_and_keeps_unrelated_files(tmp_path: Path) -> None:
    extension = tmp_path / "extensions" / NAME
    initial = [resource("project/index", "index-a.md", "hash-a", "first index"), resource("project/topic", "topic-b.md", "hash-b", "first topic")]

    first = sync_persistent_extension_resources(tmp_path, NAME, "instructions v1", initial)
    assert (len(first.written), first.removed, first.unchanged) == (2, [], 0)
    (extension / "resources" / "unrelated.md").write_text("keep me")

    assert not persistent_extension_needs_sync(tmp_path, NAME, "instructions v1", initial)
    updated = [resource("project/index", "index-a.md", "hash-a2", "updated index")]
    assert persistent_extension_needs_sync(tmp_path, NAME, "instructions v2", updated)

    second = sync_persistent_extension_resources(tmp_path, NAME, "instructions v2", updated)
    assert second.written == [f"{RESOURCES}/index-a.md"]
    assert second.removed == [f"{RESOURCES}/topic-b.md"]
    assert second.unchanged == 0
    assert (extension / "resources" / "unrelated.md").read_text() == "keep me"
    assert (extension / "instructions.md").read_text() == "instructions v2"
    manifest = (extension / "manifest.json").read_text()
    assert manifest.endswith("}\n")
    assert json.loads(manifest) == {"version": 1, "resources": {"project/index": {"targetFileName": "index-a.md", "contentSha256": "hash-a2"}}}


def test_a_second_sync_with_the_same_inputs_writes_nothing(tmp_path: Path) -> None:
    inputs = [resource("a", "a.md", "h", "text")]
    sync_persistent_extension_resources(tmp_path, NAME, "i", inputs)
    again = sync_persistent_extension_resources(tmp_path, NAME, "i", inputs)
    assert (again.written, again.removed, again.unchanged) == ([], [], 1)


@pytest.mark.parametrize(
    "setup",
    ["missing_folder", "bad_manifest", "other_version", "edited_resource"],
)
def test_needs_sync_notices_every_kind_of_drift(tmp_path: Path, setup: str) -> None:
    inputs = [resource("a", "a.md", "h", "text")]
    extension = tmp_path / "extensions" / NAME
    if setup != "missing_folder":
        sync_persistent_extension_resources(tmp_path, NAME, "i", inputs)
    if setup == "bad_manifest":
        (extension / "manifest.json").write_text("{not json")
    if setup == "other_version":
        (extension / "manifest.json").write_text('{"version": 2, "resources": {}}\n')
    if setup == "edited_resource":
        (extension / "resources" / "a.md").write_text("edited")
    assert persistent_extension_needs_sync(tmp_path, NAME, "i", inputs)
    assert not persistent_extension_needs_sync(tmp_path, "nothing-here", "i", [])


@pytest.mark.parametrize(
    ("name", "resources"),
    [
        ("a/b", []),
        ("..", []),
        (NAME, [resource("", "a.md", "h", "x")]),
        (NAME, [resource("a", "a.txt", "h", "x")]),
        (NAME, [resource("a", "../a.md", "h", "x")]),
        (NAME, [resource("a", "a.md", "h", "x"), resource("a", "b.md", "h", "x")]),
        (NAME, [resource("a", "a.md", "h", "x"), resource("b", "a.md", "h", "x")]),
    ],
)
def test_inputs_breaking_the_folder_contract_are_refused_before_any_write(tmp_path: Path, name: str, resources: list) -> None:
    with pytest.raises(InvalidExtensionInput):
        sync_persistent_extension_resources(tmp_path, name, "i", resources)
    assert not (tmp_path / "extensions").exists()


def test_a_symlinked_resources_folder_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "root" / "extensions" / NAME).mkdir(parents=True)
    (tmp_path / "root" / "extensions" / NAME / "resources").symlink_to(outside)
    with pytest.raises(InvalidExtensionInput):
        sync_persistent_extension_resources(tmp_path / "root", NAME, "i", [resource("a", "a.md", "h", "x")])
    assert list(outside.iterdir()) == []


def test_secrets_in_resources_never_reach_the_memory_folder(tmp_path: Path) -> None:
    planted = PLANTED_SECRETS["github_token"]
    sync_persistent_extension_resources(tmp_path, NAME, f"instructions {planted}", [resource("a", "a.md", "h", planted)])
    for file in (tmp_path / "extensions").rglob("*"):
        if file.is_file():
            assert SECRET_VALUES["github_token"] not in file.read_text()
    assert not persistent_extension_needs_sync(tmp_path, NAME, f"instructions {planted}", [resource("a", "a.md", "h", planted)])
