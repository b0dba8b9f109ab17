from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.memory_home import MemoryHome


@pytest.fixture
def home(tmp_path: Path) -> MemoryHome:
    return MemoryHome(tmp_path)
