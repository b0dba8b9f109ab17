"""`paths.local_memory_folder`: the one answer to "is the memory root local?"."""

from __future__ import annotations

from pathlib import Path

import pytest

from codex_memories.paths import local_memory_folder
from codex_memories.storage import LocalMemoryRoot, open_memory_root


@pytest.mark.parametrize(
    ("root", "expected"),
    [
        ("/srv/memories", Path("/srv/memories")),
        ("relative/memories", Path("relative/memories")),
        ("file:///srv/memories", Path("/srv/memories")),
        ("s3://bucket/memories", None),
        ("gcs://bucket/memories", None),
        ("memory://scratch", None),
    ],
)
def test_a_root_is_local_when_it_is_a_path_or_a_file_url(root: str, expected: Path | None) -> None:
    assert local_memory_folder(root) == expected


def test_a_home_relative_root_is_expanded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert local_memory_folder("~/memories") == tmp_path / "memories"


def test_storage_opens_what_the_answer_calls_local_as_a_local_root(tmp_path: Path) -> None:
    root = open_memory_root(f"file://{tmp_path}")
    assert isinstance(root, LocalMemoryRoot) and root.local_path == tmp_path
