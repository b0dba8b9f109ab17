import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from codex_memories.ingest.rollout_files import (
    UnsupportedRolloutCompression,
    list_rollouts,
    thread_id_from_filename,
    zstd_supported,
)
from codex_memories.ingest.rollout_reader import MAX_LINE_BYTES
from codex_memories.ingest.rollout_scan import external_context_kind, normalize_source, scan_rollout
from codex_memories.ingest.transcript import build_memory_transcript, sanitize_response_item, unspotlight_item
from codex_memories.redact import REDACTED, find_secret_kinds
from codex_memories.tokens import count_tokens
from tests.support.rollout_factory import uuid7_at, write_large_rollout, write_rollout
from tests.support.secrets import PLANTED_SECRETS, SECRET_VALUES

FIXTURES = Path(__file__).parents[1] / "fixtures" / "rollouts"
DAMAGED = FIXTURES / "damaged.jsonl"
SCENARIO_76 = FIXTURES / "scenario_76_sanitizer.jsonl"
FORK_ID = "019a4100-1111-7222-8333-444455556666"
PARENT_ID = "019a40ff-aaaa-7bbb-8ccc-dddddddddddd"
FORK = FIXTURES / f"rollout-2026-10-21T10-00-00-{FORK_ID}.jsonl"
LEGACY = FIXTURES / "legacy_bare_lines.jsonl"
WHEN = datetime(2026, 10, 14, 9, 12, 3, tzinfo=UTC)


# --- Tolerant reading ---------------------------------------------------------------------------


def test_damaged_file_is_read_with_every_bad_line_counted_by_reason():
    scan = scan_rollout(DAMAGED)
    assert scan.stats.skipped_by_reason == {
        "invalid_json": 2,  # one of them binary garbage: not UTF-8 either, but not JSON whatever its bytes
        "not_an_object": 2,
        "partial_last_line": 1,
    }
    assert scan.stats.lines_skipped == 5
    assert scan.stats.lines_parsed == 9
    assert scan.stats.lines_total == 14
    # The agent message with bytes that are not UTF-8 is used, its bad bytes replaced, and counted.
    assert scan.stats.lines_repaired == 1
    assert scan.stats.repaired_by_reason == {"invalid_utf8": 1}
    assert scan.thread_id == "019a3f1e-6b2c-7d41-8e5f-1a2b3c4d5e6f"
    assert scan.first_user_message.startswith("Add retries to the fetcher.")
    assert scan.last_activity_at == datetime(2026, 10, 20, 8, 15, 10, tzinfo=UTC)


def test_end_offset_stops_before_an_unparsable_partial_last_line():
    data = DAMAGED.read_bytes()
    scan = scan_rollout(DAMAGED)
    assert scan.end_offset == data.rindex(b"\n") + 1


def test_damaged_file_still_yields_a_transcript_of_the_good_lines():
    transcript = build_memory_transcript(DAMAGED, token_budget=10_000)
    kinds = [item["type"] for item in transcript.items]
    assert kinds == ["message", "function_call", "function_call_output", "message"]
    assert transcript.stats.lines_skipped == 5
    assert json.loads(transcript.text) == transcript.items


def test_unknown_fields_are_kept_and_unknown_line_types_ignored():
    transcript = build_memory_transcript(DAMAGED, token_budget=10_000)
    assert transcript.items[0]["future_field"] == {"x": 1}
    assert "world_state" not in transcript.text
    assert "token_usage_record" not in transcript.text


def test_empty_file_gives_an_empty_scan_and_transcript(tmp_path):
    path = tmp_path / "rollout-2026-10-01T00-00-00-019a0000-0000-7000-8000-000000000000.jsonl"
    path.write_bytes(b"")
    scan = scan_rollout(path)
    assert scan.thread_id is None and scan.source == "unknown" and scan.end_offset == 0
    transcript = build_memory_transcript(path, token_budget=100)
    assert transcript.items == [] and transcript.text == "[]"


def test_pure_garbage_never_raises(tmp_path):
    path = tmp_path / "garbage.jsonl"
    path.write_bytes(bytes(range(256)) * 40 + b"\n{" * 10 + b"[" * 100_000 + b"\n")
    scan = scan_rollout(path)
    assert scan.stats.lines_parsed == 0
    assert scan.stats.lines_skipped == scan.stats.lines_total > 0
    assert build_memory_transcript(path, token_budget=100).items == []


def test_json_nested_past_the_parsers_stack_counts_as_too_deeply_nested(tmp_path):
    path = tmp_path / "nested.jsonl"
    path.write_text("[" * 200_000 + "]" * 200_000 + "\n")
    assert scan_rollout(path).stats.skipped_by_reason == {"too_deeply_nested": 1}
    assert build_memory_transcript(path, token_budget=100).stats.skipped_by_reason == {"too_deeply_nested": 1}


def test_too_long_line_is_skipped_without_being_held(tmp_path, monkeypatch):
    monkeypatch.setattr("codex_memories.ingest.rollout_reader.MAX_LINE_BYTES", 1_000)
    path = write_rollout(tmp_path, created_at=WHEN, user_messages=["hi"], tool_calls=[("cat big.log", "x" * 5_000)])
    scan = scan_rollout(path)
    assert scan.stats.skipped_by_reason == {"line_too_long": 1}
    assert scan.end_offset == path.stat().st_size
    assert MAX_LINE_BYTES > 1_000  # the module constant itself is generous


def test_zst_file_without_zstandard_is_an_io_error(tmp_path, monkeypatch):
    monkeypatch.setattr("codex_memories.ingest.rollout_files.zstandard", None)
    assert not zstd_supported()
    path = tmp_path / "rollout-2026-10-01T00-00-00-019a0000-0000-7000-8000-000000000000.jsonl.zst"
    path.write_bytes(b"\x28\xb5\x2f\xfd")
    with pytest.raises(UnsupportedRolloutCompression):
        scan_rollout(path)
    assert isinstance(UnsupportedRolloutCompression("x"), OSError)


def test_legacy_lines_without_envelope_are_understood():
    scan = scan_rollout(LEGACY)
    assert scan.thread_id == "5973b6c0-94b8-487b-a530-2aeb6098ae0e"
    assert scan.has_user_message and scan.first_user_message == "fix the build"
    transcript = build_memory_transcript(LEGACY, token_budget=1_000)
    assert [item["role"] for item in transcript.items] == ["user", "assistant"]


# --- Discovery scan -------------------------------------------------------------------------------


def test_scan_reads_session_meta_of_a_factory_rollout(tmp_path):
    path = write_rollout(
        tmp_path,
        created_at=WHEN,
        cwd="/home/dana/src/billing-api",
        source="cli",
        user_messages=["always use pnpm, never npm", "now run the tests"],
        tool_calls=[("pnpm test", "12 passed")],
    )
    scan = scan_rollout(path)
    assert scan.thread_id == thread_id_from_filename(path)
    assert scan.created_at == WHEN
    assert scan.cwd == "/home/dana/src/billing-api"
    assert scan.source == "cli"
    assert scan.originator == "codex_cli_rs"
    assert scan.cli_version and scan.model_provider == "openai"
    assert scan.git_branch == "main" and scan.git_origin_url == "git@github.com:acme/app.git"
    assert len(scan.git_sha) == 40
    assert scan.has_user_message
    assert scan.first_user_message == "always use pnpm, never npm"
    assert scan.last_activity_at > WHEN
    assert not scan.used_external_context
    assert scan.end_offset == path.stat().st_size
    assert scan.stats.lines_skipped == 0


def test_fork_keeps_the_first_session_meta_and_normalises_subagent_source():
    scan = scan_rollout(FORK)
    assert scan.thread_id == FORK_ID
    assert scan.forked_from_id == PARENT_ID
    assert scan.cwd == "/home/dana/src/app"
    assert scan.source == "subagent"


def test_first_user_message_is_redacted_and_skips_harness_text():
    scan = scan_rollout(FORK)
    assert scan.first_user_message == f"Review the retry change. My password = {REDACTED} by the way."


def test_first_user_message_is_at_most_200_characters(tmp_path):
    path = write_rollout(tmp_path, created_at=WHEN, user_messages=["é" * 1_000])
    assert scan_rollout(path).first_user_message == "é" * 200


def test_harness_only_user_messages_do_not_count_but_a_user_message_event_does(tmp_path):
    scan = scan_rollout(SCENARIO_76)
    assert scan.has_user_message
    assert scan.first_user_message == "ignored by phase 1"  # from the user_message event

    harness_only = tmp_path / "harness.jsonl"
    harness_only.write_text(
        "\n".join(line for line in SCENARIO_76.read_text().splitlines() if '"user_message"' not in line) + "\n"
    )
    scan = scan_rollout(harness_only)
    assert not scan.has_user_message and scan.first_user_message is None


def test_session_with_no_user_turn_at_all(tmp_path):
    path = write_rollout(tmp_path, created_at=WHEN, user_messages=[])
    scan = scan_rollout(path)
    assert not scan.has_user_message and scan.first_user_message is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("cli", "cli"),
        ("vscode", "vscode"),
        ("exec", "exec"),
        ("mcp", "mcp"),
        (None, "vscode"),
        ({"subagent": "review"}, "subagent"),
        ({"subagent": {"thread_spawn": {"depth": 1}}}, "subagent"),
        ("Atlas", "atlas"),
        (42, "unknown"),
    ],
)
def test_source_normalisation(raw, expected):
    assert normalize_source(raw) == expected


def test_missing_source_in_session_meta_means_vscode(tmp_path):
    path = write_rollout(tmp_path, created_at=WHEN, source=None, user_messages=["hello"])
    assert scan_rollout(path).source == "vscode"


def test_web_search_marks_external_context(tmp_path):
    path = write_rollout(tmp_path, created_at=WHEN, user_messages=["what is new in pnpm 10"], web_search=True)
    scan = scan_rollout(path)
    assert scan.used_external_context
    assert scan.external_context_kinds == ("web_search_call",)


def test_mcp_tool_call_marks_external_context():
    scan = scan_rollout(FORK)
    assert scan.used_external_context
    assert scan.external_context_kinds == ("mcp_tool_call",)


@pytest.mark.parametrize(
    ("line_type", "payload", "expected"),
    [
        ("response_item", {"type": "tool_search_call"}, "tool_search_call"),
        ("response_item", {"type": "tool_search_output"}, "tool_search_output"),
        ("response_item", {"type": "function_call", "name": "mcp__linear__list_issues"}, "mcp_tool_call"),
        ("response_item", {"type": "function_call", "name": "list_issues", "namespace": "mcp__linear"}, "mcp_tool_call"),
        ("response_item", {"type": "function_call", "name": "linear__list_issues"}, "mcp_tool_call"),
        ("response_item", {"type": "function_call", "name": "mcp__memories__search"}, None),
        ("response_item", {"type": "function_call", "name": "shell"}, None),
        ("response_item", {"type": "function_call", "name": "apply_patch"}, None),
        ("event_msg", {"type": "mcp_tool_call_begin", "invocation": {"server": "github"}}, "mcp_tool_call"),
        ("event_msg", {"type": "mcp_tool_call_end", "invocation": {"server": "memories"}}, None),
        ("event_msg", {"type": "web_search_end", "query": "x"}, "web_search_call"),
        ("event_msg", {"type": "exec_command_end"}, None),
    ],
)
def test_external_context_detection(line_type, payload, expected):
    assert external_context_kind(line_type, payload) == expected


def test_citations_are_harvested_once_per_turn_in_file_order():
    scan = scan_rollout(FORK)
    # Turn 1 has the block as response item and as agent_message event: counted once.
    # Turn 2 (after turn_context) cites again: counted again.
    assert len(scan.citations) == 2
    assert all(c.text.startswith("<oai-mem-citation>") and c.text.endswith("</oai-mem-citation>") for c in scan.citations)
    assert PARENT_ID in scan.citations[0].text
    assert scan.citations[0].line_offset < scan.citations[1].line_offset


def test_start_offset_limits_citation_harvest_to_later_lines():
    first = scan_rollout(FORK)
    resumed = scan_rollout(FORK, start_offset=first.citations[0].line_offset + 1)
    assert [c.line_offset for c in resumed.citations] == [first.citations[1].line_offset]
    assert resumed.thread_id == first.thread_id  # the facts still come from the whole file
    assert scan_rollout(FORK, start_offset=first.end_offset).citations == []


def test_appending_to_a_rollout_moves_end_offset(tmp_path):
    path = write_rollout(tmp_path, created_at=WHEN, user_messages=["hi"])
    before = scan_rollout(path).end_offset
    with path.open("ab") as handle:
        handle.write(b'{"timestamp":"2026-10-14T10:00:00.000Z","type":"event_msg","payload":{"type":"agent_mes')
    assert scan_rollout(path).end_offset == before


# --- Files ------------------------------------------------------------------------------------------


def rollout_paths(folder: Path) -> list[Path]:
    return [rollout.path for rollout in list_rollouts(folder).rollouts]


def test_the_listing_holds_a_folders_rollouts_sorted_and_nothing_else(tmp_path):
    late = write_rollout(tmp_path, created_at=datetime(2026, 11, 2, 8, 0, tzinfo=UTC), user_messages=["b"])
    early = write_rollout(tmp_path, created_at=datetime(2026, 10, 30, 8, 0, tzinfo=UTC), user_messages=["a"])
    archived = write_rollout(tmp_path, created_at=datetime(2026, 10, 1, 8, 0, tzinfo=UTC), user_messages=["c"], archived=True)
    (tmp_path / "sessions" / "2026" / "notes.jsonl").write_text("{}\n")
    assert rollout_paths(tmp_path / "sessions") == [early, late]
    assert rollout_paths(tmp_path / "archived_sessions") == [archived]
    assert rollout_paths(tmp_path / "missing") == []


def test_thread_id_from_filename():
    assert thread_id_from_filename(FORK) == FORK_ID
    assert thread_id_from_filename("rollout-2026-10-21T10-00-00-019A4100-1111-7222-8333-444455556666.jsonl.zst") == FORK_ID
    assert thread_id_from_filename("rollout-2026-10-21-019a4100.jsonl") is None
    assert thread_id_from_filename("notes.jsonl") is None


def test_factory_thread_ids_are_uuid7_with_the_session_time():
    thread_id = uuid7_at(WHEN)
    assert thread_id[14] == "7"
    assert int(thread_id.replace("-", "")[:12], 16) == int(WHEN.timestamp() * 1000)


# --- Phase-1 transcript -------------------------------------------------------------------------------


def test_scenario_76_sanitizer_keeps_environment_and_subagent_messages_only():
    transcript = build_memory_transcript(SCENARIO_76, token_budget=10_000)
    # As the rollout had them: the stage-1 input also marks these harness parts as data.
    assert [unspotlight_item(item) for item in json.loads(transcript.text)] == [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "<environment_context>\n  <cwd>/tmp</cwd>\n</environment_context>"}],
        },
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "<subagent_notification>\nreview finished\n</subagent_notification>"}],
        },
    ]
    assert transcript.truncated_tokens == 0


def test_scenario_77_secret_in_tool_output_is_redacted_before_upload(tmp_path):
    output = json.dumps({"token": "sk-abcdefghijklmnopqrstuvwxyz123456"})
    path = write_rollout(tmp_path, created_at=WHEN, user_messages=["print the config"], tool_calls=[("cat config.json", output)])
    transcript = build_memory_transcript(path, token_budget=10_000)
    assert "sk-abcdefghijklmnopqrstuvwxyz123456" not in transcript.text
    assert REDACTED in transcript.text
    assert "sk-abcdefghijklmnopqrstuvwxyz123456" not in json.dumps(transcript.items)


def test_every_planted_secret_is_redacted_in_the_transcript(tmp_path):
    calls = [(f"echo {name}", text) for name, text in PLANTED_SECRETS.items()]
    path = write_rollout(tmp_path, created_at=WHEN, user_messages=["dump the env"], tool_calls=calls)
    transcript = build_memory_transcript(path, token_budget=50_000)
    serialized_items = json.dumps(transcript.items, ensure_ascii=False)
    for name, value in SECRET_VALUES.items():
        for piece in value.split("\n"):
            assert piece not in transcript.text, name
            assert piece not in serialized_items, name
    assert find_secret_kinds(transcript.text) == []
    assert json.loads(transcript.text) == transcript.items


@pytest.mark.parametrize(
    ("item", "kept"),
    [
        ({"type": "message", "role": "developer", "content": []}, False),
        ({"type": "message", "role": "system", "content": []}, False),
        ({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}, True),
        ({"type": "reasoning", "summary": [], "encrypted_content": "x"}, False),
        ({"type": "image_generation_call", "result": "..."}, False),
        ({"type": "compaction", "encrypted_content": "x"}, False),
        ({"type": "something_new"}, False),
        ({"type": "local_shell_call", "call_id": "c", "status": "completed", "action": {"type": "exec", "command": ["ls"]}}, True),
        ({"type": "custom_tool_call", "call_id": "c", "name": "apply_patch", "input": "*** Begin Patch"}, True),
        ({"type": "custom_tool_call_output", "call_id": "c", "output": "Done"}, True),
        ({"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "q"}}, True),
        ({"type": "tool_search_call", "query": "q"}, True),
        ({"type": "tool_search_output", "tools": []}, True),
    ],
)
def test_sanitizer_keeps_only_model_visible_items(item, kept):
    assert (sanitize_response_item(item) is not None) is kept


def test_sanitizer_clears_encrypted_content_and_user_status():
    user = {"type": "message", "role": "user", "status": "completed", "content": [{"type": "input_text", "text": "hi"}]}
    call = {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c", "encrypted_content": "gAAA"}
    assert "status" not in sanitize_response_item(user)
    assert "encrypted_content" not in sanitize_response_item(call)
    assert user["status"] == "completed"  # the input is not mutated


def test_agents_md_detection_is_ascii_case_insensitive():
    part = {"type": "input_text", "text": "  # agents.MD Instructions for /x\n<instructions>\nrules\n</Instructions>  "}
    message = {"type": "message", "role": "user", "content": [part, {"type": "input_text", "text": "real question"}]}
    assert sanitize_response_item(message)["content"] == [{"type": "input_text", "text": "real question"}]


def test_oversized_transcript_is_middle_truncated_to_the_budget(tmp_path):
    calls = [(f"pytest -k case{i}", f"case{i} " + "log line " * 400) for i in range(60)]
    path = write_rollout(
        tmp_path,
        created_at=WHEN,
        user_messages=["FIRST: always use pnpm, never npm", "middle turn", "LAST: ship it"],
        tool_calls=calls,
        assistant_messages=["a1", "a2", "FINAL ANSWER"],
    )
    budget = 4_000
    transcript = build_memory_transcript(path, token_budget=budget)
    exact = count_tokens(transcript.text)
    assert exact <= budget
    # Counted once per item (plus separators), not again as a whole: within the recount margin.
    assert abs(transcript.tokens - exact) <= 16 + 2 * len(transcript.items)
    assert transcript.tokens > budget * 0.8  # the budget is used, not wasted
    assert "FIRST: always use pnpm" in transcript.text
    assert "FINAL ANSWER" in transcript.text
    assert "LAST: ship it" not in transcript.text or "tokens truncated" in transcript.text
    parsed = json.loads(transcript.text)
    markers = [entry for entry in parsed if isinstance(entry, str)]
    assert len(markers) == 1 and markers[0].endswith(" tokens truncated…")
    assert [entry for entry in parsed if isinstance(entry, dict)] == transcript.items
    assert transcript.truncated_tokens > 0
    assert transcript.original_tokens_estimate > budget


def test_a_single_huge_item_is_cut_not_dropped_and_secrets_at_the_cut_are_redacted(tmp_path):
    secret = "hunter2hunter2hunter2"
    huge = "x " * 30_000 + f"password = {secret} " + "y " * 30_000
    path = write_rollout(tmp_path, created_at=WHEN, user_messages=["show the log"], tool_calls=[("cat app.log", huge)], assistant_messages=["END"])
    transcript = build_memory_transcript(path, token_budget=2_000)
    assert transcript.tokens <= 2_000
    assert secret not in transcript.text
    assert "END" in transcript.text
    assert "show the log" in transcript.text


def test_the_sent_text_never_exceeds_the_budget_although_items_are_counted_once(tmp_path):
    """The transcript's count is the sum of its items' counts; tokens merge or split where items
    meet, so near the budget the text is recounted: whatever the budget, what is sent fits."""
    calls = [(f"make target{i}", f"out{i} ,{{}}[] " + "word " * (7 * i + 3)) for i in range(40)]
    path = write_rollout(tmp_path, created_at=WHEN, user_messages=["go", "again"], tool_calls=calls, assistant_messages=["ok", "done"])
    for budget in range(150, 6_000, 173):
        transcript = build_memory_transcript(path, token_budget=budget)
        assert count_tokens(transcript.text) <= budget, budget


def test_tiny_budget_never_fails(tmp_path):
    path = write_rollout(tmp_path, created_at=WHEN, user_messages=["a" * 500], tool_calls=[("ls", "b" * 500)])
    for budget in (1, 5, 20, 60):
        transcript = build_memory_transcript(path, token_budget=budget)
        assert count_tokens(transcript.text) <= budget


def test_budget_must_be_positive(tmp_path):
    path = write_rollout(tmp_path, created_at=WHEN, user_messages=["a"])
    with pytest.raises(ValueError):
        build_memory_transcript(path, token_budget=0)


def test_large_generated_rollout_is_streamed_within_budget(tmp_path):
    path = tmp_path / "large.jsonl"
    written = write_large_rollout(path, 3_000_000, secret="hunter2hunter2hunter2")
    assert written >= 3_000_000
    transcript = build_memory_transcript(path, token_budget=20_000)
    assert transcript.tokens <= 20_000
    assert transcript.original_tokens_estimate > 200_000
    assert "hunter2hunter2hunter2" not in transcript.text
    assert "always use pnpm, never npm" in transcript.text  # head kept
    assert transcript.items[-1]["role"] == "assistant"  # tail kept


def test_example_codex_home_rollouts_all_parse(tmp_path):
    home = Path(__file__).parents[2] / "examples" / "codex_home"
    files = rollout_paths(home / "sessions") + rollout_paths(home / "archived_sessions")
    assert len(files) >= 9
    raw_files_with_secrets = 0
    for path in files:
        scan = scan_rollout(path)
        assert scan.thread_id == thread_id_from_filename(path)
        raw_files_with_secrets += bool(find_secret_kinds(path.read_text(errors="replace")))
        transcript = build_memory_transcript(path, token_budget=150_000)
        assert find_secret_kinds(transcript.text) == []
        assert "sk-proj-" not in transcript.text
    assert raw_files_with_secrets >= 1  # the planted fake key is really there before redaction
    copied = tmp_path / "copy"
    shutil.copytree(home, copied)
    assert len(rollout_paths(copied / "sessions")) == len(files) - 1


def test_a_token_in_the_git_remote_url_of_session_meta_never_reaches_the_thread_record(tmp_path: Path) -> None:
    token = "ghp_" + "Z8qT2mVx7LpR4nWk9sYd3HcJ6fBa1GuE5oQi"
    path = tmp_path / "rollout-2026-10-21T10-00-00-01a1a6b7-8b28-73c6-869a-45b14da4f9fc.jsonl"
    meta = {
        "type": "session_meta",
        "timestamp": "2026-10-21T10:00:00Z",
        "payload": {
            "id": "01a1a6b7-8b28-73c6-869a-45b14da4f9fc",
            "timestamp": "2026-10-21T10:00:00Z",
            "cwd": "/home/dana/src/app",
            "source": "cli",
            "git": {"repository_url": f"https://x-access-token:{token}@github.com/dana/app.git", "branch": "main"},
        },
    }
    path.write_text(json.dumps(meta) + "\n", encoding="utf-8")
    scan = scan_rollout(path)
    assert scan.git_origin_url is not None and token not in scan.git_origin_url
    assert scan.git_branch == "main" and scan.cwd == "/home/dana/src/app"


def _item_by_item(path: Path, budget: int):
    """The head/tail builder over every kept item: the path a session takes when it does not fit
    the budget in bytes."""
    from codex_memories.ingest.rollout_reader import LineParser, line_envelope, read_lines
    from codex_memories.ingest.transcript import _TranscriptBuilder

    parser = LineParser()
    builder = _TranscriptBuilder(budget)
    with path.open("rb") as stream:
        for line in read_lines(stream):
            obj = parser.parse(line)
            if obj is None:
                continue
            line_type, payload = line_envelope(obj)
            item = sanitize_response_item(payload) if line_type == "response_item" and payload else None
            if item is not None:
                builder.add(item, line.end - line.offset)
    return builder.finish(parser.stats())


def test_a_session_that_fits_the_budget_in_bytes_is_not_tokenised_and_sends_what_the_item_path_sends(tmp_path):
    """Within the budget in UTF-8 bytes a text cannot exceed it in tokens (a token is at least
    one byte): such a transcript is redacted as one text and not counted (`tokens` is then its
    byte length, an upper bound), and it is the very text the item-by-item path renders."""
    calls = [(f"pytest -q tests/t{i}", "PASS ✓ 漢字 src/app.py:12 " * (30 * i + 5) + PLANTED_SECRETS["github_pat"]) for i in range(10)]
    path = write_rollout(tmp_path, created_at=WHEN, user_messages=["go", "again"], tool_calls=calls, assistant_messages=["ok", "done"])
    size = path.stat().st_size
    bounded = 0
    for budget in (size // 4, size // 3, size // 2, size, 2 * size):
        transcript = build_memory_transcript(path, token_budget=budget)
        exact = count_tokens(transcript.text)
        assert exact <= budget
        assert SECRET_VALUES["github_pat"] not in transcript.text
        if transcript.tokens_counted:
            assert abs(transcript.tokens - exact) <= 16 + 2 * len(transcript.items)
            continue
        bounded += 1
        assert exact <= transcript.tokens == len(transcript.text.encode("utf-8")) <= budget
        assert transcript.truncated_tokens == 0
        reference = _item_by_item(path, budget)
        assert (transcript.text, transcript.items) == (reference.text, reference.items)
    assert bounded >= 2


def test_a_session_over_the_budget_in_bytes_only_after_redaction_is_counted_exactly(tmp_path):
    """Redaction can lengthen a text (an 8-character value becomes the 17-character marker):
    when the redacted text is over the budget in bytes, it is counted, and kept whole when the
    count fits."""
    path = write_rollout(tmp_path, created_at=WHEN, user_messages=["password=abcdefgh " * 300], assistant_messages=["ok"])
    text_bytes = len(build_memory_transcript(path, token_budget=10**6).text.encode("utf-8"))
    transcript = build_memory_transcript(path, token_budget=text_bytes - 1)
    assert transcript.tokens_counted
    assert transcript.tokens == count_tokens(transcript.text) <= text_bytes - 1
    assert transcript.truncated_tokens == 0 and "abcdefgh" not in transcript.text
