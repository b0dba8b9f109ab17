"""Later words win (issue 34, item 3): a statement that replaces an earlier one on the same subject
retires it, whatever the family, the language, the folder of the project, or the file order."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from codex_memories import paths
from codex_memories.consolidate.conflicts import DatedEntry, find_conflicts
from codex_memories.consolidate.heuristic import consolidate_heuristically, find_input_conflicts
from codex_memories.extract.scope_tagging import tag_raw_memory
from codex_memories.memory_folder.inputs import rebuild_raw_memories
from codex_memories.state.records import Stage1Output
from codex_memories.typed_entries import EntryMeta, with_meta

OLD_TIME = "2026-10-01T09:00:00+00:00"
NEW_TIME = "2026-11-15T09:00:00+00:00"


def entry(text: str, updated_at: str, *, group: str = "project=github.com/acme/app", position: int = 0) -> DatedEntry:
    return DatedEntry(text=text, group=group, source=updated_at, updated_at=updated_at, position=position)


# (kind, older statement, newer statement): every row is one replacement a user makes.
REPLACEMENTS = [
    ("package manager, English to Spanish", '"Use pnpm for every repository."', '"Usa bun en todos los repositorios."'),
    ("package manager, Japanese replacement", '"Use npm."', '"npm ではなく pnpm を使う"'),
    ("package manager, German instead-of", '"Verwende yarn."', '"Wir nutzen jetzt pnpm statt yarn."'),
    ("package manager, Chinese switch", '"用 npm 安装依赖"', '"改用 pnpm"'),
    ("runtime version, no cue word", '"Use Node 18 for this project."', '"We are on Node 20 now."'),
    ("runtime version, Spanish cue", '"Always use Python 3.11."', '"La versión de Python es 3.12."'),
    ("runtime version, at-sign", '"Install with node@18."', '"Pin node@22 in CI."'),
    ("AWS profile, Japanese", '"The AWS profile is `staging-admin`."', '"AWSのプロファイルはprod-adminを使ってください。"'),
    ("AWS profile, env var against prose", '"AWS_PROFILE=dev-admin"', '"Use the prod-admin AWS profile for deploys."'),
    ("port, Japanese without an entity", '"The dev database listens on port 5432."', '"開発DBのポートは5433です。"'),
    ("port, flag form", '"Start the API with --port 8080."', '"The API port is 8081 from now on."'),
    ("index alias, Spanish", '"The search index alias is products_v2."', '"Usa el alias products_v3 para el índice de búsqueda."'),
    ("region", '"The staging region is eu-west-1."', '"Deploy staging to region us-east-1."'),
    ("key: value slot", '"Default branch: `develop`"', '"Default branch: `main`"'),
    ("use X for Y slot", '"Use `make test` for the unit tests."', '"Use `just test` for the unit tests."'),
    ("French instead-of", '"Utilise poetry."', '"Utilise uv au lieu de poetry."'),
    ("switch from Y to X", '"Use mypy."', '"We switched from mypy to pyright."'),
    ("no longer, the old statement only works with it", '"Format with black."', '"We no longer use black; format with ruff format."'),
    ("no longer, Spanish", '"Los tests se corren con pytest-xdist."', '"Ya no usamos pytest-xdist, los tests van en serie."'),
    ("arrow", '"Search reads the index alias products_v4."', '"Index alias products_v4 -> products_v5 (reindexed)."'),
    ("preference verb, Spanish", '"Prefer yarn for installs."', '"Ahora preferimos pnpm."'),
    ("Y is N sets Y's version", '"We run Postgres 15 locally."', '"Local Postgres is 16 now."'),
    ("two-letter runtime, German", '"Ich nutze überall Go 1.21."', '"Überall jetzt Go 1.23, bitte."'),
]


@pytest.mark.parametrize(("kind", "older", "newer"), REPLACEMENTS, ids=[row[0] for row in REPLACEMENTS])
def test_a_later_statement_on_the_same_subject_retires_the_earlier_one(kind: str, older: str, newer: str) -> None:
    old = entry(older, OLD_TIME)
    new = entry(newer, NEW_TIME, position=1)
    conflicts = find_conflicts([old, new])
    assert [(conflict.winner, conflict.loser) for conflict in conflicts] == [(new, old)], kind


@pytest.mark.parametrize(("kind", "older", "newer"), REPLACEMENTS, ids=[row[0] for row in REPLACEMENTS])
def test_the_time_the_user_said_it_decides_not_the_file_order(kind: str, older: str, newer: str) -> None:
    # The newer statement comes first in the input: the older one still loses.
    new = entry(newer, NEW_TIME, position=0)
    old = entry(older, OLD_TIME, position=1)
    assert [(conflict.winner, conflict.loser) for conflict in find_conflicts([new, old])] == [(new, old)], kind


# Statements that share a word, a number or a family member but set different things.
HELD_APART = [
    ("two services, two ports", '"Run the API on port 8080."', '"Run the frontend dev server on port 3000."'),
    ("two kinds of tests", '"Use pytest for unit tests."', '"Use hypothesis for property tests."'),
    ("unrelated rules", '"Never push directly to main."', '"Run ruff before every commit."'),
    ("issue numbers are not versions", '"See issue 34 for the flaky test."', '"See issue 35 about the cache."'),
    ("one tool, two jobs", '"Use ruff for linting."', '"Use ruff for formatting."'),
    ("agreeing statements", '"Use httpx, not requests."', '"Use httpx for async code."'),
    ("two runtimes", '"Use Node 20."', '"Use Python 3.12."'),
    ("a replacement that names the old value", '"Use Node 20."', '"Node 20 replaced Node 18 last year; keep it."'),
    ("one attribute, two purposes", '"Use the AWS profile `billing-ro` to read invoices."', '"Use the AWS profile `deploy-rw` to deploy."'),
    ("no longer needing a word is not replacing every line with it", '"The cache lives in /var/cache/app."', '"We no longer need the cache warmup step."'),
]


@pytest.mark.parametrize(("kind", "first", "second"), HELD_APART, ids=[row[0] for row in HELD_APART])
def test_statements_about_different_subjects_are_both_kept(kind: str, first: str, second: str) -> None:
    assert find_conflicts([entry(first, OLD_TIME), entry(second, NEW_TIME, position=1)]) == [], kind


def test_the_same_subject_in_another_scope_is_not_replaced() -> None:
    older = entry('"Use pnpm."', OLD_TIME, group="project=github.com/acme/web")
    newer = entry('"Use npm."', NEW_TIME, group="project=github.com/acme/legacy", position=1)
    assert find_conflicts([older, newer]) == []


def test_a_one_off_never_replaces_a_standing_rule_but_a_standing_rule_replaces_a_one_off() -> None:
    one_off = with_meta('"Use npm for this commit only."', EntryMeta("preference", 0.5, expires=date(2026, 11, 15)))
    standing = entry('"Use pnpm."', OLD_TIME)
    temporary = entry(one_off, NEW_TIME, position=1)
    assert find_conflicts([standing, temporary]) == []

    later_standing = entry('"Use bun."', "2026-11-20T09:00:00+00:00", position=2)
    conflicts = find_conflicts([standing, temporary, later_standing])
    assert {(conflict.winner.text, conflict.loser.text) for conflict in conflicts} == {
        (later_standing.text, temporary.text),
        (later_standing.text, standing.text),
    }


# -- the offline consolidator ------------------------------------------------------------------


def _front(cwd: str) -> str:
    return f"---\ndescription: work in {cwd}\ntask: work\ntask_group: work\ntask_outcome: success\ncwd: {cwd}\nkeywords: work\n---\n\n"


def _block(number: int, section: str, line: str, scope: str) -> str:
    return f"### Task {number}: t{number}\ntask: t{number}\ntask_outcome: success\nscope: {scope}\n\n{section}:\n- {line}\n\n"


def _output(thread_id: str, cwd: str, lines: list[tuple[str, str, str]], *, key: str | None, updated: int) -> Stage1Output:
    body = "".join(_block(number, section, line, scope) for number, (section, line, scope) in enumerate(lines, start=1))
    return Stage1Output(
        thread_id=thread_id, source_updated_at=updated, raw_memory=tag_raw_memory(_front(cwd) + body, [scope for _, _, scope in lines], key),
        rollout_summary="# s\n", rollout_slug=None, generated_at=updated, cwd=cwd, rollout_path=f"/r/{thread_id}.jsonl",
    )


PREFS, FACTS = "Preference signals", "Reusable knowledge"
APP = "github.com/acme/app"


@pytest.fixture
def replaced_root(tmp_path: Path) -> Path:
    root = tmp_path / "memories"
    root.mkdir()
    # Newest first in the selection: the file order is the opposite of the time order.
    selection = [
        _output("new-clone", "/home/u/app-clone/api", [
            (PREFS, '"Usa bun en todos los repositorios."', "user"),
            (FACTS, "開発DBのポートは5433です。", "project"),
            (PREFS, '"We are on Node 20 now."', "project"),
        ], key=APP, updated=1_763_200_000),
        _output("old-main", "/home/u/app", [
            (PREFS, '"Use pnpm for every repository."', "user"),
            (FACTS, "The dev database listens on port 5432.", "project"),
            (PREFS, '"Use Node 18 for this project."', "project"),
            (PREFS, '"Never push directly to main."', "project"),
        ], key=APP, updated=1_760_000_000),
        _output("other-project", "/home/u/legacy", [(PREFS, '"Use Node 16 here."', "project")],
                key="github.com/acme/legacy", updated=1_750_000_000),
    ]
    rebuild_raw_memories(root, selection)
    return root


def test_the_offline_consolidator_keeps_only_the_newer_value_across_folders_and_for_every_repository(replaced_root: Path) -> None:
    run = consolidate_heuristically(replaced_root, now=datetime(2026, 12, 1, tzinfo=UTC))
    memory = (replaced_root / paths.MEMORY_FILE).read_text(encoding="utf-8")
    summary = (replaced_root / paths.MEMORY_SUMMARY_FILE).read_text(encoding="utf-8")
    for text in (memory, summary):
        assert "bun" in text and "pnpm" not in text
        assert "5433" in text and "5432" not in text
        assert "Node 20" in text and "Node 18" not in text
        assert "Never push directly to main." in text  # not replaced by anything
        assert "Node 16" in text  # another project's rule is its own
    assert {(conflict.winner.source, conflict.loser.source) for conflict in run.conflicts} == {("new-clone", "old-main")}
    assert len(run.conflicts) == 3
    # Phase 2 names the same replaced entries for the run artifact and the model consolidator.
    raw = (replaced_root / paths.RAW_MEMORIES_FILE).read_text(encoding="utf-8")
    assert sorted(conflict.loser.text for conflict in find_input_conflicts(raw)) == sorted(
        conflict.loser.text for conflict in run.conflicts
    )


# -- the model consolidator is told ------------------------------------------------------------


def test_the_model_consolidation_request_names_the_replaced_entries(replaced_root: Path) -> None:
    from openai import OpenAI

    from codex_memories.consolidate.consolidators import AgentConsolidator
    from tests.support.openai_server import ScriptedReply, running_openai_server

    (replaced_root / paths.WORKSPACE_DIFF_FILE).write_text("# Memory Workspace Diff\n\n## Status\n- A raw_memories.md\n", encoding="utf-8")
    with running_openai_server(lambda request: ScriptedReply(text="done")) as server:
        client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        outcome = AgentConsolidator(client, "test-model", api_mode="responses", max_steps=2).consolidate(replaced_root)
        requests = server.requests
    assert outcome.completed
    sent = requests[0].instructions + requests[0].input_text
    section = sent.split("### Entries replaced by a later statement", 1)[1]
    for replaced, replacement in (
        ("Use pnpm for every repository.", "Usa bun en todos los repositorios."),
        ("The dev database listens on port 5432.", "開発DBのポートは5433です。"),
        ("Use Node 18 for this project.", "We are on Node 20 now."),
    ):
        line = next(line for line in section.split("\n") if f'replaced: "{replaced}"' in line)
        assert f'by: "{replacement}"' in line and "thread `old-main`" in line
    assert "Never push directly to main." not in section and "Node 16" not in section


def test_without_replaced_entries_the_prompt_has_no_replaced_list(tmp_path: Path) -> None:
    from codex_memories.consolidate.consolidators import build_consolidation_prompt

    root = tmp_path / "memories"
    rebuild_raw_memories(root.mkdir() or root, [
        _output("only", "/home/u/app", [(PREFS, '"Use pnpm."', "project")], key=APP, updated=1_760_000_000),
    ])
    assert "Entries replaced by a later statement" not in build_consolidation_prompt(root).text
