"""`codex-memories backfill`: a user error is one line; a run prints the backfill report."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.support.memory_home import MemoryHome
from tests.support.rollout_factory import write_rollout


def test_a_missing_source_folder_or_a_bad_day_is_one_line_and_exit_1(tmp_path: Path) -> None:
    home = MemoryHome(tmp_path)

    missing = home.cli("backfill", "--source", str(tmp_path / "nowhere"))
    bad_day = home.cli("backfill", "--since", "yesterday")

    assert missing.returncode == 1 and missing.stderr.strip().count("\n") == 0
    assert "is not a folder" in missing.stderr
    assert bad_day.returncode == 1 and "YYYY-MM-DD" in bad_day.stderr


def test_backfill_extracts_archived_sessions_and_consolidates(tmp_path: Path) -> None:
    home = MemoryHome(tmp_path)
    created_at = datetime.now(UTC) - timedelta(days=3)
    write_rollout(home.codex_home, created_at=created_at, user_messages=["I prefer pnpm over npm."], archived=True)

    result = home.cli("backfill", "--provider", "heuristic", "--batch-size", "4")

    assert result.returncode == 0, result.stderr
    assert "# codex-memories backfill" in result.stdout and "`succeeded`" in result.stdout
    assert "pnpm" in home.memory_text()
