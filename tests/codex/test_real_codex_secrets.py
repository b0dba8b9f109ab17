"""A secret in a command a real Codex session ran never reaches a later session (issue 29).

On both pinned versions: in a real interactive session the user types a password and the agent
runs a command that carries passwords as flags (it succeeds). Our phase 1 with the offline
provider quotes succeeded commands verbatim into the memory, phase 2 (offline) writes the
folder, `codex-memories install` adds our hooks, and a second real session is asked about the
deploy: what the model receives (the SessionStart summary, the recalled lines) holds the
command with its secrets redacted, and no secret.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codex_memories.runtime import close_stores
from codex_memories.settings import SettingsOverrides
from tests.codex.test_real_codex_hooks import HOOK_BYPASS, codex_memories, default_db_url, pipeline_env  # noqa: F401
from tests.support.codex_cli import (
    CODEX_VERSIONS,
    CodexHome,
    run_codex_exec,
    run_codex_tui,
    shell_then_text,
    text_reply,
    user_turn_requests,
    with_pipeline_requests,
)
from tests.support.openai_server import OpenAITestServer
from tests.support.secret_formats import leaked

pytestmark = [pytest.mark.codex, pytest.mark.usefixtures("prefect_harness")]
versions = pytest.mark.parametrize("codex_version", CODEX_VERSIONS, indirect=True)

# Shapes the redaction of issue 29 added; `deploy.sh` (written in the project) ignores its
# arguments and succeeds.
DB_PASSWORD = "Tr0ub4dor-x9q"
STORE_PASSWORD = "Pel1can#Harb0r"
TYPED_PASSWORD = "Granite1987!"
COMMAND = f"./deploy.sh --db-password '{DB_PASSWORD}' -storepass {STORE_PASSWORD}"
PROMPT = f"Deploy the billing API. The staging admin password is {TYPED_PASSWORD} until Friday."
SECRETS = (DB_PASSWORD, STORE_PASSWORD, TYPED_PASSWORD)


@versions
def test_a_secret_in_a_command_codex_ran_reaches_no_later_session(
    codex_version: str, codex_home: CodexHome, codex_server: OpenAITestServer, codex_workdir: Path, pipeline_env: None  # noqa: F811
) -> None:
    from codex_memories_flows.phase1 import phase1
    from codex_memories_flows.phase2 import phase2

    script = codex_workdir / "deploy.sh"
    script.write_text("#!/bin/sh\necho deployed\n", encoding="utf-8")
    script.chmod(0o755)
    codex_server.set_handler(with_pipeline_requests(shell_then_text(COMMAND, "Deployed.")))
    # Interactive: phase 1 takes interactive sessions only (an exec session is a script's).
    first = run_codex_tui(codex_home, PROMPT, cwd=codex_workdir, server=codex_server)
    assert first.returncode == 0, first.pane

    settings = {"codex_home": str(codex_home.path), "db_url": default_db_url(codex_home), "provider": "heuristic"}
    report = phase1(overrides=SettingsOverrides(**settings, ignore_age_windows=True, max_rollouts_per_startup=16))
    assert report.claimed == 1, report
    result = phase2(overrides=SettingsOverrides(**settings), force=True)
    assert result.outcome is not None and not result.outcome.is_failure, result
    close_stores()
    handbook = (codex_home.memories_dir / "MEMORY.md").read_text(encoding="utf-8")
    # Not vacuous: the command is in the memory, quoted, with its secrets redacted.
    assert "--db-password '[REDACTED_SECRET]' -storepass [REDACTED_SECRET]" in handbook
    folder = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in codex_home.memories_dir.rglob("*.md"))
    assert [secret for secret in SECRETS if leaked(secret, folder)] == []

    installed = codex_memories(codex_home, "install")
    assert installed.returncode == 0, installed.stderr
    codex_server.set_handler(with_pipeline_requests(text_reply("Use the deploy command you ran before.")))
    codex_server.clear_requests()
    second = run_codex_exec(
        codex_home, "How did we deploy the billing API?", cwd=codex_workdir, server=codex_server, extra_args=HOOK_BYPASS
    )
    assert second.returncode == 0, second.stderr[-3000:]
    [request] = user_turn_requests(codex_server)
    sent = str(request.body)
    assert "[REDACTED_SECRET]" in sent  # the memory reached the session
    assert [secret for secret in SECRETS if leaked(secret, sent)] == []
