"""The discovery scan's `KeptLines` index: the transcript of a long rollout read from its head and
its tail gives exactly what reading the whole file gives, and falls back to the whole file when
the file is not the one the scan read."""

import json
import os
import random
from pathlib import Path

import pytest

from codex_memories.ingest.rollout_reader import LineParser
from codex_memories.ingest.rollout_scan import KEPT_LINES_MIN_BYTES, scan_rollout
from codex_memories.ingest.transcript import build_memory_transcript
from tests.support.rollout_factory import write_large_rollout


def _fields(transcript):
    return (
        transcript.text,
        transcript.items,
        transcript.tokens,
        transcript.tokens_counted,
        transcript.truncated_tokens,
        transcript.original_tokens_estimate,
        transcript.stats,
    )


def _long_rollout(tmp_path: Path, *, seed: int, damaged: bool = False, huge_item: bool = False) -> Path:
    """A rollout of about 2 MB; `damaged` adds broken lines here and there, `huge_item` one tool
    output longer than the default tail holds (a cut item in the middle)."""
    path = tmp_path / f"rollout-{seed}.jsonl"
    write_large_rollout(path, 2_000_000, seed=seed, secret="hunter2hunter2hunter2")
    lines = path.read_bytes().splitlines(keepends=True)
    rng = random.Random(seed)
    if damaged:
        for _ in range(12):
            lines.insert(rng.randrange(1, len(lines)), rng.choice([b"{not json\n", b"\xff\xfe\n", b"[1,2]\n", b'{"type":7}\n']))
    if huge_item:
        output = "log " * 200_000 + "password = s3cr3t-s3cr3t-s3cr3t "
        item = {"timestamp": "2026-11-03T09:30:00.000Z", "type": "response_item",
                "payload": {"type": "function_call_output", "call_id": "call_huge", "output": output}}
        lines.insert(len(lines) // 2, (json.dumps(item) + "\n").encode())
    path.write_bytes(b"".join(lines))
    return path


@pytest.mark.parametrize("damaged,huge_item", [(False, False), (True, False), (False, True), (True, True)])
def test_a_long_rollout_gives_the_same_transcript_from_its_kept_lines_at_any_budget(tmp_path, damaged, huge_item):
    path = _long_rollout(tmp_path, seed=3 + damaged + 2 * huge_item, damaged=damaged, huge_item=huge_item)
    scan = scan_rollout(path)
    assert scan.kept_lines is not None and scan.kept_lines.total_bytes >= KEPT_LINES_MIN_BYTES
    assert scan.kept_lines.stats == scan.stats
    for budget in (1, 3_000, 150_000, 400_000):
        whole = build_memory_transcript(path, token_budget=budget)
        indexed = build_memory_transcript(path, token_budget=budget, kept_lines=scan.kept_lines)
        assert _fields(indexed) == _fields(whole), budget
    assert "hunter2hunter2hunter2" not in whole.text


def test_the_kept_lines_spare_the_middle_of_a_long_rollout(tmp_path, monkeypatch):
    path = _long_rollout(tmp_path, seed=11)
    scan = scan_rollout(path)
    parsed = []
    real_parse = LineParser.parse

    def counting_parse(self, line):
        parsed.append(line.offset)
        return real_parse(self, line)

    monkeypatch.setattr(LineParser, "parse", counting_parse)
    build_memory_transcript(path, token_budget=20_000)
    whole_lines = len(parsed)
    parsed.clear()
    build_memory_transcript(path, token_budget=20_000, kept_lines=scan.kept_lines)
    assert 0 < len(parsed) < whole_lines / 4


def test_a_rollout_that_changed_after_its_scan_is_read_whole(tmp_path):
    path = _long_rollout(tmp_path, seed=5)
    scan = scan_rollout(path)
    with path.open("ab") as handle:  # the session went on: new size and mtime
        handle.write(json.dumps({"timestamp": "2026-11-03T23:00:00.000Z", "type": "response_item", "payload": {
            "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "APPENDED LAST WORD"}]}}).encode() + b"\n")
    indexed = build_memory_transcript(path, token_budget=20_000, kept_lines=scan.kept_lines)
    assert _fields(indexed) == _fields(build_memory_transcript(path, token_budget=20_000))
    assert "APPENDED LAST WORD" in indexed.text


def test_a_line_that_is_not_what_the_scan_found_means_the_whole_file_is_read(tmp_path):
    """Same size, same mtime, other bytes (an editor, a copy over it): the index is stale, and a
    kept line that no longer parses as a kept item sends the build back to the whole file."""
    path = _long_rollout(tmp_path, seed=7)
    scan = scan_rollout(path)
    status = path.stat()
    data = bytearray(path.read_bytes())
    last_kept = scan.kept_lines.offsets[-1]
    data[last_kept] = ord("#")  # the tail's last item now starts with garbage
    path.write_bytes(bytes(data))
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert path.stat().st_size == scan.kept_lines.size and path.stat().st_mtime_ns == scan.kept_lines.mtime_ns
    indexed = build_memory_transcript(path, token_budget=20_000, kept_lines=scan.kept_lines)
    whole = build_memory_transcript(path, token_budget=20_000)
    assert _fields(indexed) == _fields(whole)
    assert whole.stats.skipped_by_reason.get("invalid_json") == 1


def test_a_short_rollout_keeps_no_index(tmp_path):
    path = tmp_path / "short.jsonl"
    write_large_rollout(path, 200_000, seed=2)
    assert scan_rollout(path).kept_lines is None
