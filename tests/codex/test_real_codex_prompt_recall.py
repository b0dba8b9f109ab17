"""Prompt recall reaches a real Codex turn when the project holds the answer, and stays out otherwise (issue 27).

On both pinned versions (0.147.0 from PyPI, 0.171.0 from npm): a memory folder in Codex's layout
holds one project's facts for the session's folder, another project's facts for another folder,
and user-level notes; `codex-memories install` adds our hooks. Then `codex exec` in the
project's folder asks (a) a paraphrase of one of its facts, with none of the fact's distinctive
words, and (b) an ordinary coding ask the memory cannot answer. The model request of (a) carries
our `<recalled_memories>` block with that fact; the request of (b) carries no such block; the
hook log names both outcomes. The prompts are from the tune half of
`benchmarks/data/recall_paraphrase/` (the test half stays unseen).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codex_memories.read.hook_log import hook_log_path
from codex_memories.read.index import build_index
from tests.codex.test_real_codex_hooks import HOOK_BYPASS, codex_memories
from tests.support.codex_cli import (
    CODEX_VERSIONS,
    CodexHome,
    developer_texts,
    run_codex_exec,
    text_reply,
    user_turn_requests,
    with_pipeline_requests,
)
from tests.support.openai_server import OpenAITestServer

pytestmark = [pytest.mark.codex]
versions = pytest.mark.parametrize("codex_version", CODEX_VERSIONS, indirect=True)

# What the test proves is the hook on real Codex, not recall quality (benchmarks/recall_families.py
# measures that). The paraphrase this test used before issue 34's gate, "adding a reports page,
# is a plain def view ok?", is one of that gate's misses (P 0.47 against 0.56): the summary's
# topic line "staff reporting pages, ..." leads the ranking, and the word and encoder legs
# disagree on it.
PARAPHRASE = "new staff reports view: class-based or a def?"
ANSWER_KEY = "LoginRequiredMixin"
UNANSWERABLE = "how do I run the benchmarks?"
OTHER_PROJECT_KEY = "syscall.Flock"

PROJECT_FACTS = [
    ("Reusable knowledge", "Production releases are a Heroku pipeline promotion: `heroku pipelines:promote -a clinicbook-staging` once the staging smoke checks pass; nobody pushes to the prod app directly."),
    ("Reusable knowledge", "Local Postgres for clinicbook comes from `docker compose -f compose.dev.yml up pg` and listens on 55432, so it doesn't collide with other projects' databases."),
    ("Reusable knowledge", "The Django admin is mounted at `/staff-7f3a/`, not `/admin/`; the security review asked for the move and `/admin/` is now a honeypot that logs the caller's IP."),
    ("User preferences", "New views are class-based with `LoginRequiredMixin` first in the bases; the user doesn't want function-based views in new code."),
    ("Failures and how to do differently", "Don't squash the migrations in the `appointments` app: data migration 0042 backfills per-clinic timezones and has to replay on a fresh database."),
]
OTHER_FACTS = [
    ("Reusable knowledge", "Release binaries come from `make dist`, which injects the version through `-ldflags -X main.version`; a plain `go build` reports the version as `dev`."),
    ("Reusable knowledge", "Windows isn't a release target: the snapshot lock uses `syscall.Flock`, and porting it was judged not worth it for a dev-only tool."),
    ("Reusable knowledge", "Integration tests sit behind the `integration` build tag and need `PGSNAP_TEST_DSN` pointing at a throwaway server; `go test ./...` alone runs only the unit tests."),
]
NOTES = [
    "The user's shell is fish: give environment-variable snippets as `set -x VAR value` or `env VAR=value cmd`, never `export`.",
    "Every TODO left in code must reference an issue, written `TODO(#123): ...`; bare TODOs get flagged in review.",
]


def task_group(cwd: Path, title: str, facts: list[tuple[str, str]]) -> list[str]:
    lines = [
        f"# Task Group: {cwd}",
        f"scope: work in {cwd.name} (1 session; themes: {title})",
        f"applies_to: cwd={cwd}; reuse_rule=use when working in {cwd} or below it",
        "",
        f"## Task 1: {title}, outcome: success",
        "",
        "### rollout_summary_files",
        f"- rollout_summaries/2026-10-21T15-12-40-0001-{cwd.name}.md (cwd={cwd}, updated_at=2026-10-21T15:12:40+00:00, thread_id=t-{cwd.name})",
        "",
    ]
    for section in ("User preferences", "Reusable knowledge", "Failures and how to do differently"):
        bullets = [f"- {text} [Task 1]" for where, text in facts if where == section]
        if bullets:
            lines += [f"## {section}", *bullets, ""]
    return lines


def write_memory_folder(root: Path, project: Path, other: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    memory = [
        "<!-- Written by the codex-memories pipeline. -->",
        "",
        *task_group(project, "Onboard a contractor and add staff reporting pages", PROJECT_FACTS),
        *task_group(other, "Cut a release and publish it to Homebrew", OTHER_FACTS),
        "# Task Group: ad-hoc notes",
        "scope: facts the user explicitly asked to remember, through ad-hoc notes",
        "applies_to: cwd=any; reuse_rule=notes are authoritative",
        "",
        "## User preferences",
        *[f"- {note} [ad-hoc note]" for note in NOTES],
        "",
    ]
    (root / "MEMORY.md").write_text("\n".join(memory), encoding="utf-8")
    summary = ["v1", "", "## User Profile", "", "Engineer on a Django clinic-booking app and a Go CLI.", "", "## What's in Memory", "",
               f"### {project}", "- staff reporting pages, local database, views", "", f"### {other}", "- releases, Homebrew", ""]
    (root / "memory_summary.md").write_text("\n".join(summary), encoding="utf-8")


def recalled_blocks(server: OpenAITestServer) -> list[str]:
    [request] = user_turn_requests(server)
    return [text for text in developer_texts(request) if text.startswith("<recalled_memories>")]


@versions
def test_a_paraphrase_gets_its_fact_and_an_unanswerable_ask_gets_no_memory_block(
    codex_version: str, codex_home: CodexHome, codex_server: OpenAITestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [n for n in os.environ if n.startswith(("CODEX_MEMORIES_", "OPENAI_"))] + ["CODEX_HOME"]:
        monkeypatch.delenv(name, raising=False)
    project = (tmp_path / "clinicbook").resolve()
    other = (tmp_path / "pgsnap").resolve()
    project.mkdir()
    other.mkdir()
    write_memory_folder(codex_home.memories_dir, project, other)
    build_index(codex_home.memories_dir)  # what phase 2 leaves: the prompt hook never builds one
    installed = codex_memories(codex_home, "install")
    assert installed.returncode == 0, installed.stderr

    codex_server.set_handler(with_pipeline_requests(text_reply("Use a class-based view.")))
    codex_server.clear_requests()
    answered = run_codex_exec(codex_home, PARAPHRASE, cwd=project, server=codex_server, extra_args=HOOK_BYPASS)
    assert answered.returncode == 0, answered.stderr[-3000:]
    [block] = recalled_blocks(codex_server)
    assert ANSWER_KEY in block and "MEMORY.md:" in block
    assert OTHER_PROJECT_KEY not in block and str(other) not in block

    codex_server.set_handler(with_pipeline_requests(text_reply("Run the benchmark target.")))
    codex_server.clear_requests()
    silent = run_codex_exec(codex_home, UNANSWERABLE, cwd=project, server=codex_server, extra_args=HOOK_BYPASS)
    assert silent.returncode == 0, silent.stderr[-3000:]
    assert recalled_blocks(codex_server) == []

    log = hook_log_path(codex_home.path).read_text(encoding="utf-8")
    assert "UserPromptSubmit injected_relevant_memory" in log and "UserPromptSubmit skipped_nothing_relevant" in log
    assert "failed_" not in log
