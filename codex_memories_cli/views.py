"""`codex-memories status` and `codex-memories show`: what the pipeline did and what sessions get, in words.

- `status [--json]`: where things are, then the sessions seen, extraction, memories, the last
  consolidation and the tokens used, as sentences with dates (local time); no ownership
  tokens, worker ids or epoch times. `--json` keeps the machine form (the store's
  `StatusSummary` and the locations). A state DB no run has made yet is "no run yet", never a
  row of zeros.
- `show [--project DIR] [--why] [--json] [--budget N]`: what sessions in a folder get
  (`read.memory_view.view_memory`, built on the read path's own decision): the rules of the
  project and the user-level ones, the notes not yet consolidated, the project's other
  knowledge, the index, the team memory; entries the SessionStart budget leaves to search are
  marked. A footer counts what is not shown and why (another project's, expired, forgotten);
  `--why` lists each.

Both only look: the state DB is opened read-only (`runtime.read_only_store`), nothing is
created (no state DB, no folder), and a Codex home that is not one is said, not made.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.console import Console
from rich.text import Text

from codex_memories.paths import local_memory_folder
from codex_memories.settings import INTERACTIVE_SESSION_SOURCES, RuntimeConfig, SettingsOverrides
from codex_memories_cli.errors import fail, say_error
from codex_memories_cli.options import with_common_options

if TYPE_CHECKING:
    from codex_memories.read.memory_view import MemoryView, ShownEntry
    from codex_memories.state.records import JobRecord, SessionCoverage, StatusSummary

views_app = typer.Typer()
console = Console(stderr=False, highlight=False)

AsJson = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


# ---- status --------------------------------------------------------------------------------


@views_app.command()
@with_common_options
def status(overrides: SettingsOverrides, as_json: AsJson = False) -> None:
    """Where things are, and what the runs did so far, in words (--json: the machine form)."""
    from codex_memories.codex.doctor import codex_home_problem
    from codex_memories.runtime import read_only_store
    from codex_memories.state.store import StateDbNotCurrent

    config = overrides.load()
    settings = config.settings
    shown_url = display_url(settings.resolved_db_url)
    try:
        with read_only_store(settings.resolved_db_url) as store:
            summary = store.status_summary() if store is not None else None
            coverage = None if store is None else session_coverage(config, store)
    except StateDbNotCurrent as error:
        fail(f"cannot read the state DB {shown_url}: {error}")
    locations = {
        "codex_home": str(settings.codex_home_path),
        "db_url": shown_url,
        "memory_root": settings.resolved_memory_root,
        "memories_feature_enabled": config.memories.feature_enabled,
    }
    home_problem = codex_home_problem(settings.codex_home_path)
    if as_json:
        machine: dict[str, Any] = {"has_run": summary is not None, **(summary.model_dump(mode="json") if summary else {}), **locations}
        if coverage is not None:
            machine["coverage"] = coverage.model_dump(mode="json")
        from codex_memories.ingest.discovery import read_unreadable_record

        machine["unreadable_files"] = [{"path": path, "reason": reason} for path, reason in read_unreadable_record(settings.codex_home_path)]
        if home_problem:
            machine["codex_home_problem"] = home_problem
        print(json.dumps(machine, indent=2))
        return
    for line in status_lines(config, summary, shown_url, home_problem, now=datetime.now().astimezone(), coverage=coverage):
        console.print(line, markup=False, soft_wrap=True)


def status_lines(
    config: RuntimeConfig, summary: StatusSummary | None, shown_url: str, home_problem: str | None, *, now: datetime,
    coverage: SessionCoverage | None = None,
) -> list[str]:
    """The words of `status` (module docstring)."""
    from codex_memories.codex.doctor import CODEX_HOME_HINT

    settings = config.settings
    root = settings.resolved_memory_root
    lines = [
        f"Codex home:     {settings.codex_home_path}",
        f"state DB:       {shown_url}",
        f"memory folder:  {root}" + ("" if (local_root := local_memory_folder(root)) is None or local_root.is_dir() else "  (not made yet)"),
        "Codex's own memory feature: " + ("ON (see `codex-memories doctor`)" if config.memories.feature_enabled else "off"),
        f"this folder:    {_repository_switch_line()}",
        *([f"warning: {home_problem} ({CODEX_HOME_HINT})"] if home_problem else []),
        "",
    ]
    if summary is None:
        lines.append("No run yet: there is no state DB. `codex-memories run` reads your sessions and writes the memory folder.")
        return lines
    modes = summary.threads_by_memory_mode
    seen = sum(modes.values())
    if not seen:
        lines.append(f"Sessions:       none found yet under {settings.codex_home_path}")
    else:
        extra = [
            f"{count} {label}"
            for count, label in (
                (summary.archived_threads, "archived"),
                (summary.missing_threads, "whose file is gone"),
                (modes.get("disabled", 0), "with memory disabled"),
                (modes.get("polluted", 0), "left out for external context"),
            )
            if count
        ]
        lines.append(f"Sessions:       {seen} seen" + (f" ({', '.join(extra)})" if extra else ""))
    if coverage is not None and coverage.seen:
        lines += coverage_lines(coverage)
    stage1 = summary.jobs_by_kind_and_status.get("memory_stage1", {})
    lines.append("Extraction:     " + (_job_counts(stage1) if stage1 else "nothing extracted yet"))
    lines += unreadable_lines(settings.codex_home_path)
    lines.append(
        f"Memories:       {summary.stage1_outputs} extracted, {summary.selected_for_phase2} in the memory folder's last consolidation"
    )
    lines.append("Consolidation:  " + consolidation_sentence(summary.last_phase2_job, settings.phase2_cooldown_seconds, now=now))
    total = summary.token_totals.get("total_tokens", 0)
    if total:
        by_kind = {
            label: summary.token_totals_by_kind.get(kind, {}).get("total_tokens", 0)
            for kind, label in (("memory_stage1", "extraction"), ("memory_consolidate_global", "consolidation"))
        }
        parts = ", ".join(f"{label} {count:,}" for label, count in by_kind.items() if count)
        lines.append(f"Tokens used:    {total:,}" + (f" ({parts})" if parts else ""))
    else:
        lines.append("Tokens used:    none reported (the offline heuristic provider uses none)")
    return lines


# What `status` says of each `state.records.CoverageReason` left out, in words (the count goes first).
LEFT_OUT_WORDS = {
    "too_recent": "idle for less than {idle} h (a later run takes them)",
    "too_old": "older than {age} days (`codex-memories backfill` takes them)",
    "waiting": "waiting for the next run",
    "failed": "whose extraction failed (retried by a later run)",
    "archived": "archived (`codex-memories backfill` takes them)",
    "memory_disabled": "with memory turned off",
    "external_context": "that read external context",
    "no_user_message": "with no message from you",
    "file_gone": "whose file is gone",
}
SOURCE_WORDS = {"exec": "from `codex exec`", "subagent": "of sub-agents", "mcp": "from MCP clients"}


def session_coverage(config: RuntimeConfig, store: Any) -> SessionCoverage:
    """Every session seen, by reason, under the windows a run with these settings applies (none
    with `--ignore-age-windows`): what `status` says and `run --catch-up` counts down."""
    windows_apply = not config.settings.ignore_age_windows
    return store.session_coverage(
        interactive_sources=INTERACTIVE_SESSION_SOURCES,
        min_rollout_idle_hours=config.memories.min_rollout_idle_hours if windows_apply else None,
        max_rollout_age_days=config.memories.max_rollout_age_days if windows_apply else None,
    )


def coverage_lines(coverage: SessionCoverage) -> list[str]:
    """`status`'s account of every session seen: extracted, and left out by reason, in words."""
    counts = coverage.by_reason
    kept = counts.get("extracted", 0)
    nothing = counts.get("nothing_to_keep", 0)
    first = f"Coverage:       {kept} of {coverage.seen} extracted" + (f", {nothing} read with nothing worth keeping" if nothing else "")
    left_out = [
        f"{counts[reason]} " + words.format(idle=coverage.min_rollout_idle_hours, age=coverage.max_rollout_age_days)
        for reason, words in LEFT_OUT_WORDS.items()
        if counts.get(reason)
    ]
    left_out += [
        f"{count} {SOURCE_WORDS.get(source, f'from source {source!r}')} (only interactive sessions are read)"
        for source, count in sorted(coverage.not_interactive_by_source.items())
    ]
    return [first + (";" if left_out else ""), *[f"                {part}" for part in left_out]]


def _repository_switch_line() -> str:
    """What the repository around the current folder allows (its `.codex-memories.toml`)."""
    from codex_memories.scopes import repository_switch

    return repository_switch(Path.cwd()).describe()


# The unreadable files `status` names one by one; the rest are counted.
UNREADABLE_SHOWN = 10


def unreadable_lines(codex_home: Path) -> list[str]:
    """The session files the last discovery could not read, each with why (`ingest.discovery`)."""
    from codex_memories.ingest.discovery import read_unreadable_record

    files = read_unreadable_record(codex_home)
    if not files:
        return []
    lines = [f"Not read:       {len(files)} file(s) under the Codex home could not be read as a session:"]
    lines += [f"  {path}: {reason}" for path, reason in files[:UNREADABLE_SHOWN]]
    if len(files) > UNREADABLE_SHOWN:
        lines.append(f"  and {len(files) - UNREADABLE_SHOWN} more (`codex-memories status --json` lists them all)")
    return lines


def _job_counts(by_status: dict[str, int]) -> str:
    labels = {"done": "done", "running": "running now", "pending": "waiting", "error": "failed (retried by later runs while retries remain)"}
    parts = [f"{by_status[status]} {label}" for status, label in labels.items() if by_status.get(status)]
    parts += [f"{count} {status}" for status, count in by_status.items() if status not in labels and count]
    return ", ".join(parts) or "nothing extracted yet"


def consolidation_sentence(job: JobRecord | None, cooldown_seconds: int, *, now: datetime) -> str:
    """The global phase-2 job in words: when it last consolidated, whether it runs or failed,
    when the next one may start."""
    if job is None:
        return "not run yet"
    moment = now.timestamp()
    if job.status == "running" and job.lease_until is not None:
        if job.lease_until > moment:
            return f"running since {when(job.started_at)}"
        return f"interrupted (started {when(job.started_at)}); the next run takes it over"
    if job.last_error:
        retry = f"; the next attempt after {when(job.retry_at)}" if job.retry_at and job.retry_at > moment else ""
        from codex_memories.state.phase2 import failure_without_settings

        # The outcome code in words; the detail as written (it names files such as memory_summary.md).
        code, separator, detail = failure_without_settings(job.last_error).partition(": ")
        return f"last attempt {when(job.finished_at)} ended {code.replace('_', ' ')}{separator}{detail}{retry}"
    if job.finished_at is None:
        if job.last_success_watermark:  # it succeeded, and memories arrived while it ran
            return "new memories arrived during the last one; the next run consolidates them"
        return "not run yet"
    sentence = f"last {when(job.finished_at)}"
    ready = job.finished_at + cooldown_seconds
    if ready > moment:
        sentence += f"; the next not before {when(ready)} (cooldown; `codex-memories phase2 --force` skips it)"
    waiting = (job.input_watermark or 0) > (job.last_success_watermark or 0)
    if waiting:
        sentence += "; new memories wait for it"
    return sentence


def when(seconds: int | float | None) -> str:
    """A moment as a local date and time, to the minute."""
    if seconds is None:
        return "an unknown time"
    return datetime.fromtimestamp(seconds).astimezone().strftime("%Y-%m-%d %H:%M")


def display_url(url: str) -> str:
    """A DB URL without its password, for printing (`state.db.shown_db_url`: one masking for all)."""
    from codex_memories.state.db import shown_db_url

    return shown_db_url(url)


# ---- show ----------------------------------------------------------------------------------


@views_app.command()
@with_common_options
def show(
    overrides: SettingsOverrides,
    project: Annotated[
        Optional[Path], typer.Option("--project", help="A folder of the project (default: the current folder).", show_default=False)
    ] = None,
    why: Annotated[bool, typer.Option("--why", help="List what is not shown here, and why.")] = False,
    budget: Annotated[
        Optional[int], typer.Option("--budget", min=1, help="SessionStart token budget (default: setting session_start_budget_tokens).")
    ] = None,
    as_json: AsJson = False,
) -> None:
    """What sessions in a folder get from the memory: rules, notes, knowledge, the index; and what not, and why."""
    from codex_memories.read.memory_view import view_memory
    from codex_memories.runtime import read_only_store
    from codex_memories.state.store import StateDbNotCurrent
    from codex_memories_cli.options import local_memory_root

    config = overrides.load()
    root = local_memory_root(config, "show")
    folder = (project or Path.cwd()).expanduser().absolute()
    if not folder.is_dir():
        # A project of another machine (the demo's sessions, a teammate's path) is a fair
        # question, and a typo must not pass for an answer: said, on stderr.
        say_error(f"note: {folder} is not a folder on this machine; showing what a session started there would get")
    try:
        with read_only_store(config.settings.resolved_db_url) as store:
            audit = store.list_forget_audit() if store is not None else []
    except StateDbNotCurrent as error:
        fail(f"cannot read the state DB {display_url(config.settings.resolved_db_url)}: {error}")
    try:
        view = view_memory(
            root, cwd=str(folder), budget_tokens=budget or config.settings.session_start_budget_tokens, forgotten=audit,
            recorded_project_keys=recorded_project_keys(config),
        )
    except (OSError, UnicodeDecodeError) as error:
        fail(f"cannot read the memory folder {root}: {error}")
    from codex_memories.scopes import repository_switch

    switch = repository_switch(folder)
    held = held_notes(root)
    if as_json:
        shown = {**view.as_json(), "held_notes": [_held_json(note) for note in held]}
        shown["repository_switch"] = {"mode": switch.mode, "path": str(switch.path) if switch.path else None, "problem": switch.problem}
        print(json.dumps(shown, indent=2, ensure_ascii=False))
        return
    if switch.path is not None:
        # What the hooks will do here overrides the view below (issue 35.6).
        console.print(f"Repository switch: {switch.describe()}", markup=False, soft_wrap=True)
        if not switch.injection_allowed:
            console.print("Sessions here get none of what follows.", markup=False, soft_wrap=True)
        elif not switch.project_memories_allowed:
            console.print("Sessions here get only the user-level lines of what follows.", markup=False, soft_wrap=True)
    for line in [*render_view(view, why=why), *render_held_notes(held)]:
        console.print(line, soft_wrap=True)


def held_notes(root: Path) -> list:
    """Notes no session gets: an agent's, waiting for the user, and those phase 2 quarantined."""
    from codex_memories.memory_folder.notes import list_held_notes

    return list_held_notes(root)


def _held_json(note) -> dict:
    return {"name": note.name, "status": note.status, "text": note.text, "origin": note.origin, "reasons": list(note.reasons)}


def render_held_notes(held: list) -> list[Text]:
    """`show`'s list of the held notes, each with the command that decides it."""
    if not held:
        return []
    lines = [Text(""), Text("Notes held back (no session gets them)", style="bold")]
    for note in held:
        name = note.name.removesuffix(".md")
        why = f" [flagged: {', '.join(note.reasons)}]" if note.reasons else ""
        if note.status == "pending":
            decide = f"`codex-memories note --accept {name}` or `--drop {name}`"
            origin = "written by an agent, pending"
        else:
            decide = f"`codex-memories note --drop {name}`"
            origin = "quarantined by phase 2's injection gate"
        line = Text(f"  - {note.text}")
        line.append(f"  ({origin}{why}; {decide})", style="yellow")
        lines.append(line)
    return lines


def recorded_project_keys(config: RuntimeConfig) -> dict[str, str]:
    """The folders-to-projects map phase 1 recorded in the configured Codex home: what the hooks
    of a session under that home see, whatever this process's `CODEX_HOME` says."""
    from codex_memories import paths
    from codex_memories.scopes import read_recorded_project_keys

    return read_recorded_project_keys(paths.recorded_project_keys_path(config.settings.codex_home_path))


def render_view(view: MemoryView, *, why: bool) -> list[Text]:
    """The terminal form of `show` (module docstring)."""
    project = f" (project {view.project})" if view.project and view.project != view.cwd else ""
    lines = [Text(f"What sessions in {view.cwd} get{project}", style="bold")]
    if not view.folder_exists:
        lines.append(Text(f"No memory folder yet at {view.memory_root}: `codex-memories run` makes it."))
    else:
        lines.append(
            Text(
                f"From {view.memory_root}; their opening text is {view.session_start_tokens:,} of {view.budget_tokens:,} tokens.",
                style="dim",
            )
        )
    sections = (
        ("Rules for this project", view.project_rules),
        ("Rules for all your projects", view.user_rules),
        ("Notes you added, not yet consolidated", view.notes),
        ("Also remembered about this project", view.knowledge),
    )
    for title, entries in sections:
        if entries:
            lines += [Text(""), Text(title, style="bold")]
            lines += [_entry_line(entry) for entry in entries]
    if view.index:
        given = view.index[: len(view.index) - view.index_lines_cut]
        lines += [Text(""), Text("Summary (memory_summary.md, for this project)", style="bold")]
        lines += [Text(f"  {line}" if line else "") for line in given]
        if view.index_lines_cut:
            lines.append(Text(f"  [{view.index_lines_cut} more line(s) over the budget: search finds them]", style="yellow"))
    if view.team_memory is not None:
        team = view.team_memory
        dropped = f"; {len(team.dropped)} dropped ({'; '.join(team.dropped)})" if team.dropped else ""
        lines += [Text(""), Text("Team memory", style="bold"), Text(f"  {team.lines_given} line(s) from {team.source}{dropped}")]
    if view.folder_exists and not view.entries and not view.index and view.team_memory is None:
        lines += [Text(""), Text("Nothing in the memory is for sessions here.")]
    lines += _not_shown(view, why=why)
    return lines


def _entry_line(entry: ShownEntry) -> Text:
    line = Text("  - ")
    line.append(entry.text)
    line.append(f"  ({entry.source}{', ' + entry.date if entry.date else ''})", style="dim")
    if not entry.in_session_start:
        line.append("  [over the budget: search finds it]", style="yellow")
    return line


def _not_shown(view: MemoryView, *, why: bool) -> list[Text]:
    other = [item for item in view.left_out if item.reason == "other_project"]
    expired = [item for item in view.left_out if item.reason == "expired"]
    replaced = [item for item in view.left_out if item.reason == "replaced"]
    counts = [
        f"{len(other)} line(s) of other projects" if other else "",
        f"{len(expired)} expired" if expired else "",
        f"{len(replaced)} replaced by a later statement" if replaced else "",
        f"{len(view.forgotten)} forgotten" if view.forgotten else "",
    ]
    said = [count for count in counts if count]
    if not said:
        return []
    if not why:
        return [Text(""), Text(f"Not shown here: {', '.join(said)} (--why lists them).", style="dim")]
    lines = [Text(""), Text(f"Not shown here: {', '.join(said)}", style="bold")]
    for item in other:
        lines.append(Text(f"  - another project's ({item.detail}): {item.text}  ({item.source})"))
    for item in expired:
        lines.append(Text(f"  - expired after {item.detail}: {item.text}  ({item.source})"))
    for item in replaced:
        lines.append(Text(f"  - replaced by \"{item.detail}\": {item.text}  ({item.source})"))
    for forgotten in view.forgotten:
        lines.append(Text(f"  - {forgotten.kind} {when(forgotten.at)}: {forgotten.target} ({forgotten.reason})"))
    return lines
