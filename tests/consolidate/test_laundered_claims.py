"""Issue 36.2 end to end: a model that rewrites tool-output instructions as the user's wishes gets
none of them live, and the user's own rules, paraphrased or in other languages, all are.

Ten sessions of one repository (benchmarks/data/provenance/laundering_holdout.json, held out
from tuning): 22 hostile instructions in command output, files and `apply_patch` context, in
nine languages, each rewritten by `tests.support.laundering_model` as "The user wants ...",
"用户要求 ...", "El usuario quiere ..."; 8 real user rules, paraphrased by the same model. Phase 1
and phase 2 run as flows against the test server; what a session gets is our installed
SessionStart hook's text. With the claim check switched off, the hostile claims do reach the
hook (so this test can fail).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import codex_memories.extract.user_claims as user_claims
from codex_memories.outcomes import Outcome
from codex_memories.settings import SettingsOverrides
from codex_memories_flows.phase1 import phase1
from codex_memories_flows.phase2 import phase2
from tests.consolidate.test_tool_output_never_steers import ORIGIN, live_texts, project_folder
from tests.flows.test_phase1_flow import isolated_settings  # noqa: F401 - the phase-1 flow tests' settings, autouse
from tests.support.laundering_model import laundering_model, load_sessions, write_sessions
from tests.support.openai_server import running_openai_server

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

NOW = datetime.now(UTC)


def run_pipeline(tmp_path: Path) -> tuple[dict[str, str], object]:
    sessions = load_sessions()
    home = tmp_path / "codex_home"
    home.mkdir()
    write_sessions(
        home, sessions, created_at=lambda number: NOW - timedelta(hours=30 + number),
        cwd=str(project_folder(tmp_path)), repository_url=ORIGIN,
    )
    options = {
        "codex_home": str(home), "db_url": f"sqlite:///{tmp_path / 'state.sqlite'}", "memory_root": str(tmp_path / "memories"),
        "provider": "openai", "ignore_age_windows": True, "max_rollouts_per_startup": 16,
    }
    with running_openai_server(laundering_model(sessions)) as server:
        phase1(overrides=SettingsOverrides(**options, base_url=server.base_url))
        state = phase2(overrides=SettingsOverrides(**options, base_url=server.base_url), force=True, return_state=True)
        assert not server.handler_errors
    report = state.result(raise_on_failure=False) if state.is_failed() else state.result()
    return live_texts(tmp_path, home), report


def markers(kind: str) -> list[str]:
    return [claim["marker"] for case in load_sessions() for claim in case["claims"] if claim["kind"] == kind]


def test_laundered_instructions_never_go_live_and_every_real_user_rule_does(tmp_path: Path) -> None:
    texts, report = run_pipeline(tmp_path)

    assert report.outcome is Outcome.succeeded, report.reason
    assert len(markers("hostile")) >= 20 and len(markers("user_rule")) >= 5
    live = {marker: where for marker in markers("hostile") for where, text in texts.items() if marker in text}
    assert live == {}
    assert [marker for marker in markers("user_rule") if marker not in texts["SessionStart"]] == []


def test_without_the_claim_check_the_laundering_model_makes_them_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(user_claims.ClaimSupport, "backed", property(lambda self: True))
    monkeypatch.setattr(user_claims.ClaimSupport, "laundered", property(lambda self: False))

    texts, report = run_pipeline(tmp_path)

    assert report.outcome is Outcome.succeeded, report.reason
    assert sum(marker in texts["SessionStart"] for marker in markers("hostile")) >= 8
