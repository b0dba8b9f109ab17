"""Codex lifecycle hooks: how memories reach a Codex session without Codex's own memory feature.

Contract:
- `handle_hook(event_name, stdin_text, options) -> HookResult` answers one Codex hook call.
  `HookResult.stdout` is what the hook prints: Codex's hook output JSON, or `{}`.
  * `SessionStart`: `{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext":
    <read.injection.build_session_context(memory_root, cwd=<the session's cwd>,
    budget_tokens=options.summary_budget_tokens)>}}`: the project's and the user's rules, the
    repository's team memory, a short how-to and the index, within the budget as Codex counts it
    (under the limit at which Codex cuts a hook's context); `{}` when there is nothing. Other
    projects' lines are left out: the session's project is `project_key_for_directory(cwd)`.
    Installed without a matcher, so every `source` gets it: `startup`, `resume`, `clear`,
    `compact` (after Codex compacted the history, which drops the first text) and `fork`.
  * `SubagentStart`: the same text for the sub-agent's cwd (a sub-agent starts with a fresh
    history: without it the project's rules would not reach it).
  * Both go through `read_session_text` (also `codex-memories inject`): the repository's switch
    (`scopes.repository_switch`: `off` -> `skipped_repository_switch_off`, `{}`; `user-only` ->
    user-level memories only), then the text, then `redact.redact_secrets` over it.
  * `UserPromptSubmit`: the memory passages relevant to the prompt and cwd
    (`read.prompt_context.memory_context_for_prompt`: hybrid recall with a relevance gate, the
    current project and user-level memories first), labelled as memory with file and line
    numbers, redacted; `{}` when nothing is relevant. It never builds the recall index (a build
    can take minutes, Codex waits 10 s): without a current one it prints `{}` and logs
    `skipped_recall_index_missing` / `skipped_recall_index_stale` / `failed_recall_index_damaged`.
    The repository's switch applies as for SessionStart.
  * `Stop`: harvests the citations of that one transcript (`transcript_path`) into usage counts
    with `harvest.harvest_citations`, which keeps a byte offset per rollout, so the Stop hook and
    the phase-1 harvest never count one block twice. Prints `{}`. With
    `harvest_in_background` (the console script's default) the harvest runs in a detached child
    process (`... Stop --inline`) and the hook returns at once (`started_background_harvest`);
    it also arms the fresh-memory idle waiter of that rollout (`read.fresh`, mode `idle`).
  * `SessionEnd` (0.147 and 0.171 send it, unless Codex is killed): starts the fresh pass of that rollout
    in a detached process (`read.fresh`, mode `end`) and prints `{}` at once.
- Never blocks or breaks the session: bad JSON, an unknown event, a missing memory folder, a DB
  outage or any other error is a named `HookOutcome` (a `failed_*` code), `{}` on stdout and exit
  code 0. When the session cannot have its memory (invalid settings, a memory folder missing or
  unreadable), the SessionStart answer also carries a `systemMessage` with the fix, once per
  session (`hook_notices.session_answer`), which Codex's TUI shows. Every call appends one line to
  `$CODEX_HOME/codex-memories/hooks.log` (outcome, event, duration, detail); the log is rotated
  once it passes `LOG_ROTATE_BYTES`.
- Never writes the memory folder. The Stop hook writes the state DB only. The fresh pass that
  Stop and SessionEnd may start (`read.fresh`) is a detached `codex-memories run`, not the hook.
- Fast start: this module imports only the standard library and `settings_sources` (standard
  library too) at import time. SessionStart imports `read.injection` (prompts, tokenizer),
  UserPromptSubmit `read.prompt_context` (the recall index: sqlite3, numpy, the packaged static
  embeddings); only Stop imports the state store (SQLAlchemy).
- `main(argv)` is the `codex-memories-hook` console script: `codex-memories-hook <Event>
  [--codex-home DIR] [--memory-root DIR] [--config-file FILE] [--db-url URL] [--budget N]
  [--prompt-budget N]`, stdin in, JSON out, exit 0 always. Settings resolve exactly as the CLI's
  (`settings_sources.resolve_hook_settings`: these flags > `CODEX_MEMORIES_*` / `CODEX_HOME` >
  our TOML file > defaults), so a setting changed in the environment or the file reaches the next
  hook call; a bad one is `failed_settings`, `{}`, a log line and one stderr line. `install`
  points `hooks.json` at a launcher that runs this script (`codex_home.write_launcher`). It runs OpenBLAS on one thread
  (`OPENBLAS_NUM_THREADS=1`, set before numpy loads; a value the user set is kept): the
  encoder's products are small, and on a busy machine extra BLAS threads made the prompt hook
  several times slower (benchmarks/README.md, Recall).
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codex_memories.read.hook_log import (
    EMPTY_OUTPUT,
    HOOK_LOG_DIR,
    HookOptions,
    HookOutcome,
    HookResult,
    hook_log_path,
    redact_url,
    write_log_line,
)

# SubagentStart: Codex 0.147 and 0.171 both fire it when an agent spawns a sub-agent, with the
# sub-agent's cwd, and put its `additionalContext` into the sub-agent's own input (tests/codex).
HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SubagentStart", "SessionEnd")
SESSION_EVENTS = ("SessionStart", "SubagentStart")  # both get the session's rules


class HookInputError(ValueError):
    """The hook's stdin is not the JSON object Codex sends."""


# -- the entry point ---------------------------------------------------------------------------


def handle_hook(event_name: str, stdin_text: str, options: HookOptions) -> HookResult:
    """Answer one hook call; never raises (see the module contract). Logs one line."""
    started = time.monotonic()
    try:
        result = _dispatch(event_name, stdin_text, options)
    except HookInputError as error:
        result = HookResult(event_name, HookOutcome.failed_bad_input, detail=str(error))
    except Exception as error:  # noqa: BLE001 - a hook must never break the session: named, logged
        result = HookResult(event_name, HookOutcome.failed_unexpected, detail=f"{type(error).__name__}: {error}")
    write_log_line(options.log_path, result, time.monotonic() - started)
    return result


def _dispatch(event_name: str, stdin_text: str, options: HookOptions) -> HookResult:
    if event_name not in HOOK_EVENTS:
        return HookResult(event_name, HookOutcome.failed_unknown_event, detail=f"not one of {', '.join(HOOK_EVENTS)}")
    payload = parse_hook_input(stdin_text)
    if event_name in SESSION_EVENTS:
        return _session_start(event_name, payload, options)
    if event_name == "UserPromptSubmit":
        return _user_prompt_submit(payload, options)
    if event_name == "SessionEnd":
        return _session_end(payload, options)
    return _stop(payload, options)


def parse_hook_input(stdin_text: str) -> dict[str, Any]:
    try:
        payload = json.loads(stdin_text)
    except (ValueError, RecursionError) as error:
        raise HookInputError(f"stdin is not JSON ({error})") from None
    if not isinstance(payload, dict):
        raise HookInputError(f"stdin is JSON {type(payload).__name__}, not an object")
    return payload


def _string_field(payload: dict[str, Any], name: str) -> str | None:
    value = payload.get(name)
    return value if isinstance(value, str) and value else None


def additional_context_output(event_name: str, text: str) -> str:
    return json.dumps({"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}}, ensure_ascii=False)


# -- SessionStart and SubagentStart ----------------------------------------------------------------


@dataclass(frozen=True)
class SessionText:
    """What a session (or sub-agent) in `cwd` gets at its start: `context` is None when nothing
    (an empty folder, or the repository's switch says off); its text is already redacted."""

    context: Any  # read.injection.SessionContext | None (imported lazily: the hook's start time)
    switch: Any  # scopes.RepositorySwitch


def read_session_text(
    memory_root: Path, *, cwd: str | None, budget_tokens: int, recorded_project_keys: Any = None, redaction_cache: Path | None = None
) -> SessionText:
    """The one builder of session-start text, for the hooks and `codex-memories inject`: the
    repository's switch first (off: nothing; user-only: built as for a session outside any
    project, so only user-level memories), then `read.injection.build_session_context`, then
    redaction (issue 36.6: a folder written by hand, by Codex or by an older version never
    reaches the model unredacted). Raises what `build_session_context` raises. `redaction_cache`:
    a folder that keeps the redacted form of texts seen before (`redacted_once`)."""
    import dataclasses

    from codex_memories.read.injection import build_session_context
    from codex_memories.scopes import repository_switch

    switch = repository_switch(cwd)
    if not switch.injection_allowed:
        return SessionText(None, switch)
    # user-only: read as for a session outside any project (only user-level memories; sections
    # and lines marked for any project are left out). Unmarked summary sections are shown to
    # every session alike, this one included (injection's scope rule).
    scoped_cwd = cwd if switch.project_memories_allowed else None
    context = build_session_context(
        memory_root, budget_tokens=budget_tokens, cwd=scoped_cwd, recorded_project_keys=recorded_project_keys
    )
    if context is None:
        return SessionText(None, switch)
    return SessionText(dataclasses.replace(context, text=redacted_once(context.text, redaction_cache)), switch)


REDACTION_CACHE_DIR = "redacted"
REDACTION_CACHE_ENTRIES = 32


def redaction_cache_dir(codex_home: Path) -> Path:
    return Path(codex_home) / HOOK_LOG_DIR / REDACTION_CACHE_DIR


def redacted_once(text: str, cache: Path | None) -> str:
    """`redact.redact_secrets(text)`, kept in `cache` by the text's hash and the redactor's own
    files (name, size, mtime: an upgraded redactor never reuses an old answer). The detector's
    first call in a process costs seconds on a busy machine (its rules are compiled then), and a
    session start, its sub-agents and the next sessions in the folder ask for the same text: on a
    2-core machine at load 16 the SubagentStart hook, paying it again, ran past Codex's 10 s.
    A cache that cannot be read or written is only slower, never wrong."""
    import hashlib

    from codex_memories import redact

    if cache is None:
        return redact.redact_secrets(text)
    fingerprint = hashlib.sha256()
    for source in sorted(Path(redact.__file__).parent.glob("*.py")):
        stat = source.stat()
        fingerprint.update(f"{source.name}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    fingerprint.update(text.encode("utf-8", "surrogatepass"))
    entry = cache / fingerprint.hexdigest()
    try:
        return entry.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        pass  # not seen yet (or unreadable): redact it now
    redacted = redact.redact_secrets(text)
    try:
        from codex_memories.local_files import write_text_atomically

        cache.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_text_atomically(entry, redacted, mode=0o600)
        kept = sorted(cache.iterdir(), key=lambda path: path.stat().st_mtime_ns, reverse=True)
        for old in kept[REDACTION_CACHE_ENTRIES:]:
            old.unlink(missing_ok=True)
    except OSError as error:
        sys.stderr.write(f"codex-memories hook: cannot keep the redacted text in {cache}: {error}\n")
    return redacted


def _session_start(event: str, payload: dict[str, Any], options: HookOptions) -> HookResult:
    try:
        session = read_session_text(
            options.memory_root, cwd=_string_field(payload, "cwd"), budget_tokens=options.summary_budget_tokens,
            redaction_cache=redaction_cache_dir(options.codex_home),
        )
    except (OSError, UnicodeDecodeError) as error:
        return HookResult(event, HookOutcome.failed_memory_root_unreadable, detail=f"{options.memory_root}: {error}")
    context, switch = session.context, session.switch
    if not switch.injection_allowed:
        return HookResult(event, HookOutcome.skipped_repository_switch_off, detail=switch.describe())
    if context is None:
        return HookResult(event, HookOutcome.skipped_no_memory_summary, detail=str(options.memory_root))
    details: dict[str, Any] = {"chars": len(context.text), "codex_tokens": context.codex_tokens}
    omitted = {name: tier.omitted for name, tier in context.tiers.items() if tier.omitted}
    if omitted:
        details["omitted"] = omitted
    detail = f"{context.codex_tokens} tokens" + (f", over the budget: {omitted}" if omitted else "")
    source = _string_field(payload, "source")
    if source is not None:
        detail = f"source {source}; {detail}"
    if not switch.project_memories_allowed:
        detail += f"; {switch.describe()}"
    if context.team_memory is not None:
        team = context.team_memory
        details |= {"team_memory_lines": team.lines_injected, "team_memory_dropped": len(team.dropped)}
        detail += f"; team memory {team.source}: {team.lines_injected} line(s), {len(team.dropped)} dropped"
    return HookResult(
        event,
        HookOutcome.injected_memory_summary if context.summary_injected else HookOutcome.injected_team_memory,
        stdout=additional_context_output(event, context.text),
        detail=detail,
        details=details,
    )


# -- UserPromptSubmit ------------------------------------------------------------------------------

RECALL_INDEX_OUTCOMES = {
    "missing": HookOutcome.skipped_recall_index_missing,
    "stale": HookOutcome.skipped_recall_index_stale,
    "damaged": HookOutcome.failed_recall_index_damaged,
}
RECALL_INDEX_FIX = "a rebuild is under way or cannot start here; the next phase 2 (or `codex-memories recall --query ...`) builds it"


def _user_prompt_submit(payload: dict[str, Any], options: HookOptions) -> HookResult:
    event = "UserPromptSubmit"
    prompt = _string_field(payload, "prompt")
    if prompt is None:
        return HookResult(event, HookOutcome.skipped_nothing_relevant, detail="no prompt text")
    from codex_memories.scopes import repository_switch

    cwd = _string_field(payload, "cwd")
    switch = repository_switch(cwd)
    if not switch.injection_allowed:
        return HookResult(event, HookOutcome.skipped_repository_switch_off, detail=switch.describe())
    # Imported here: only this event pays for the recall index (numpy and the static embeddings).
    import sqlite3

    from codex_memories.read.embedding import EmbedderUnavailable
    from codex_memories.read.index import IndexNotReady
    from codex_memories.read.prompt_context import memory_context_for_prompt

    try:
        context = memory_context_for_prompt(
            options.memory_root, prompt, cwd, options.prompt_budget_tokens,
            user_level_only=not switch.project_memories_allowed,
        )
    except IndexNotReady as error:
        from codex_memories.read.index import start_background_build

        builder = start_background_build(options.memory_root)
        fix = f"a rebuild started in the background (pid {builder})" if builder is not None else RECALL_INDEX_FIX
        return HookResult(event, RECALL_INDEX_OUTCOMES[error.reason], detail=f"{error}; nothing injected; {fix}")
    except (OSError, UnicodeDecodeError, sqlite3.Error) as error:
        return HookResult(event, HookOutcome.failed_memory_root_unreadable, detail=f"{options.memory_root}: {error}")
    except EmbedderUnavailable as error:
        # Not "nothing relevant": recall cannot run at all until the install is repaired, and
        # the person should hear it (Codex shows hook stderr in its logs) rather than lose
        # every recall silently.
        sys.stderr.write(f"codex-memories hook: recall is unavailable, nothing injected: {error}\n")
        return HookResult(event, HookOutcome.failed_encoder_unavailable, detail=str(error))
    if not context:
        return HookResult(event, HookOutcome.skipped_nothing_relevant)
    return HookResult(event, HookOutcome.injected_relevant_memory, stdout=additional_context_output(event, context))


# -- Stop ---------------------------------------------------------------------------------------


def _stop(payload: dict[str, Any], options: HookOptions) -> HookResult:
    event = "Stop"
    transcript = _string_field(payload, "transcript_path")
    if transcript is None:
        return HookResult(event, HookOutcome.skipped_no_transcript, detail="no transcript_path (an ephemeral session?)")
    key = harvest_key(options.codex_home, Path(transcript))
    if not Path(key).is_file():
        return HookResult(event, HookOutcome.failed_transcript_unreadable, detail=f"{key}: no such file")
    if options.harvest_in_background:
        _arm_fresh_waiter(Path(key), options)
        return _start_background_harvest(payload, options)
    from codex_memories.settings_sources import SettingsError

    try:
        db_url = options.db_url or resolve_db_url(options.codex_home)
    except SettingsError as error:
        return HookResult(event, HookOutcome.failed_settings, detail=str(error))
    from sqlalchemy.exc import SQLAlchemyError

    from codex_memories.read.harvest import harvest_citations
    from codex_memories.state.store import MemoryStore

    try:
        store = MemoryStore.open(db_url)
        try:
            report = harvest_citations(store, [key])
        finally:
            store.close()
    except (SQLAlchemyError, OSError) as error:
        return HookResult(event, HookOutcome.failed_state_db, detail=f"{type(error).__name__}: {redact_url(str(error))}")
    if report.unreadable:
        return HookResult(event, HookOutcome.failed_transcript_unreadable, detail="; ".join(why for _, why in report.unreadable))
    return HookResult(
        event,
        HookOutcome.harvested_citations,
        detail=f"{report.citation_blocks} block(s), {report.usage_recorded} use(s) recorded",
        details={"blocks": report.citation_blocks, "usage_recorded": report.usage_recorded, "problems": len(report.problems)},
    )


def _arm_fresh_waiter(rollout: Path, options: HookOptions) -> None:
    """A Codex that is killed sends no SessionEnd: a detached waiter passes the session once it stays idle
    (read.fresh; one per rollout). Only from the console script's Stop (`harvest_in_background`):
    the `--inline` child it starts must not arm a second one. Its start is logged on its own line."""
    from codex_memories.read.fresh import start_fresh

    started = time.monotonic()
    write_log_line(options.log_path, start_fresh("idle", rollout, options), time.monotonic() - started)


# -- SessionEnd (Codex 0.147 and 0.171) ----------------------------------------------------------------


def _session_end(payload: dict[str, Any], options: HookOptions) -> HookResult:
    """Start the fresh pass of the session that ended (read.fresh) and return at once; prints `{}`."""
    transcript = _string_field(payload, "transcript_path")
    if transcript is None:
        return HookResult("SessionEnd", HookOutcome.skipped_no_transcript, detail="no transcript_path (an ephemeral session?)")
    key = Path(harvest_key(options.codex_home, Path(transcript)))
    if not key.is_file():
        return HookResult("SessionEnd", HookOutcome.failed_transcript_unreadable, detail=f"{key}: no such file")
    from codex_memories.read.fresh import start_fresh

    started = start_fresh("end", key, options)
    return HookResult("SessionEnd", started.outcome, detail=started.detail)


def _start_background_harvest(payload: dict[str, Any], options: HookOptions) -> HookResult:
    """Run this same Stop hook, inline, in a detached process (`detached.start_detached`); it logs
    its own outcome line when done."""
    from codex_memories.read.detached import start_detached

    arguments = ["Stop", "--inline", "--codex-home", str(options.codex_home), "--memory-root", str(options.memory_root)]
    try:
        pid = start_detached("codex_memories.read.hooks", arguments, db_url=options.db_url, payload=json.dumps(payload).encode("utf-8"))
    except OSError as error:
        return HookResult("Stop", HookOutcome.failed_start_background_harvest, detail=f"{type(error).__name__}: {error}")
    return HookResult("Stop", HookOutcome.started_background_harvest, detail=f"pid {pid}")


def harvest_key(codex_home: Path, transcript_path: Path) -> str:
    """The path string phase-1 discovery uses for this rollout (`<codex_home>/sessions/...`), so
    both harvests share one stored offset; the transcript path as given when it lies elsewhere."""
    home = Path(codex_home).expanduser()
    try:
        relative = transcript_path.resolve().relative_to(home.resolve())
    except (OSError, ValueError):
        return str(transcript_path)
    return str(home / relative)


def resolve_db_url(codex_home: Path) -> str:
    """The state DB URL our settings give for this Codex home (env, our TOML file, default)."""
    from codex_memories.settings_sources import resolve_hook_settings

    return resolve_hook_settings({"codex_home": codex_home}).db_url


# -- the console script -------------------------------------------------------------------------------

# Each option and the setting it gives (flags rank above the environment and our TOML file).
OPTION_FIELDS = {
    "--codex-home": "codex_home",
    "--memory-root": "memory_root",
    "--config-file": "config_file",
    "--db-url": "db_url",
    "--budget": "session_start_budget_tokens",
    "--prompt-budget": "prompt_recall_budget_tokens",
}
USAGE = (
    "usage: codex-memories-hook <SessionStart|UserPromptSubmit|Stop|SessionEnd> [--codex-home DIR] [--memory-root DIR] "
    "[--config-file FILE] [--db-url URL] [--budget N] [--prompt-budget N] [--inline]"
)


@dataclass(frozen=True)
class HookArguments:
    event: str
    flags: dict[str, str]  # setting name -> the option's value, as given
    inline: bool = False  # Stop: harvest in this process instead of a detached one


def parse_hook_argv(argv: list[str]) -> HookArguments:
    """`<Event> [options] [--inline]`, options as in `OPTION_FIELDS`, `--name VALUE` or `--name=VALUE`.

    Hand-rolled on purpose: argparse alone costs little, but this keeps the hook's import list
    to the standard library's basics."""
    if not argv:
        raise HookInputError(USAGE)
    event, rest = argv[0], argv[1:]
    flags: dict[str, str] = {}
    inline = False
    index = 0
    while index < len(rest):
        name = rest[index]
        if name == "--inline":
            inline = True
            index += 1
            continue
        if "=" in name and name.split("=", 1)[0] in OPTION_FIELDS:
            name, value = name.split("=", 1)
            index += 1
        elif name in OPTION_FIELDS and index + 1 < len(rest):
            value = rest[index + 1]
            index += 2
        else:
            raise HookInputError(f"unknown or incomplete option {name!r}; {USAGE}")
        flags[OPTION_FIELDS[name]] = value
    return HookArguments(event, flags, inline)


def hook_options(arguments: HookArguments, environ: dict[str, str] | None = None) -> HookOptions:
    """The options one hook call runs with: our settings resolved as the CLI resolves them
    (`settings_sources.resolve_hook_settings`: flags > environment > our TOML file > defaults).
    Raises `SettingsError` on a bad value."""
    from codex_memories.settings_sources import resolve_hook_settings

    settings = resolve_hook_settings(arguments.flags, environ)
    return HookOptions(
        codex_home=settings.codex_home,
        memory_root=settings.memory_root,
        summary_budget_tokens=settings.session_start_budget_tokens,
        prompt_budget_tokens=settings.prompt_recall_budget_tokens,
        db_url=settings.db_url,
        harvest_in_background=not arguments.inline,
    )


def run(argv: list[str], stdin_text: str) -> str:
    """What the console script prints for `argv` and stdin; never raises."""
    from codex_memories.read.hook_notices import session_answer
    from codex_memories.settings_sources import SettingsError

    try:
        arguments = parse_hook_argv(argv)
        options = hook_options(arguments)
    except (HookInputError, SettingsError) as error:
        outcome = HookOutcome.failed_settings if isinstance(error, SettingsError) else HookOutcome.failed_bad_input
        # Said on stderr too (Codex shows hook stderr in its logs): every call would fail alike.
        sys.stderr.write(f"codex-memories hook: {error}; nothing injected\n")
        result = HookResult(argv[0] if argv else "?", outcome, detail=str(error))
        write_log_line(hook_log_path(_fallback_codex_home(argv)), result, 0.0)
        settings_error = str(error) if isinstance(error, SettingsError) else None
        return session_answer(EMPTY_OUTPUT, result.event, stdin_text, settings_error=settings_error)
    # What cannot work this session is said once, in Codex (hook_notices: a systemMessage).
    answer = handle_hook(arguments.event, stdin_text, options).stdout
    return session_answer(answer, arguments.event, stdin_text, memory_root=options.memory_root)


def _fallback_codex_home(argv: list[str]) -> Path:
    """Where to log a call whose settings did not resolve: its `--codex-home`, else the environment's."""
    from codex_memories.settings_sources import DEFAULT_CODEX_HOME, env_value

    for index, name in enumerate(argv):
        if name == "--codex-home" and index + 1 < len(argv):
            return Path(argv[index + 1]).expanduser()
        if name.startswith("--codex-home="):
            return Path(name.split("=", 1)[1]).expanduser()
    return Path(env_value("codex_home", os.environ) or DEFAULT_CODEX_HOME).expanduser()


def main(argv: list[str] | None = None) -> None:
    """`codex-memories-hook`: always prints one JSON object and exits 0."""
    # Read once, when numpy loads (nothing before this line imports it): the fresh-process hook
    # took 0.50 s median with one thread against 2.05 s with the default on a loaded 2-core machine.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        stdin_text = sys.stdin.read()
    except (OSError, UnicodeDecodeError) as error:
        stdin_text = ""
        sys.stderr.write(f"codex-memories hook: cannot read stdin: {error}\n")
    answer = run(list(sys.argv[1:] if argv is None else argv), stdin_text)
    try:
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()
    except OSError as error:  # Codex went away (BrokenPipeError): nobody to answer, still exit 0
        sys.stderr.write(f"codex-memories hook: cannot write the answer: {error}\n")
        # Python flushes stdout again at exit; point it at devnull so that flush cannot fail.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    main()
