"""Any JSON value in any field of any line: the rollout reader and the transcript builder use it or
skip it and count it, and never raise anything but the documented per-file `OSError`.

Hypothesis mutates realistic rollout lines (one field replaced by an arbitrary JSON value, or
removed) and mixes in raw garbage; the table below pins the reason each damaged envelope counts as.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codex_memories.extract.heuristic import extract_heuristically
from codex_memories.ingest.rollout_scan import scan_rollout
from codex_memories.ingest.transcript import build_memory_transcript
from codex_memories.llm.base import ExtractionRequest
from codex_memories.prompts import RenderedPrompt

PROMPT = RenderedPrompt(text="unused", template_name="stage_one_input", sha256="0" * 64)
SHELL_ARGUMENTS = json.dumps({"command": ["bash", "-lc", "make test"], "workdir": "/src/app"})

TEMPLATES: list[dict] = [
    {
        "timestamp": "2026-11-30T10:00:00.000Z",
        "type": "session_meta",
        "payload": {
            "id": "0193a000-0000-7000-8000-000000000001",
            "timestamp": "2026-11-30T10:00:00.000Z",
            "cwd": "/src/app",
            "source": "cli",
            "git": {"commit_hash": "abc", "branch": "main", "repository_url": "git@example.com:a/b.git"},
        },
    },
    {"timestamp": "2026-11-30T10:00:01Z", "type": "turn_context", "payload": {"cwd": "/src/app", "model": "m"}},
    {
        "timestamp": "2026-11-30T10:00:02Z",
        "type": "response_item",
        "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Always run make test."}]},
    },
    {
        "timestamp": "2026-11-30T10:00:03Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "ok <oai-mem-citation>MEMORY.md:1-2</oai-mem-citation>"}],
        },
    },
    {
        "timestamp": "2026-11-30T10:00:04Z",
        "type": "response_item",
        "payload": {"type": "function_call", "name": "shell", "arguments": SHELL_ARGUMENTS, "call_id": "c1"},
    },
    {
        "timestamp": "2026-11-30T10:00:05Z",
        "type": "response_item",
        "payload": {"type": "function_call_output", "call_id": "c1", "output": json.dumps({"output": "ok", "metadata": {"exit_code": 1}})},
    },
    {
        "timestamp": "2026-11-30T10:00:06Z",
        "type": "response_item",
        "payload": {"type": "local_shell_call", "call_id": "c2", "action": {"command": ["make", "test"], "working_directory": "/src/app"}},
    },
    {"timestamp": "2026-11-30T10:00:07Z", "type": "response_item", "payload": {"type": "function_call_output", "call_id": "c2", "output": "Exit code: 0"}},
    {"timestamp": "2026-11-30T10:00:08Z", "type": "event_msg", "payload": {"type": "user_message", "message": "hi", "kind": "plain"}},
    {"timestamp": "2026-11-30T10:00:09Z", "type": "event_msg", "payload": {"type": "agent_message", "message": "done"}},
    {"timestamp": "2026-11-30T10:00:10Z", "type": "event_msg", "payload": {"type": "mcp_tool_call_begin", "invocation": {"server": "memories"}}},
    {"timestamp": "2026-11-30T10:00:11Z", "type": "response_item", "payload": {"type": "web_search_call", "action": {"query": "x"}}},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "legacy bare line"}]},
    {"id": "0193a000-0000-7000-8000-000000000002", "timestamp": "2026-11-30T09:00:00Z"},
]

# Text no store takes as it is: lone surrogates and NUL (written as `\\u` escapes or, encoded,
# as bytes that are not UTF-8).
UNSTORABLE_TEXT = st.sampled_from(["\ud800", "a\udfffb", "\x00", "nul\x00in"])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12) | UNSTORABLE_TEXT,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=6,
)


def _paths(value: object, prefix: tuple = ()) -> list[tuple]:
    """Every path to a field (dict key or list index) inside a line."""
    found = []
    if isinstance(value, dict):
        for key, child in value.items():
            found.append(prefix + (key,))
            found += _paths(child, prefix + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found.append(prefix + (index,))
            found += _paths(child, prefix + (index,))
    return found


@st.composite
def mutated_line(draw: st.DrawFn) -> bytes:
    choice = draw(st.integers(min_value=0, max_value=9))
    if choice == 0:  # raw garbage, one line of it
        return draw(st.binary(max_size=40)).replace(b"\n", b" ")
    line = copy.deepcopy(draw(st.sampled_from(TEMPLATES)))
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        paths = _paths(line)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        holder = line
        for step in path[:-1]:
            holder = holder[step]
        if draw(st.booleans()) and isinstance(holder, dict):
            del holder[path[-1]]
        else:
            holder[path[-1]] = draw(json_values)
    if draw(st.booleans()) and isinstance(line, dict) and line:
        # A whole new field, as newer Codex builds add them.
        line[draw(st.text(max_size=6))] = draw(json_values)
    return json.dumps(line, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")


def _strings(value: object):
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for entry in value:
            yield from _strings(entry)
    elif isinstance(value, dict):
        for key, entry in value.items():
            yield key
            yield from _strings(entry)


def _non_blank_lines(data: bytes) -> int:
    count = 0
    for index, line in enumerate(data.split(b"\n")):
        stripped = line.strip()
        if index == 0 and stripped.startswith(b"\xef\xbb\xbf"):
            stripped = stripped[3:].strip()
        count += bool(stripped)
    return count


def _assert_counts_add_up(stats, expected_total: int) -> None:
    assert stats.lines_total == expected_total
    assert stats.lines_parsed + stats.lines_skipped == stats.lines_total
    assert sum(stats.skipped_by_reason.values()) == stats.lines_skipped


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(lines=st.lists(mutated_line(), max_size=14), trailing_newline=st.booleans())
def test_any_json_in_any_field_is_used_or_skipped_and_counted(tmp_path: Path, lines: list[bytes], trailing_newline: bool) -> None:
    data = b"\n".join(lines) + (b"\n" if trailing_newline else b"")
    path = tmp_path / "rollout-2026-11-30T10-00-00-0193a000-0000-7000-8000-000000000001.jsonl"
    path.write_bytes(data)

    scan = scan_rollout(path)
    transcript = build_memory_transcript(path, token_budget=4000)

    _assert_counts_add_up(scan.stats, _non_blank_lines(data))
    assert transcript.stats == scan.stats
    # Storable text only, whatever the lines held: UTF-8 encodable and without NUL.
    for text in [transcript.text, scan.cwd or "", scan.first_user_message or "", *_strings(transcript.items)]:
        assert "\x00" not in text
        text.encode("utf-8")
    assert transcript.tokens <= 4000
    assert all(isinstance(item, dict) for item in transcript.items)
    # The transcript items are what the extractor (offline or model) is given: they must be
    # usable too (this is where `unhashable type: 'list'` used to surface).
    extract_heuristically(
        ExtractionRequest(
            thread_id="t", rollout_path=str(path), cwd="/src/app", model="m",
            system_prompt=PROMPT, user_prompt=PROMPT, transcript_items=transcript.items,
        )
    )


ODD_VALUES = [["response_item"], {"a": 1}, 3, True]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        *[({"type": value, "payload": {"type": "message", "role": "user"}}, "type_not_a_string") for value in ODD_VALUES],
        *[({"type": "response_item", "payload": {"type": value, "role": "user"}}, "payload_type_not_a_string") for value in ODD_VALUES],
        *[({"type": "response_item", "payload": {"type": "message", "role": value}}, "role_not_a_string") for value in ODD_VALUES],
        *[({"type": "response_item", "payload": value}, "payload_not_an_object") for value in [["x"], "x", 1]],
        ({"type": "message", "role": ["user"], "content": []}, "role_not_a_string"),  # a legacy bare item
    ],
)
def test_a_line_whose_envelope_fields_hold_other_json_is_skipped_with_its_reason(tmp_path: Path, line: dict, reason: str) -> None:
    good = {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Always lint."}]}}
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(json.dumps(entry) for entry in (good, line, good)) + "\n", encoding="utf-8")

    scan = scan_rollout(path)
    transcript = build_memory_transcript(path, token_budget=1000)

    for stats in (scan.stats, transcript.stats):
        assert stats.lines_total == 3 and stats.lines_parsed == 2
        assert stats.skipped_by_reason == {reason: 1}
    assert len(transcript.items) == 2
    assert scan.has_user_message


@pytest.mark.parametrize("depth", [150, 990, 5000])
def test_deeply_nested_json_is_used_or_skipped_never_a_recursion_error(tmp_path: Path, depth: int) -> None:
    nested = "[" * depth + "]" * depth
    line = '{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":' + nested + "}}"
    path = tmp_path / "rollout.jsonl"
    path.write_text(line + "\n", encoding="utf-8")

    scan = scan_rollout(path)
    transcript = build_memory_transcript(path, token_budget=100_000)

    assert scan.stats == transcript.stats and scan.stats.lines_total == 1
    if depth < 200:
        assert scan.stats.lines_parsed == 1 and len(transcript.items) == 1
    else:
        assert scan.stats.lines_skipped == 1
        assert scan.stats.skipped_by_reason == {"too_deeply_nested": 1}


def test_an_unreadable_rollout_is_the_documented_oserror(tmp_path: Path) -> None:
    missing = tmp_path / "gone.jsonl"
    with pytest.raises(OSError):
        scan_rollout(missing)
    with pytest.raises(OSError):
        build_memory_transcript(missing, token_budget=100)


TEMPLATE_LINES = [json.dumps(template, separators=(",", ":")).encode() for template in TEMPLATES]
ODD_LINES = [
    b'{"type":"event_msg","payload":{"type":"x","v":NaN}}',
    b'{"type":"event_msg","payload":{"type":"x","v":-Infinity}}',
    b'{"type":"event_msg","payload":{"type":"x","v":1e999}}',
    b'{"type":"event_msg","payload":{"type":"x","v":"\\ud800"}}',  # a lone surrogate escape
    b'{"type":"event_msg","payload":{"type":"x","v":"\xed\xa0\x80"}}',  # an encoded surrogate
    b'{"type":"event_msg","payload":{"type":"x","v":"\x01"}}',  # a raw control character
    b'{"type":"event_msg","payload":{"type":"x","v":' + b"[" * 1500 + b"]" * 1500 + b"}}",
    b'{"type":"event_msg","payload":{"type":"x"}}{"b":2}',
    b'{"type":"event_msg","payload":{"type":"x",}}',
    b'["response_item"]',
    b"\xff\xfe{}",
]


def _same_reading(data: bytes) -> None:
    from codex_memories.ingest.rollout_reader import LineParser, RawLine

    exact, fast = LineParser(), LineParser(fast=True)
    line = RawLine(0, len(data), data, data.endswith(b"\n"))
    by_exact, by_fast = exact.parse(line), fast.parse(line)
    assert fast.stats() == exact.stats(), data[:100]
    # NaN is not equal to itself: compare the JSON both would write.
    assert json.dumps(by_fast, sort_keys=True) == json.dumps(by_exact, sort_keys=True), data[:100]


@pytest.mark.parametrize("data", ODD_LINES + [line + b"\n" for line in ODD_LINES])
def test_the_orjson_reader_of_the_scan_uses_or_skips_odd_lines_as_json_loads_does(data: bytes) -> None:
    _same_reading(data)


@settings(max_examples=400, deadline=None)
@given(
    template=st.sampled_from(TEMPLATE_LINES),
    edits=st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 2), st.binary(max_size=3)), max_size=4),
    newline=st.booleans(),
)
def test_the_orjson_reader_of_the_scan_uses_or_skips_any_damaged_line_as_json_loads_does(template, edits, newline) -> None:
    """Discovery parses with orjson, the transcript with `json.loads`; the scan's line counts stand
    for the transcript's (`KeptLines`), so both must read every line the same way."""
    data = bytearray(template)
    for position, kind, chunk in edits:
        index = position % (len(data) + 1)
        if kind == 0:
            data[index:index] = chunk  # insert
        elif kind == 1:
            del data[index : index + len(chunk) + 1]  # delete
        else:
            data[index : index + len(chunk)] = chunk  # overwrite
    _same_reading(bytes(data) + (b"\n" if newline else b""))
