"""The offline, rule-based stage-1 extractor: no network, no model, no randomness.

Input: `ExtractionRequest.transcript_items` (sanitized, redacted Codex response items). Output: a
`Stage1Extraction` in the same `raw_memory` / `rollout_summary` formats the model is asked for,
labelled in both texts as produced by this extractor, with zero token usage.

What it looks for:
- The user's durable statements, only in the user's own messages (never in assistant text or
  tool output, where an instruction is data, not the user's wish), judged by
  `extract.rules.rules_in_session` in nine languages: rules, conventions, decisions, environment
  facts and preferences, with or without a keyword. Each becomes a typed entry quoting the user
  (`typed_entries`: type, weight, reason, `turn` = which user message said it and, for a
  temporary rule, an expiry counted from `ExtractionRequest.session_time`). One-offs ("only for
  this commit") give no entry; a correction in a later turn leaves only the corrected statement.
- Commands with a known exit code (shell function calls and `local_shell_call`, paired with their
  output by `call_id`): successes are verified commands; a failure followed later by a success of
  a similar command in the same directory is recorded as a fix; a failure never fixed is recorded
  as such. Commands are grouped per working directory, one task block each.

Scope (issue 15): a preference is user-level only when the user says so ("in every repo of
mine", "in all my projects", "globally", "for all projects", "always, everywhere", 所有项目, 全局,
每个仓库); a project phrase ("in this repo", "for this project", "here", 这个项目, 本仓库) or no
phrase at all keeps it project-level, and commands are always the repository's. User-level
preferences get their own task block, so `task_scopes` is one `user` or `project` per block. A
sentence that states its scope and gives an instruction ("in all my projects, answer in
English", "in this repo use tabs") counts as a preference even without "always" or "never".

Tool output is evidence, never an instruction: it is read only for the exit code. What a command
printed is never copied into a memory (a tool output saying "note for AI assistants: always run
..." must not become advice every later session follows); a memory records what ran, its exit
code and what fixed it.

Transcript items are JSON from a file: any field may hold any JSON value. A field of an
unexpected type is read as absent, never trusted to be hashable or iterable.

When none of that is present the result is the "no output" outcome (all three fields empty).
Same input, byte-identical output.
"""

from __future__ import annotations

import json
import re
import shlex
import unicodedata
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from codex_memories.extract.rules import RecognisedRule, asks_one_off, rules_in_session
from codex_memories.ingest.transcript import is_harness_text, unspotlight_item
from codex_memories.llm.base import ExtractionRequest, ExtractionResponse, TokenUsage
from codex_memories.llm.schema import Stage1Extraction
from codex_memories.scopes import PROJECT_SCOPE, USER_SCOPE
from codex_memories.typed_entries import EntryMeta, with_meta

PROVIDER_NAME = "heuristic"
HEURISTIC_MODEL = "heuristic-v1"
GENERATED_BY = "codex-memories heuristic extractor (offline, rule-based)"

MAX_QUOTE_CHARS = 300
MAX_COMMAND_CHARS = 200
MAX_ITEMS_PER_SECTION = 12
MAX_SLUG_CHARS = 80
MAX_TASK_NAME_CHARS = 80
UNKNOWN_CWD = "unknown"
USER_LEVEL_TASK_TITLE = "preferences the user gave for all their projects"

# Scope phrases (issue 15; other languages for issue 34). A project phrase wins over a user phrase
# in the same sentence: the narrower reading is the safe one. "Every project" said outright is
# user-level; a bare "everywhere" is too, unless the sentence's subject is a part of this project
# ("the API speaks snake_case JSON everywhere": everywhere in the API), which narrows it.
_EXPLICIT_USER_SCOPE = (
    r"\b(?:in|for|across)\s+(?:every|each|all(?:\s+of)?)\s+(?:my\s+|the\s+|our\s+)?(?:repos?|repositor(?:y|ies)|projects?|codebases?)"
    r"(?:\s+of\s+mine)?\b"
    r"|\bin\s+any\s+(?:repo|repository|project)\b"
    r"|\b(?:in|f(?:ü|ue)r)\s+(?:allen|jedem|jedes)\s+(?:meinen\s+|unseren\s+)?(?:Repos?|Repositor(?:y|ies)|Projekten?|Projekt)\b"
    r"|\ben\s+(?:todos\s+(?:mis|los|nuestros)|cada|cualquier)\s+(?:repos?|repositorios?|proyectos?)\b"
    r"|\bem\s+(?:todos\s+os(?:\s+meus)?|cada|qualquer)\s+(?:repos?|reposit[oó]rios?|projetos?)\b"
    r"|\bdans\s+(?:tous\s+(?:mes|les|nos)|chaque|n'importe\s+quel)\s+(?:d[ée]p[ôo]ts?|repos?|projets?)\b"
    r"|\bво\s+всех\s+(?:моих\s+|наших\s+)?(?:репо\w*|проект\w*)|\bв\s+любом\s+(?:репо\w*|проект\w*)"
    r"|所有项目|所有的项目|每个仓库|所有仓库|每个项目|任何项目"
    r"|(?:全て|すべて|全部)の(?:プロジェクト|リポジトリ|レポ)|どの(?:プロジェクト|リポジトリ)でも|全リポジトリ"
    r"|모든\s*(?:프로젝트|저장소|레포)|어느\s*프로젝트에서나"
)
_BARE_EVERYWHERE = (
    r"\bglobally\b|\beverywhere\b|\b(?:ü|ue)berall\b|\bglobal\s+f(?:ü|ue)r\s+alles\b|\bpartout\b"
    r"|\ben\s+todas\s+partes\b|\bem\s+todo\s+(?:lugar|o\s+lado)\b|\bвезде\b|\bповсюду\b"
    r"|全局|到处|どこでも|어디서나"
)
_USER_SCOPE_PHRASES = re.compile(rf"{_EXPLICIT_USER_SCOPE}|{_BARE_EVERYWHERE}", re.IGNORECASE)
_EXPLICIT_USER_SCOPE_PHRASES = re.compile(_EXPLICIT_USER_SCOPE, re.IGNORECASE)
# A part of the current project named as the sentence's subject, with a definite or possessive
# article: what a bare "everywhere" then ranges over.
_PROJECT_PART_SUBJECT = re.compile(
    r"\b(?:the|our|this)\s+(?:api|app|apps|backend|frontend|service|services|server|client|schema|database|db|"
    r"codebase|test\s+suite|tests|ui|cli|library|package|monorepo|module|endpoints?|pipeline|migrations?)\b"
    r"|\b(?:die|das|der|unsere?|unser)\s+(?:API|App|Backend|Frontend|Dienste?|Service|Datenbank|Tests|Pipeline)\b"
    r"|\b(?:la|el|nuestra|nuestro|nuestros)\s+(?:API|app|backend|frontend|servicio|base\s+de\s+datos|tests|pruebas)\b"
    r"|\b(?:l'|le\s+|la\s+|notre\s+)(?:API|app|backend|frontend|service|base\s+de\s+donn[ée]es|tests)\b",
    re.IGNORECASE,
)
_PROJECT_SCOPE_PHRASES = re.compile(
    r"\b(?:in|for|on)\s+this\s+(?:repo|repository|project|codebase|code\s*base)\b"
    r"|\bhere\b|这个项目|本项目|本仓库|这个仓库|该项目"
    r"|\b(?:in|f(?:ü|ue)r)\s+(?:diesem|dieses)\s+(?:Repo|Repository|Projekt)\b|\bhier\b"
    r"|\ben\s+este\s+(?:repo|repositorio|proyecto)\b|\baqu[ií]\b"
    r"|\bneste\s+(?:repo|reposit[oó]rio|projeto)\b|\baqui\b"
    r"|\bdans\s+ce\s+(?:d[ée]p[ôo]t|repo|projet)\b|\bici\b"
    r"|\bв\s+этом\s+(?:репо\w*|проекте)|\bздесь\b"
    r"|この(?:プロジェクト|リポジトリ|レポ)|이\s*(?:프로젝트|저장소|레포)",
    re.IGNORECASE,
)
# An instruction right after (or before) a scope phrase: "in all my projects, answer in English".
_INSTRUCTION_VERBS = (
    r"(?:please\s+)?(?:use|answer|reply|respond|write|run|prefer|keep|avoid|put|name|format|indent|add|"
    r"stick|commit|always|never|don'?t|do\s+not|make\s+sure|call|speak|explain|test)\b"
)
_SCOPED_INSTRUCTION = re.compile(
    rf"(?:{_USER_SCOPE_PHRASES.pattern}|{_PROJECT_SCOPE_PHRASES.pattern})\s*[,:;-]?\s*{_INSTRUCTION_VERBS}"
    # "for commits, in all my repos: imperative subject, a trailer line ...": a scope, then the spec.
    rf"|(?:{_USER_SCOPE_PHRASES.pattern})\s*:\s*\S"
    rf"|^{_INSTRUCTION_VERBS}.*(?:{_USER_SCOPE_PHRASES.pattern}|{_PROJECT_SCOPE_PHRASES.pattern})"
    r"|(?:所有项目|所有的项目|全局|每个仓库|所有仓库|每个项目|任何项目|这个项目|本项目|本仓库|这个仓库|该项目).{0,8}?"
    r"(?:用|使用|都|请|要|不要|必须|统一|回答|写)",
    re.IGNORECASE,
)


def preference_scope(sentence: str) -> str:
    """`user` when the sentence says it applies in every project, else `project` (the default)."""
    if _PROJECT_SCOPE_PHRASES.search(sentence):
        return PROJECT_SCOPE
    if _EXPLICIT_USER_SCOPE_PHRASES.search(sentence):
        return USER_SCOPE
    if _USER_SCOPE_PHRASES.search(sentence) and not _PROJECT_PART_SUBJECT.search(sentence):
        return USER_SCOPE
    return PROJECT_SCOPE


_SHELL_TOOL_NAMES = {"shell", "exec_command", "local_shell", "container.exec", "shell_command", "bash"}

# Read-only look-arounds: running them proves nothing worth remembering.
_TRIVIAL_PROGRAMS = {
    "cat", "cd", "echo", "find", "grep", "head", "less", "ls", "nl", "pwd", "rg", "sed", "tail",
    "tree", "wc", "which", "true", "stat", "file",
}

_EXIT_CODE_PATTERNS = (
    re.compile(r"\bExit code:\s*(-?\d{1,9})\b"),
    re.compile(r"\bProcess exited with code\s*(-?\d{1,9})\b"),
    re.compile(r"\bexit_code[\"']?\s*[:=]\s*(-?\d{1,9})\b"),
)

_ENV_CWD = re.compile(r"<cwd>\s*(.*?)\s*</cwd>", re.DOTALL)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+")
_SLUG_UNSAFE = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class CommandRun:
    command: str
    workdir: str
    exit_code: int
    # The user message it answered (1 is the first the user typed; 0 is before any).
    turn: int = 0

    @property
    def succeeded(self) -> bool:
        return self.exit_code == 0

    @property
    def program(self) -> str:
        return _program_of(self.command)


@dataclass(frozen=True)
class Fix:
    failed: CommandRun
    fixed_by: CommandRun


@dataclass
class TaskEvidence:
    workdir: str
    preferences: list[RecognisedRule] = field(default_factory=list)
    runs: list[CommandRun] = field(default_factory=list)
    scope: str = PROJECT_SCOPE

    @property
    def notable_runs(self) -> list[CommandRun]:
        return [run for run in self.runs if run.program not in _TRIVIAL_PROGRAMS]

    @property
    def verified_commands(self) -> list[CommandRun]:
        seen: set[str] = set()
        verified = []
        for run in self.runs:
            if run.succeeded and run.program not in _TRIVIAL_PROGRAMS and run.command not in seen:
                seen.add(run.command)
                verified.append(run)
        return verified

    def fixes_and_unresolved(self) -> tuple[list[Fix], list[CommandRun]]:
        fixes: list[Fix] = []
        unresolved: list[CommandRun] = []
        for index, run in enumerate(self.runs):
            if run.succeeded:
                continue
            later_success = next(
                (later for later in self.runs[index + 1 :] if later.succeeded and _similar(run, later)),
                None,
            )
            if later_success is None:
                unresolved.append(run)
            elif not any(fix.failed.command == run.command and fix.fixed_by == later_success for fix in fixes):
                fixes.append(Fix(failed=run, fixed_by=later_success))
        return fixes, unresolved

    @property
    def has_signal(self) -> bool:
        fixes, unresolved = self.fixes_and_unresolved()
        return bool(self.preferences or self.verified_commands or fixes or unresolved)

    @property
    def outcome(self) -> str:
        fixes, unresolved = self.fixes_and_unresolved()
        if unresolved:
            return "partial" if any(run.succeeded for run in self.runs) else "fail"
        if fixes:
            return "success"
        return "uncertain"


class HeuristicProvider:
    name = PROVIDER_NAME

    def extract(self, request: ExtractionRequest) -> ExtractionResponse:
        return ExtractionResponse(
            extraction=extract_heuristically(request),
            usage=TokenUsage(),
            provider=self.name,
            model=HEURISTIC_MODEL,
        )


def extract_heuristically(request: ExtractionRequest) -> Stage1Extraction:
    # The items as the rollout had them: the stage-1 input's origin keys and datamarks are for a
    # model; this reader decides who wrote what by the items' own types and roles.
    items = [unspotlight_item(item) for item in request.transcript_items]
    # Codex's injected context (environment, AGENTS.md, skills, notifications) was not typed by the user.
    user_texts = [text for text in _user_texts(items) if not is_harness_text(text)]
    cwd = _best_cwd(request.cwd, items)
    tasks = _collect_tasks(items, user_texts, cwd, request.session_time)
    if not any(task.has_signal for task in tasks):
        return Stage1Extraction(rollout_summary="", rollout_slug="", raw_memory="")

    tasks = [task for task in tasks if task.has_signal]
    task_name = _task_name(user_texts)
    keywords = _keywords(cwd, tasks)
    return Stage1Extraction(
        rollout_summary=_render_summary(task_name, cwd, request.rollout_path, tasks),
        rollout_slug=_slug(task_name),
        raw_memory=_render_raw_memory(task_name, cwd, tasks, keywords),
        task_scopes=[task.scope for task in tasks],
    )


# -- reading the transcript ----------------------------------------------------------------------


def _user_texts(items: list[dict[str, Any]]) -> list[str]:
    texts = []
    for item in items:
        if item.get("type") != "message" or item.get("role") != "user":
            continue
        content = item.get("content")
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("type") == "input_text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
    return texts


def _best_cwd(request_cwd: str, items: list[dict[str, Any]]) -> str:
    if request_cwd and request_cwd.strip() and request_cwd.strip() != UNKNOWN_CWD:
        return request_cwd.strip()
    for text in _user_texts(items):
        match = _ENV_CWD.search(text) if text.lstrip().startswith("<environment_context>") else None
        if match and match.group(1):
            return match.group(1)
    return UNKNOWN_CWD


def _answers(items: list[dict[str, Any]]) -> list[bool]:
    """For each user text (harness text left out, as in `user_texts`): whether the assistant's
    last message before it asked a question."""
    answers: list[bool] = []
    asked = False
    for item in items:
        if item.get("type") != "message":
            continue
        if item.get("role") == "assistant":
            content = item.get("content")
            texts = [part.get("text") for part in content if isinstance(part, dict)] if isinstance(content, list) else []
            said = "".join(text for text in texts if isinstance(text, str)).rstrip()
            asked = said.endswith(("?", "？")) if said else asked
        elif item.get("role") == "user":
            answers += [asked for text in _user_texts([item]) if not is_harness_text(text)]
    return answers


def _preferences(user_texts: list[str], said_at: datetime | None, answers: list[bool]) -> list[RecognisedRule]:
    found: list[RecognisedRule] = []
    for rule in rules_in_session(user_texts, said_at, fallback=_scoped_instruction, answers=answers):
        rule = replace(rule, text=_clip(rule.text, MAX_QUOTE_CHARS))
        if all(rule.text != seen.text for seen in found):
            found.append(rule)
    return found


def _scoped_instruction(sentence: str) -> RecognisedRule | None:
    """A sentence that states its scope and gives an instruction ("in all my projects, answer in
    English") is a preference even in a form `extract.rules` does not know."""
    stripped = sentence.strip().lstrip("-*> ").strip()
    if not stripped or stripped.endswith(("?", "？")) or not _SCOPED_INSTRUCTION.search(stripped):
        return None
    return RecognisedRule(text=stripped, type="preference", weight=0.6)


def _collect_tasks(
    items: list[dict[str, Any]], user_texts: list[str], cwd: str, said_at: datetime | None
) -> list[TaskEvidence]:
    preferences = _preferences(user_texts, said_at, _answers(items))
    primary = TaskEvidence(workdir=cwd, preferences=[rule for rule in preferences if preference_scope(rule.text) == PROJECT_SCOPE])
    by_workdir: dict[str, TaskEvidence] = {cwd: primary}
    # Commands run for a one-off ("skip the hooks for this commit only") did the exception once;
    # remembered as commands that worked, they would serve it as a way of working.
    one_off_turns = {turn for turn, text in enumerate(user_texts, start=1) if asks_one_off(text)}
    for run in _command_runs(items, cwd):
        if run.turn in one_off_turns:
            continue
        by_workdir.setdefault(run.workdir, TaskEvidence(workdir=run.workdir)).runs.append(run)
    user_level = [rule for rule in preferences if preference_scope(rule.text) == USER_SCOPE]
    # Last, so the block numbers of the project's tasks do not depend on it.
    user_task = [TaskEvidence(workdir=cwd, preferences=user_level, scope=USER_SCOPE)] if user_level else []
    return list(by_workdir.values()) + user_task


def _command_runs(items: list[dict[str, Any]], default_workdir: str) -> list[CommandRun]:
    outputs: dict[str, str] = {}
    for item in items:
        if item.get("type") == "function_call_output" and isinstance(item.get("call_id"), str):
            outputs[item["call_id"]] = _output_text(item.get("output"))

    runs = []
    turn = 0
    for item in items:
        # Counted as `extract_heuristically` counts the user's turns: what the harness injected is not one.
        if item.get("type") == "message" and item.get("role") == "user":
            turn += sum(1 for text in _user_texts([item]) if not is_harness_text(text))
        parsed = _parse_command_call(item)
        if parsed is None:
            continue
        command, workdir, call_id = parsed
        output = outputs.get(call_id) if call_id else None
        if output is None:
            continue
        exit_code = _exit_code(output)
        if exit_code is None:
            continue
        runs.append(
            CommandRun(
                command=_clip(command, MAX_COMMAND_CHARS),
                workdir=workdir or default_workdir,
                exit_code=exit_code,
                turn=turn,
            )
        )
    return runs


def _parse_command_call(item: dict[str, Any]) -> tuple[str, str | None, str | None] | None:
    item_type = item.get("type")
    if item_type == "local_shell_call":
        action = item.get("action")
        if not isinstance(action, dict):
            return None
        command = _command_string(action.get("command"))
        workdir = action.get("working_directory")
        call_id = item.get("call_id") or item.get("id")
    elif item_type == "function_call" and isinstance(item.get("name"), str) and item["name"] in _SHELL_TOOL_NAMES:
        raw_arguments = item.get("arguments")
        if not isinstance(raw_arguments, str):
            return None
        try:
            arguments = json.loads(raw_arguments or "{}")
        except (ValueError, RecursionError):
            return None
        if not isinstance(arguments, dict):
            return None
        command = _command_string(arguments.get("command", arguments.get("cmd")))
        workdir = arguments.get("workdir")
        if not isinstance(workdir, str) or not workdir:
            workdir = arguments.get("working_directory")
        call_id = item.get("call_id")
    else:
        return None
    if not command:
        return None
    return command, workdir if isinstance(workdir, str) and workdir else None, call_id if isinstance(call_id, str) else None


def _command_string(command: Any) -> str:
    if isinstance(command, str):
        return command.strip()
    if isinstance(command, list) and all(isinstance(part, str) for part in command):
        # ["bash", "-lc", "<script>"] is how Codex wraps shell commands; the script is the command.
        if len(command) == 3 and command[1] in ("-lc", "-c") and command[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh"):
            return command[2].strip()
        return shlex.join(command)
    return ""


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(part.get("text", "") for part in output if isinstance(part, dict) and isinstance(part.get("text"), str))
    return ""


def _exit_code(output: str) -> int | None:
    try:
        payload = json.loads(output)
    except (ValueError, RecursionError):
        payload = None
    if isinstance(payload, dict):
        metadata = payload.get("metadata")
        if isinstance(metadata, dict) and isinstance(metadata.get("exit_code"), int):
            return metadata["exit_code"]
        if isinstance(payload.get("exit_code"), int):
            return payload["exit_code"]
        if isinstance(payload.get("output"), str):
            output = payload["output"]
    for pattern in _EXIT_CODE_PATTERNS:
        match = pattern.search(output)
        if match:
            return int(match.group(1))
    return None


def _program_of(command: str) -> str:
    try:
        tokens = shlex.split(command)
    except ValueError:
        tokens = command.split()
    for token in tokens:
        if "=" in token.split("/", 1)[0] or token in ("sudo", "env", "time", "command"):
            continue
        return token.rsplit("/", 1)[-1]
    return ""


def _similar(failed: CommandRun, later: CommandRun) -> bool:
    """Same directory, and one command runs the other's program (`pytest x` then `uv run pytest x`)."""
    if not failed.program or failed.workdir != later.workdir:
        return False
    return failed.program in _programs_named(later.command) or later.program in _programs_named(failed.command)


def _programs_named(command: str) -> set[str]:
    try:
        tokens = shlex.split(command)
    except ValueError:
        tokens = command.split()
    return {token.rsplit("/", 1)[-1] for token in tokens}


# -- writing the memory ----------------------------------------------------------------------------


def _task_name(user_texts: list[str]) -> str:
    for text in user_texts:
        for line in text.splitlines():
            stripped = line.strip().lstrip("#-*> ").strip()
            if stripped:
                first_sentence = _SENTENCE_SPLIT.split(stripped, maxsplit=1)[0].rstrip(".!?")
                return _clip(first_sentence, MAX_TASK_NAME_CHARS)
    return "session without a user request"


def _slug(task_name: str) -> str:
    # "Ünïcödé" becomes "unicode" rather than "n-c-d": decompose, then drop what is not ASCII.
    ascii_name = unicodedata.normalize("NFKD", task_name).encode("ascii", "ignore").decode("ascii")
    slug = _SLUG_UNSAFE.sub("-", ascii_name.lower()).strip("-")
    slug = slug[:MAX_SLUG_CHARS].rstrip("-")
    return slug or "heuristic-memory"


def _keywords(cwd: str, tasks: list[TaskEvidence]) -> list[str]:
    keywords: list[str] = []
    project = cwd.rstrip("/").rsplit("/", 1)[-1] if cwd != UNKNOWN_CWD else ""
    candidates = [project] + [run.program for task in tasks for run in task.notable_runs] + ["heuristic"]
    for keyword in candidates:
        cleaned = keyword.replace(",", " ").strip()
        if cleaned and cleaned not in keywords:
            keywords.append(cleaned)
    return keywords[:MAX_ITEMS_PER_SECTION]


def _task_title(task: TaskEvidence, task_name: str, cwd: str) -> str:
    if task.scope == USER_SCOPE:
        return USER_LEVEL_TASK_TITLE
    return task_name if task.workdir == cwd else f"commands run in {task.workdir}"


def _preference_lines(task: TaskEvidence, follow_up: str = "") -> list[str]:
    return [f'- {with_meta(f"{_quoted(rule.text)}{follow_up}", _entry_meta(rule))}' for rule in task.preferences[:MAX_ITEMS_PER_SECTION]]


def _entry_meta(rule: RecognisedRule) -> EntryMeta:
    return EntryMeta(type=rule.type, weight=rule.weight, reason=rule.reason, expires=rule.expires, turn=rule.turn)


def _quoted(text: str) -> str:
    # A quote that holds braces would read as a typed-entry suffix; the user's words stay readable.
    return '"' + text.replace("{", "(").replace("}", ")") + '"'


# The two verdicts on a command that the lines below write, read back by the consolidator to keep
# only the newest one (`consolidate.heuristic`): one module owns the format.
VERIFIED_COMMAND_LINE = re.compile(r"^(?:- )?`(?P<command>[^`]+)` succeeded \(exit 0\)")
UNRESOLVED_COMMAND_LINE = re.compile(r"^(?:- )?`(?P<command>[^`]+)` failed \(exit -?\d+\); no later success")


def _knowledge_lines(task: TaskEvidence) -> list[str]:
    return [
        f"- `{run.command}` succeeded (exit 0) in {run.workdir}"
        for run in task.verified_commands[:MAX_ITEMS_PER_SECTION]
    ]


def _failure_lines(task: TaskEvidence) -> list[str]:
    fixes, unresolved = task.fixes_and_unresolved()
    lines = [
        f"- `{fix.failed.command}` failed (exit {fix.failed.exit_code}) -> "
        f"`{fix.fixed_by.command}` worked afterwards"
        for fix in fixes
    ]
    lines += [
        f"- `{run.command}` failed (exit {run.exit_code}); no later success of a similar command in this session"
        for run in unresolved
    ]
    return lines[:MAX_ITEMS_PER_SECTION]


def _reference_lines(task: TaskEvidence, numbered: bool) -> list[str]:
    lines = []
    for index, run in enumerate(task.notable_runs[:MAX_ITEMS_PER_SECTION], start=1):
        prefix = f"[{index}]" if numbered else "-"
        lines.append(f"{prefix} `{run.command}` -> exit {run.exit_code}")
    return lines


def _section(title: str, lines: list[str]) -> list[str]:
    return [f"{title}:", *lines, ""] if lines else []


def _render_raw_memory(task_name: str, cwd: str, tasks: list[TaskEvidence], keywords: list[str]) -> str:
    overall = _overall_outcome(tasks)
    task_group = cwd.rstrip("/").rsplit("/", 1)[-1] if cwd != UNKNOWN_CWD else "general"
    lines = [
        "---",
        f"description: {_one_line(task_name)} (preferences and verified commands found by rule)",
        f"task: {_one_line(task_name)}",
        f"task_group: {task_group}",
        f"task_outcome: {overall}",
        f"cwd: {cwd}",
        f"keywords: {', '.join(keywords)}",
        f"generated_by: {GENERATED_BY}",
        "---",
        "",
    ]
    for number, task in enumerate(tasks, start=1):
        title = _one_line(_task_title(task, task_name, cwd))
        lines += [
            f"### Task {number}: {title}",
            f"task: {title}",
            f"task_group: {task_group}",
            f"task_outcome: {task.outcome}",
            f"scope: {task.scope}",
            "",
        ]
        lines += _section("Preference signals", _preference_lines(task))
        lines += _section("Reusable knowledge", _knowledge_lines(task))
        lines += _section("Failures and how to do differently", _failure_lines(task))
        lines += _section("References", _reference_lines(task, numbered=False))
    return "\n".join(lines).rstrip("\n") + "\n"


def _render_summary(task_name: str, cwd: str, rollout_path: str, tasks: list[TaskEvidence]) -> str:
    lines = [
        f"# {_one_line(task_name)}",
        "",
        f"generated_by: {GENERATED_BY}",
        f"Rollout context: cwd {cwd}; rollout {rollout_path or 'unknown'}",
        "",
    ]
    for number, task in enumerate(tasks, start=1):
        lines += [f"## Task {number}: {_one_line(_task_title(task, task_name, cwd))}", f"Outcome: {task.outcome}", ""]
        lines += _section("Preference signals", _preference_lines(task, " -> follow this in future work for this user"))
        lines += _section("Key steps", [f"- ran `{run.command}` (exit {run.exit_code})" for run in task.notable_runs[:MAX_ITEMS_PER_SECTION]])
        lines += _section("Failures and how to do differently", _failure_lines(task))
        lines += _section("Reusable knowledge", _knowledge_lines(task))
        lines += _section("References", _reference_lines(task, numbered=True))
    return "\n".join(lines).rstrip("\n") + "\n"


def _overall_outcome(tasks: list[TaskEvidence]) -> str:
    outcomes = {task.outcome for task in tasks}
    if outcomes == {"fail"}:
        return "fail"
    if outcomes & {"fail", "partial"}:
        return "partial"
    return "success" if "success" in outcomes else "uncertain"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _clip(text: str, limit: int) -> str:
    text = _one_line(text)
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."
