"""Copy the bundled example Codex home, moving its timestamps so the newest session ended a day ago.

The examples are fixed files with fixed dates; Codex's windows (idle, age, `max_unused_days`) are
relative to now, so a demo that ran them as they are would remember less every month and nothing
after a while. The replayed copy keeps every file name, id and relative spacing; only the line
timestamps (and file mtimes) move. Usage: replay-examples.py SOURCE_CODEX_HOME TARGET_CODEX_HOME
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(TIME_FORMAT)[:-4] + "Z"


def newest_timestamp(files: list[Path]) -> datetime:
    newest = datetime.min.replace(tzinfo=UTC)
    for path in files:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                newest = max(newest, parse_time(json.loads(line)["timestamp"]))
            except (ValueError, KeyError, TypeError):
                continue  # damaged lines are part of the example; they stay as they are
    return newest


def shift_line(line: str, delta: timedelta) -> str:
    try:
        record = json.loads(line)
        record["timestamp"] = format_time(parse_time(record["timestamp"]) + delta)
        payload = record.get("payload")
        if record.get("type") == "session_meta" and isinstance(payload, dict) and "timestamp" in payload:
            payload["timestamp"] = format_time(parse_time(payload["timestamp"]) + delta)
    except (ValueError, KeyError, TypeError, AttributeError):
        return line  # keep damaged lines byte for byte
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def replay(source: Path, target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
    rollouts = sorted(target.rglob("rollout-*.jsonl"))
    delta = (datetime.now(UTC) - timedelta(days=1)) - newest_timestamp(rollouts)
    for path in rollouts:
        raw = path.read_text(encoding="utf-8", errors="surrogateescape")
        ends_with_newline = raw.endswith("\n")
        lines = [shift_line(line, delta) for line in raw.split("\n")[: -1 if ends_with_newline else None]]
        path.write_text("\n".join(lines) + ("\n" if ends_with_newline else ""), encoding="utf-8", errors="surrogateescape")
        newest = newest_timestamp([path]).timestamp()
        os.utime(path, (newest, newest))


if __name__ == "__main__":
    replay(Path(sys.argv[1]), Path(sys.argv[2]))
