"""When a note or a forget reaches what Codex sessions get, said in a sentence, and `--now`.

A user who steers the memory (`note`, `forget`) must not be left guessing. What reaches a session
and when:
- a note: at once, if our SessionStart hook is installed (it shows the notes added since the last
  consolidation, `read.injection`); folded into `MEMORY.md` by the next phase 2, which waits for
  the cooldown after the last successful consolidation (`phase2_cooldown_seconds`);
- `forget --match`: at once (it edits the folder sessions read);
- `forget --thread` / `--project`: the state DB changes at once, the consolidated files at the
  next phase 2.

`hooks_installed(config)` reads the Codex home's hooks.json; `next_phase2(config)` reads the
state DB (never creating it: a missing SQLite file means phase 2 never ran) and says when the
next phase 2 may consolidate; `consolidate_now(overrides, config)` runs phase 2 at once, as
`codex-memories phase2 --force` does, and prints its report. Nothing here writes anything but
what `consolidate_now` runs.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from codex_memories.settings import RuntimeConfig, SettingsOverrides

if TYPE_CHECKING:
    from codex_memories.state.store import MemoryStore

# How `serve` schedules phase 2 (prefect.yaml, memories-phase2), as a user reads it.
SERVE_SCHEDULE = "every 6 hours with `codex-memories serve`"


def hooks_installed(config: RuntimeConfig) -> bool:
    """Whether the Codex home's hooks.json runs our SessionStart hook."""
    from codex_memories.codex.changes import CodexHomeError
    from codex_memories.codex.hooks_file import hooks_path, our_handlers, read_hooks_file

    try:
        document = read_hooks_file(hooks_path(config.settings.codex_home_path))
    except CodexHomeError:
        return False
    return any(event == "SessionStart" for event, *_ in our_handlers(document))


def next_phase2(config: RuntimeConfig, *, now: float | None = None) -> str:
    """When phase 2 next folds the folder's changes into MEMORY.md, as the end of a sentence."""
    from codex_memories.state.phase2 import phase2_cooldown_ends_at
    from codex_memories.state.records import GLOBAL_JOB_KEY, JobKind

    store = _existing_store(config.settings.resolved_db_url)
    if store is None:
        return f"at its first run (`codex-memories run`, or {SERVE_SCHEDULE})"
    job = store.get_job(JobKind.consolidate_global, GLOBAL_JOB_KEY)
    ends_at = phase2_cooldown_ends_at(job, config.settings.phase2_cooldown_seconds)
    if ends_at is not None and ends_at > (now if now is not None else time.time()):
        return f"at its first run after {local_time(ends_at)} (it waits {_duration(config.settings.phase2_cooldown_seconds)} after a consolidation)"
    return f"at its next run (`codex-memories run`, or {SERVE_SCHEDULE})"


def consolidate_now(overrides: SettingsOverrides, config: RuntimeConfig) -> bool:
    """Run phase 2 now, skipping the cooldown (never the lease); print its report. True when it
    did not fail."""
    from codex_memories.reports.phase2 import render_phase2_text
    from codex_memories_cli.options import prepare_prefect
    from codex_memories_cli.runs import run_flow  # the phase2 command's own runner: one way to run it

    prepare_prefect(False)
    report = run_flow("phase2", overrides, config, force=True, local=False, verbose=False)
    print(render_phase2_text(report))
    return not (report.outcome is not None and report.outcome.is_failure)


def _existing_store(db_url: str) -> MemoryStore | None:
    """The state DB, or None when it is a SQLite file that does not exist (opening it would create it)."""
    from sqlalchemy.engine import make_url

    from codex_memories.runtime import open_store

    url = make_url(db_url)
    database = url.database or ""
    if url.get_backend_name() == "sqlite" and database not in ("", ":memory:") and not Path(database).expanduser().exists():
        return None
    return open_store(db_url)


def local_time(epoch_seconds: int) -> str:
    """A moment as the user reads it: their local date and time, to the minute."""
    return datetime.fromtimestamp(epoch_seconds).astimezone().strftime("%Y-%m-%d %H:%M %Z")


def _duration(seconds: int) -> str:
    if seconds >= 3600:
        hours = seconds / 3600
        return f"{hours:g} hour" + ("" if hours == 1 else "s")
    minutes = max(1, round(seconds / 60))
    return f"{minutes} minute" + ("" if minutes == 1 else "s")
