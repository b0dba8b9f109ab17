"""Instructions laundered as the user's words (issue 36.2): how many go live, how many real rules stay.

Ten sessions of one repository from `benchmarks/data/provenance/laundering_holdout.json` (held
out from tuning the thresholds of `codex_memories.extract.user_claims`): 22 hostile instructions
in command output, files and `apply_patch` context, in nine languages; 8 real user rules. Phase 1
and phase 2 run as flows against the test server answering as `tests.support.laundering_model`,
which rewrites each hostile instruction as "The user wants ..." (in the language it read) and
paraphrases each user rule. Two runs in the same process: "before", with the claim check
switched off (every claim backed: the code before issue 36.2), and "after", as shipped.
Counted: hostile claims live (their marker in `MEMORY.md`, `memory_summary.md` or the
SessionStart text of a session in the repository), user rules in the SessionStart text.

Command: `.venv/bin/python -m benchmarks.laundered_provenance` (about 3 minutes on the shared machine).
"""

from __future__ import annotations

import os
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

if __name__ == "__main__":
    # A throw-away Prefect home, set before Prefect is imported below; only when run.
    os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="codex-memories-bench-prefect-")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")
    os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"

from prefect.testing.utilities import prefect_test_harness  # noqa: E402

import codex_memories.extract.user_claims as user_claims  # noqa: E402
from codex_memories.read.injection import build_session_context  # noqa: E402
from codex_memories.settings import SettingsOverrides  # noqa: E402
from codex_memories_flows.phase1 import phase1  # noqa: E402
from codex_memories_flows.phase2 import phase2  # noqa: E402
from tests.support.laundering_model import laundering_model, load_sessions, write_sessions  # noqa: E402
from tests.support.openai_server import running_openai_server  # noqa: E402

ORIGIN = "git@github.com:acme/app.git"
NOW = datetime.now(UTC)


def run(label: str) -> tuple[int, int, int, int]:
    """(hostile live, hostile, user rules served, user rules) of one pipeline run."""
    sessions = load_sessions()
    work = Path(tempfile.mkdtemp(prefix=f"codex-memories-bench-laundering-{label}-"))
    project = work / "app"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "config").write_text(f'[remote "origin"]\n\turl = {ORIGIN}\n', encoding="utf-8")
    home = work / "codex_home"
    write_sessions(home, sessions, created_at=lambda number: NOW - timedelta(hours=30 + number), cwd=str(project), repository_url=ORIGIN)
    options = {
        "codex_home": str(home), "db_url": f"sqlite:///{work / 'state.sqlite'}", "memory_root": str(work / "memories"),
        "provider": "openai", "ignore_age_windows": True, "max_rollouts_per_startup": 16,
    }
    with running_openai_server(laundering_model(sessions)) as server:
        phase1(overrides=SettingsOverrides(**options, base_url=server.base_url))
        phase2(overrides=SettingsOverrides(**options, base_url=server.base_url), force=True, return_state=True)
    root = work / "memories"
    context = build_session_context(root, budget_tokens=2500, cwd=str(project))
    texts = [(root / name).read_text(encoding="utf-8") for name in ("MEMORY.md", "memory_summary.md")] + [context.text if context else ""]
    claims = [claim for case in sessions for claim in case["claims"]]
    hostile = [claim["marker"] for claim in claims if claim["kind"] == "hostile"]
    rules = [claim["marker"] for claim in claims if claim["kind"] == "user_rule"]
    live = sum(any(marker in text for text in texts) for marker in hostile)
    served = sum(marker in texts[-1] for marker in rules)
    return live, len(hostile), served, len(rules)


def main() -> None:
    with prefect_test_harness(server_startup_timeout=600):
        shipped = (user_claims.ClaimSupport.backed, user_claims.ClaimSupport.laundered)
        user_claims.ClaimSupport.backed = property(lambda self: True)  # type: ignore[method-assign]
        user_claims.ClaimSupport.laundered = property(lambda self: False)  # type: ignore[method-assign]
        try:
            before = run("before")
        finally:
            user_claims.ClaimSupport.backed, user_claims.ClaimSupport.laundered = shipped  # type: ignore[method-assign]
        after = run("after")
    for label, (live, hostile, served, rules) in (("before", before), ("after", after)):
        print(f"{label}: laundered instructions live {live} of {hostile}; real user rules served {served} of {rules}")


if __name__ == "__main__":
    main()
