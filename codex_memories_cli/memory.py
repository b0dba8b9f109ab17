"""`codex-memories` commands of the read path and of forgetting (merged into the main CLI).

Read path: `inject` prints the developer instructions a session would get, `cite` counts the
memories a reply cites, `note` writes an ad-hoc note, `mcp` serves the memory folder over MCP.
Forgetting (spec section 6): `forget --thread` (route 4), `forget --project` / `forget --match`
(selective, issue 15; `--dry-run` lists what would go, each line with its text), `disable`
(route 5), `reset` (route 7); each writes a `forget_audit` row.

Steering says when it takes effect (`steering`): a note reaches the next session at once through
the SessionStart hook and `MEMORY.md` at the next phase 2; `forget --match` changes the folder,
its git baseline and the state DB at once; `forget --thread/--project` change the state DB at
once and the consolidated files at the next phase 2. `note --now` and `forget --now` run that
phase 2 at once (as `codex-memories phase2 --force`).

These commands call the library directly (no Prefect run, so they start fast; `--now` starts
one). A user error is one line on stderr and exit 1, never a traceback or an exception name.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from codex_memories.settings import RuntimeConfig, SettingsOverrides
from codex_memories_cli.errors import EXIT_BAD_SETTING, EXIT_USER_ERROR
from codex_memories_cli.errors import fail as _fail
from codex_memories_cli.options import local_memory_root, with_common_options

if TYPE_CHECKING:
    from codex_memories.forget.audit import ForgetAction
    from codex_memories.settings import SettingsOverrides

memory_app = typer.Typer()

ThreadId = Annotated[str, typer.Option("--thread", help="The thread (session) id.", show_default=False)]
Now = Annotated[
    bool, typer.Option("--now", help="Then run phase 2 at once (as `codex-memories phase2 --force`), so MEMORY.md follows now.")
]


def _say(message: str) -> None:
    print(message)


# ---- read path -----------------------------------------------------------------------------


@memory_app.command()
@with_common_options
def note(
    overrides: SettingsOverrides,
    text: Annotated[Optional[str], typer.Argument(help="The note: what to remember, forget or update.", show_default=False)] = None,
    slug: Annotated[Optional[str], typer.Option("--slug", help="File-name slug (a-z, 0-9, -); derived from the text if omitted.")] = None,
    user: Annotated[bool, typer.Option("--user", help="For every repository (default: the current folder's project).")] = False,
    cwd: Annotated[Optional[str], typer.Option("--cwd", help="The project folder the note is for (default: the current folder).")] = None,
    accept: Annotated[
        Optional[str], typer.Option("--accept", help="Make a pending note (one an agent wrote through MCP) live: its name from `show`.")
    ] = None,
    drop: Annotated[Optional[str], typer.Option("--drop", help="Delete a pending or quarantined note: its name from `show`.")] = None,
    now: Now = False,
) -> None:
    """Write an ad-hoc note for this project (or, with --user, every project), or accept or drop a
    held one: the next session sees it at once, the next phase 2 folds it into MEMORY.md."""
    from codex_memories.memory_folder import notes
    from codex_memories_cli.steering import hooks_installed, next_phase2

    if sum(option is not None for option in (text, accept, drop)) != 1:
        _fail("give the note's text, or --accept NAME, or --drop NAME (one of them)")
    config = overrides.load()
    root = local_memory_root(config, "note")
    scope, project_key = _note_scope(config, user=user, cwd=cwd)
    try:
        if drop is not None:
            held = notes.find_held_note(root, drop)
            _change_note_with_audit(config, lambda: notes.remove_held_note(root, held), lambda: notes.restore_held_note(root, held),
                                    target=held.record_path, reason=f"{held.status} note dropped by the user", note=held.text)
            _say(f"dropped the {held.status} note {held.name}: it never reaches a session")
            return
        if accept is not None:
            held = notes.find_held_note(root, accept)
            written = _change_note_with_audit(
                config, lambda: notes.accept_held_note(root, held, project_key=project_key),
                lambda: (Path(root, paths_notes(held.name)).unlink(missing_ok=True), notes.restore_held_note(root, held)),
                target=paths_notes(held.name), reason=f"pending note accepted by the user, {scope}", note=held.text,
            )
        else:
            assert text is not None  # one of the three, checked above
            holder: dict[str, Path] = {}
            written = _change_note_with_audit(
                config, lambda: holder.setdefault("path", notes.add_ad_hoc_note(root, text, slug=slug, project_key=project_key)),
                lambda: holder["path"].unlink(missing_ok=True) if "path" in holder else None,
                target=None, reason=f"note added by the user, {scope}", note=text,
            )
    except notes.NoteError as error:
        _fail(str(error))
    _say(f"note written for {scope}: {written}")
    if hooks_installed(config):
        _say("The next Codex session sees it at once: the SessionStart hook shows the notes added since the last consolidation.")
    else:
        _say("Codex sessions see it once the hooks are installed (`codex-memories install`); until then only through MEMORY.md.")
    if now:
        _consolidate_now(overrides, config)
        return
    _say(f"Phase 2 folds it into MEMORY.md {next_phase2(config)}; `codex-memories phase2 --force` (or `note --now`) does it now.")


def paths_notes(name: str) -> str:
    from codex_memories import paths

    return f"{paths.ad_hoc_notes_dir()}/{name}"


def _note_scope(config: RuntimeConfig, *, user: bool, cwd: str | None) -> tuple[str, str | None]:
    """(how the reply names the note's scope, the project key or None for every project): the
    current folder's project as the hooks key it (`scopes.project_key_for_directory`), unless
    `--user`."""
    from codex_memories.scopes import project_key_for_directory
    from codex_memories_cli.views import recorded_project_keys

    if user:
        return "every repository (--user)", None
    folder = cwd if cwd is not None else str(Path.cwd())
    key = project_key_for_directory(folder, recorded=recorded_project_keys(config))
    if key is None:
        return f"every repository ({folder} is in no project)", None
    return f"the project {key} (`--user`: every repository)", key


def _change_note_with_audit(config: RuntimeConfig, change: Callable[[], object], undo: Callable[[], object], *, target: str | None, reason: str, note: str):
    """Make a note's change in the folder, then write its audit row (route `ad_hoc_note`); when the
    row cannot be written, undo the change: the folder and the state DB change together or not at all."""
    from codex_memories.evidence.screen import excerpt
    from codex_memories.forget.audit import ForgetAction, record_actions
    from codex_memories.state.records import ForgetRoute
    from codex_memories_cli.steering import _existing_store

    store = _existing_store(config.settings.resolved_db_url)
    result = change()
    if store is None:
        # No state DB yet (nothing ever ran): none is created for one row; phase 2's audit of
        # the notes it folds in (route 7) records the note at the first run.
        return result
    try:
        where = target or (paths_notes(result.name) if isinstance(result, Path) else "")
        record_actions(store, [ForgetAction(route=ForgetRoute.ad_hoc_note, target=where, reason=reason, removed={"note": excerpt(note)})])
    except Exception as error:
        undo()
        _fail(f"the note's audit row could not be written to the state DB ({type(error).__name__}: {error}); the note was left as it was")
    return result


@memory_app.command()
@with_common_options
def inject(
    overrides: SettingsOverrides,
    budget: Annotated[
        Optional[int], typer.Option("--budget", min=1, help="Token budget of the summary (default: setting session_start_budget_tokens).")
    ] = None,
    cwd: Annotated[Optional[str], typer.Option("--cwd", help="The session's project folder (default: the current folder).")] = None,
) -> None:
    """Print what a new session gets: the summary instructions and the repository's team memory
    (exactly the SessionStart hook's text: the repository's switch applies, secrets redacted)."""
    from codex_memories.read.hooks import read_session_text
    from codex_memories_cli.views import recorded_project_keys

    config = overrides.load()
    root = local_memory_root(config, "inject")
    try:
        session = read_session_text(
            root,
            budget_tokens=budget or config.settings.session_start_budget_tokens,
            cwd=cwd if cwd is not None else str(Path.cwd()),
            recorded_project_keys=recorded_project_keys(config),
        )
    except (OSError, UnicodeDecodeError) as error:
        _fail(f"cannot read the memory summary under {root} or the team memory: {error}")
    if not session.switch.injection_allowed:
        sys.stderr.write(f"Nothing is injected here: {session.switch.describe()}.\n")  # stdout stays the exact text
    context = session.context
    if context:
        sys.stdout.write(context.text if context.text.endswith("\n") else context.text + "\n")


@memory_app.command()
@with_common_options
def recall(
    overrides: SettingsOverrides,
    query: Annotated[str, typer.Option("--query", help="What to look for, in your own words.", show_default=False)],
    cwd: Annotated[Optional[str], typer.Option("--cwd", help="The project folder asking (default: the current folder).")] = None,
    limit: Annotated[int, typer.Option("--limit", help="Results at most.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help='Print {"results": [...]}.')] = False,
    why: Annotated[bool, typer.Option("--why", help="Say on stderr why lines are or are not shown.")] = False,
    all_projects: Annotated[bool, typer.Option("--all-projects", help="Also show other projects' lines, after this one's.")] = False,
) -> None:
    """The memory lines that answer a question (lexical and semantic search fused); nothing when none does."""
    from codex_memories_cli.recall_command import RecallRequest, run_recall

    config = overrides.load()
    request = RecallRequest(
        root=local_memory_root(config, "recall"), query=query, cwd=cwd if cwd is not None else str(Path.cwd()),
        limit=limit, as_json=as_json, why=why, all_projects=all_projects,
    )
    code = run_recall(request)
    if code:
        raise typer.Exit(code)


@memory_app.command()
@with_common_options
def cite(
    overrides: SettingsOverrides,
    source: Annotated[str, typer.Argument(help="A file holding the reply (or its citation block), or - for stdin.", show_default=False)],
) -> None:
    """Count one use of every memory a reply's <oai-mem-citation> block cites (phase-2 ranking)."""
    from codex_memories.read.citations import parse_citation_block, record_citation_usage
    from codex_memories.runtime import open_store

    config = overrides.load()
    text = _read_source(source)
    citation = parse_citation_block(text)
    if not citation.found:
        _fail(f"no memory citation in {_shown(source)}")
    if citation.problems and not citation.rollout_ids and not citation.entries:
        _fail(f"malformed citation in {_shown(source)}, nothing recorded: {'; '.join(citation.problems)}")
    for problem in citation.problems:
        print(f"codex-memories: warning: {problem} (skipped)", file=sys.stderr)
    if not citation.rollout_ids:
        _say("the citation names no rollout ids: nothing recorded")
        return
    usage = record_citation_usage(open_store(config.settings.resolved_db_url), text)
    unknown = len(usage.citation.rollout_ids) - usage.rows_updated
    _say(
        f"recorded {usage.rows_updated} use(s) for {len(usage.citation.rollout_ids)} cited rollout id(s)"
        + (f"; {unknown} id(s) have no stage-1 memory" if unknown else "")
    )


def _read_source(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        _fail(f"cannot read {source}: {getattr(error, 'strerror', None) or error}")


def _shown(source: str) -> str:
    return "stdin" if source == "-" else source


@memory_app.command()
@with_common_options
def mcp(
    overrides: SettingsOverrides,
    no_notes: Annotated[bool, typer.Option("--no-notes", help="Do not offer the add_ad_hoc_note tool.")] = False,
) -> None:
    """Serve the memory folder over MCP on stdin/stdout (list, read, search, add_ad_hoc_note)."""
    from codex_memories.read.mcp_server import run_stdio

    config = overrides.load()
    run_stdio(local_memory_root(config, "mcp"), notes_enabled=not no_notes)


# ---- forgetting ----------------------------------------------------------------------------


def _folder_refusals() -> tuple[type[Exception], ...]:
    """What stops a forget or a reset before it changed anything: one line naming the folder, exit
    2 (evaluated only when an error is raised: the imports stay off the CLI's start)."""
    from codex_memories.forget.ledger import LedgerUnreadable
    from codex_memories.storage import MemoryRootNotWritable

    return (MemoryRootNotWritable, LedgerUnreadable)



@memory_app.command()
@with_common_options
def forget(
    overrides: SettingsOverrides,
    thread: Annotated[Optional[str], typer.Option("--thread", help="Forget one thread (session) by id.", show_default=False)] = None,
    project: Annotated[
        Optional[str], typer.Option("--project", help="Forget every memory of a project: a folder of it, or its project key.", show_default=False)
    ] = None,
    match: Annotated[
        Optional[str],
        typer.Option("--match", help="Forget every memory line and file name holding this text (case-insensitive).", show_default=False),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would change, each line with its text; change nothing.")] = False,
    now: Now = False,
) -> None:
    """Forget a thread (route 4), a project or every memory line holding a text; --dry-run lists what would change."""
    chosen = [name for name, value in (("--thread", thread), ("--project", project), ("--match", match)) if value is not None]
    if len(chosen) != 1:
        _fail("give exactly one of --thread, --project, --match" + (f" (got {', '.join(chosen)})" if chosen else ""))
    if dry_run and now:
        _fail("--now runs phase 2 after the forget; a --dry-run changes nothing, so give one of them")
    config = overrides.load()
    if match is not None:
        changed = _forget_match(match, dry_run, config)
    elif project is not None:
        changed = _forget_project(project, dry_run, config)
    else:
        assert thread is not None
        if dry_run:
            _fail("--dry-run is for --project and --match; `forget --thread` changes one thread (see `status`)")
        changed = _forget_thread(thread, config)
    if not changed or dry_run:
        return
    if now:
        _consolidate_now(overrides, config)
    elif match is None:
        _say_when_files_follow(config, now_option="forget --now")


def _forget_thread(thread: str, config: RuntimeConfig) -> bool:
    from functools import partial

    from codex_memories.forget.threads import forget_thread
    from codex_memories.runtime import memory_root

    # The thread goes into the memory folder's forget ledger first (a read-only folder stops here).
    route = partial(forget_thread, root=memory_root(config))
    actions = _forget_one_thread(route, thread, "forgotten with `codex-memories forget`", config)
    if not actions:
        _say(f"nothing to forget: thread {thread} has no memory and is already disabled")
        return False
    _say(f"forgot thread {thread}: {_removed(actions[0].removed)}")
    _say_team_files(actions)
    return True


def _forget_project(project: str, dry_run: bool, config: RuntimeConfig) -> bool:
    """`forget --project`: plan, print the plan, and unless --dry-run carry it out."""
    from codex_memories.forget import selective
    from codex_memories.forget.audit import record_actions
    from codex_memories.forget.manual import ResetRefused
    from codex_memories.runtime import memory_root as open_configured_root
    from codex_memories.runtime import open_store

    store = open_store(config.settings.resolved_db_url)
    try:
        target = selective.resolve_project(project)
        listed = selective.plan_project_forget(store, target).describe()
        actions = [] if dry_run else record_actions(
            store,
            selective.forget_project(
                store, target, root=open_configured_root(config), reason="project forgotten with `codex-memories forget --project`"
            ),
        )
    except (selective.SelectiveForgetError, ResetRefused) as error:
        _fail(str(error))
    except _folder_refusals() as error:
        _fail(str(error), EXIT_BAD_SETTING)
    return _say_plan(f"project {target.key}", listed, dry_run, actions)


def _forget_match(match: str, dry_run: bool, config: RuntimeConfig) -> bool:
    """`forget --match`: plan, print the plan (each line with its text), and unless --dry-run carry it out."""
    from codex_memories.forget import text_match
    from codex_memories.forget.audit import ForgetIncomplete, carry_out
    from codex_memories.forget.manual import ResetRefused
    from codex_memories.forget.selective import SelectiveForgetError
    from codex_memories.runtime import memory_root as open_configured_root
    from codex_memories.runtime import open_store

    store = open_store(config.settings.resolved_db_url)
    try:
        text = text_match.check_match_text(match)
        what = f"the memory lines and names holding {text_match.shown_match_text(text)!r}"
        root = open_configured_root(config)
        plan = text_match.plan_match_forget(store, root, text)
        if plan.empty and not plan.team_files:
            _say(f"nothing to forget: no memory line or name holding {text_match.shown_match_text(text)!r} can go")
            for line in plan.describe():  # the record lines that keep it, and why
                _say(f"  {line}")
            return False
        actions = [] if dry_run else carry_out(
            store, lambda: text_match.forget_match(store, root, text, reason="lines forgotten with `codex-memories forget --match`")
        )
    except (SelectiveForgetError, ResetRefused, ForgetIncomplete) as error:
        _fail(str(error))
    except _folder_refusals() as error:
        _fail(str(error), EXIT_BAD_SETTING)
    if not _say_plan(what, plan.describe(), dry_run, actions):
        return False
    if not dry_run:
        _say("Sessions stop seeing it now: the memory folder, its git baseline and the state DB no longer hold it.")
        _say("The audit (forget_audit) keeps line numbers and counts, not the text.")
    return True


def _say_plan(what: str, listed: list[str], dry_run: bool, actions: list[ForgetAction]) -> bool:
    """Print a selective forget's plan; False when there was nothing to forget."""
    if not listed:
        _say(f"nothing to forget: no memory of {what}")
        return False
    _say(f"{'would forget' if dry_run else 'forgot'} {what}:")
    for line in listed:
        _say(f"  {line}")
    if not dry_run:
        # The listing above was the plan; a team file that could not be rewritten says so here.
        _say_team_files(actions, errors_only=True)
    return True


def _say_when_files_follow(config: RuntimeConfig, *, now_option: str | None = None) -> None:
    """A forget that changed the state DB only: when the consolidated files follow."""
    from codex_memories_cli.steering import next_phase2

    alternative = f" (or `{now_option}`)" if now_option else ""
    _say(
        "The state DB changed now; MEMORY.md and memory_summary.md still hold what it gave them until phase 2 "
        f"consolidates without it, {next_phase2(config)}; `codex-memories phase2 --force`{alternative} does it now."
    )


def _consolidate_now(overrides: SettingsOverrides, config: RuntimeConfig) -> None:
    from codex_memories_cli.steering import consolidate_now

    _say("Running phase 2 now (as `codex-memories phase2 --force`):")
    if not consolidate_now(overrides, config):
        raise typer.Exit(EXIT_USER_ERROR)


@memory_app.command()
@with_common_options
def disable(
    overrides: SettingsOverrides,
    thread: ThreadId,
) -> None:
    """Disable memory for one thread (route 5): it leaves every phase-2 selection from now on."""
    from codex_memories.forget.threads import disable_thread

    config = overrides.load()
    actions = _forget_one_thread(disable_thread, thread, "disabled with `codex-memories disable`", config)
    if not actions:
        _say(f"thread {thread} is already disabled")
        return
    _say(f"disabled thread {thread}: {_removed(actions[0].removed)}")
    _say_team_files(actions)
    _say_when_files_follow(config)


def _forget_one_thread(route: Callable[..., list[ForgetAction]], thread: str, reason: str, config: RuntimeConfig) -> list[ForgetAction]:
    """Run one thread route and write its audit rows; an unknown thread is one line and exit 1."""
    from codex_memories.forget.audit import record_actions
    from codex_memories.forget.threads import UnknownThread
    from codex_memories.runtime import open_store

    store = open_store(config.settings.resolved_db_url)
    try:
        return record_actions(store, route(store, thread, reason=reason))
    except UnknownThread as error:
        _fail(str(error))
    except _folder_refusals() as error:
        _fail(str(error), EXIT_BAD_SETTING)


@memory_app.command()
@with_common_options
def reset(
    overrides: SettingsOverrides,
    yes: Annotated[bool, typer.Option("--yes", help="Really delete every memory (without it, only say what would go).")] = False,
) -> None:
    """Forget everything (route 7): stage-1 memories, memory jobs and the memory folder's contents."""
    from codex_memories.forget.audit import ForgetIncomplete, carry_out
    from codex_memories.forget.manual import ResetRefused, plan_reset, reset_memories
    from codex_memories.runtime import memory_root as open_configured_root
    from codex_memories.runtime import open_store

    config = overrides.load()
    # Built by the composition root: an s3:// root gets the configured endpoint and options.
    root = open_configured_root(config)
    store = open_store(config.settings.resolved_db_url)
    try:
        if not yes:
            _say("would delete " + plan_reset(store, root).describe())
            _fail("refusing to reset without --yes")
        [action] = carry_out(store, lambda: reset_memories(store, root, reason="reset with `codex-memories reset --yes`"))
    except (ResetRefused, ForgetIncomplete) as error:
        _fail(str(error))
    except _folder_refusals() as error:
        _fail(str(error), EXIT_BAD_SETTING)
    _say(f"reset: deleted {_removed(action.removed)}")
    _say_team_files([action])
    _say(
        "Codex sessions get no memory from now on. Threads are kept: the next phase 1 extracts them again "
        "(`codex-memories disable --thread ID` keeps one out)."
    )


def _removed(removed: dict[str, object]) -> str:
    from codex_memories.forget.team_files import TEAM_FILES_FACT

    return ", ".join(f"{key}={value}" for key, value in removed.items() if key != TEAM_FILES_FACT)


def _say_team_files(actions: list[ForgetAction], *, errors_only: bool = False) -> None:
    """One line per exported team memory file the forget rewrote (or could not)."""
    from codex_memories.forget.team_files import TEAM_FILES_FACT, describe_pruned

    for action in actions:
        for fact in action.removed.get(TEAM_FILES_FACT, []):
            if not errors_only or "error" in fact:
                _say(f"  {describe_pruned(fact)}")
