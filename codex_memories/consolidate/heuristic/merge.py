"""Merge: parsed threads, summaries and notes become task groups (pure, no I/O).

- `merge_summaries`: rollout summaries add branch metadata, and summary-only threads; every
  thread gets a description, a cwd (`UNKNOWN_CWD` when none) and a project key.
- `apply_notes`: each note's forget term removes thread lines and earlier notes; the notes kept.
- `resolve_conflicts`: a preference or knowledge entry replaced by a later one of the same scope
  (one project key: every folder of a repository; or the user level) leaves its thread, the
  thread's time deciding which is later (`conflicts.find_conflicts`).
- `build_groups`: one user-level group, one group per project key (per cwd without one), newest
  first; a line supported by several tasks is merged on its text without the typed-entry suffix,
  and a command keeps only its newest verdict (`keep_newest_command_verdicts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from codex_memories.consolidate.conflicts import Conflict, DatedEntry, find_conflicts, losers
from codex_memories.consolidate.heuristic.parse import (
    FAILURES,
    KNOWLEDGE,
    PREFERENCES,
    SUBSECTIONS,
    AdHocNote,
    RolloutSummary,
    ThreadMemory,
    dedupe,
    first_clean,
)
from codex_memories.extract.heuristic import UNRESOLVED_COMMAND_LINE, VERIFIED_COMMAND_LINE
from codex_memories.scopes import PROJECT_SCOPE, USER_LEVEL_LABEL, USER_SCOPE, project_marker
from codex_memories.typed_entries import normalise, split_entry

UNKNOWN_CWD = "unknown"
MAX_KEYWORDS = 12


@dataclass
class Task:
    number: int
    thread: ThreadMemory


@dataclass
class Group:
    cwd: str  # the working directories of its tasks, newest first, comma-separated
    tasks: list[Task]
    # section -> list of (line, [task numbers])
    sections: dict[str, list[tuple[str, list[int]]]]
    scope: str = PROJECT_SCOPE
    project_key: str = ""

    @property
    def is_user_level(self) -> bool:
        return self.scope == USER_SCOPE

    @property
    def label(self) -> str:
        """The task group's title: the user-level label, the project key, or the cwd."""
        if self.is_user_level:
            return USER_LEVEL_LABEL
        return self.project_key or self.cwd

    @property
    def marker(self) -> str:
        """`project=<key>` for a project group with a key; "" for user-level and unknown groups."""
        return project_marker(self.project_key) if self.project_key and not self.is_user_level else ""

    @property
    def latest(self) -> datetime:
        return max(task.thread.sort_time for task in self.tasks)

    @property
    def keywords(self) -> list[str]:
        return dedupe(keyword for task in self.tasks for keyword in task.thread.keywords)[:MAX_KEYWORDS]


# What a later statement can replace: the user's rules and the facts about their environment
# (a port, a profile, a version is knowledge as often as a preference). Failures are history.
REPLACEABLE_SECTIONS = (PREFERENCES, KNOWLEDGE)


def scope_group(thread: ThreadMemory) -> str:
    """The scope a thread's statements replace each other in: the user level, or one project
    (its key: every folder of one repository; its cwd for a memory from before scopes)."""
    if thread.scope == USER_SCOPE:
        return USER_SCOPE
    return f"{PROJECT_SCOPE}={thread.project_key or (thread.cwd.rstrip('/') or '/' if thread.cwd else UNKNOWN_CWD)}"


def statement_entries(threads: list[ThreadMemory]) -> list[DatedEntry]:
    """Every thread's preference and knowledge lines as dated entries (the thread's time), grouped
    by scope, in input order."""
    entries: list[DatedEntry] = []
    for thread in threads:
        for section in REPLACEABLE_SECTIONS:
            for line in thread.lines[section]:
                entries.append(
                    DatedEntry(
                        text=line, group=scope_group(thread), source=thread.thread_id,
                        updated_at=thread.updated_at, position=len(entries),
                    )
                )
    return entries


def resolve_conflicts(threads: list[ThreadMemory]) -> list[Conflict]:
    """Find replaced entries and drop each from its thread (the newer statement stays)."""
    conflicts = find_conflicts(statement_entries(threads))
    dropped = losers(conflicts)
    position = 0
    for thread in threads:
        for section in REPLACEABLE_SECTIONS:
            kept = []
            for line in thread.lines[section]:
                if (scope_group(thread), thread.thread_id, position) not in dropped:
                    kept.append(line)
                position += 1
            thread.lines[section] = kept
    _rename_threads_named_after(threads, [conflict.loser.text for conflict in conflicts])
    return conflicts


def _rename_threads_named_after(threads: list[ThreadMemory], replaced: list[str]) -> None:
    """A session the extractor named after its first request ("In this repo use Node 18 ...")
    would carry the replaced value into every index line about it: it is named by its id."""
    quoted = [text for text in (normalise(split_entry(line)[0]) for line in replaced) if text]
    for thread in threads:
        description = normalise(thread.description)
        if any(text in description for text in quoted):
            thread.description = f"session {thread.thread_id}"


def merge_summaries(threads: list[ThreadMemory], summaries: list[RolloutSummary]) -> list[ThreadMemory]:
    by_file = {summary.file_name: summary for summary in summaries}
    seen_files = set()
    seen_threads = {thread.thread_id for thread in threads}
    for thread in threads:
        summary = by_file.get(thread.rollout_summary_file)
        if summary is not None:
            seen_files.add(summary.file_name)
            thread.git_branch = summary.git_branch
            if not thread.description:
                thread.description = first_clean(summary.title)
    for summary in summaries:
        if summary.file_name in seen_files or not summary.thread_id or summary.thread_id in seen_threads:
            continue
        threads.append(
            ThreadMemory(
                thread_id=summary.thread_id,
                updated_at=summary.updated_at,
                cwd=summary.cwd,
                rollout_path=summary.rollout_path,
                rollout_summary_file=summary.file_name,
                git_branch=summary.git_branch,
                description=first_clean(summary.title),
            )
        )
    for thread in threads:
        thread.description = thread.description or f"session {thread.thread_id}"
        thread.cwd = thread.cwd or UNKNOWN_CWD
        if not thread.project_key and thread.cwd != UNKNOWN_CWD:
            thread.project_key = thread.cwd.rstrip("/") or "/"  # a memory from before scopes: its cwd is its project
        if not thread.keywords:
            project = project_name(thread.cwd)
            thread.keywords = [project] if project else []
    return threads


def apply_notes(threads: list[ThreadMemory], notes: list[AdHocNote]) -> list[AdHocNote]:
    stored: list[AdHocNote] = []
    for note in notes:
        if note.forget_term is not None:
            term = note.forget_term.casefold()
            stored = [earlier for earlier in stored if term not in earlier.text.casefold()]
            for thread in threads:
                for section in SUBSECTIONS:
                    thread.lines[section] = [line for line in thread.lines[section] if term not in line.casefold()]
        if note.stored:
            stored.append(note)
    return stored


def build_groups(threads: list[ThreadMemory]) -> list[Group]:
    """One group of user-level entries, one per project key (entries without one: per cwd)."""
    by_scope: dict[tuple[str, str], list[ThreadMemory]] = {}
    for thread in threads:
        key = (USER_SCOPE, "") if thread.scope == USER_SCOPE else (PROJECT_SCOPE, thread.project_key or thread.cwd)
        by_scope.setdefault(key, []).append(thread)
    groups = []
    for (scope, scope_key), members in by_scope.items():
        # Newest first; thread id breaks ties so the order never depends on the input order.
        members.sort(key=lambda thread: (-thread.sort_time.timestamp(), thread.thread_id))
        tasks = [Task(number=index, thread=thread) for index, thread in enumerate(members, start=1)]
        sections: dict[str, list[tuple[str, list[int]]]] = {}
        for section in SUBSECTIONS:
            merged: dict[str, tuple[str, list[int]]] = {}
            for task in tasks:
                for line in task.thread.lines[section]:
                    key = line_key(split_entry(line)[0])
                    if key not in merged:
                        merged[key] = (line, [])
                    if task.number not in merged[key][1]:
                        merged[key][1].append(task.number)
            sections[section] = list(merged.values())
        keep_newest_command_verdicts(sections)
        cwd = ", ".join(dedupe(thread.cwd for thread in members))
        project_key = "" if scope == USER_SCOPE or scope_key == UNKNOWN_CWD else scope_key
        groups.append(Group(cwd=cwd, tasks=tasks, sections=sections, scope=scope, project_key=project_key))
    # What applies everywhere first; then projects, most recent first.
    groups.sort(key=lambda group: (not group.is_user_level, -group.latest.timestamp(), group.label))
    return groups


def keep_newest_command_verdicts(sections: dict[str, list[tuple[str, list[int]]]]) -> None:
    """A command that worked in one session and failed with no later success in a newer one (or
    the other way round) keeps only its newest verdict: "`make deploy-staging` succeeded" from
    last month is not advice once the newest session found it broken. Task 1 is the newest."""
    newest: dict[str, dict[str, int]] = {}
    for section, pattern in ((KNOWLEDGE, VERIFIED_COMMAND_LINE), (FAILURES, UNRESOLVED_COMMAND_LINE)):
        for line, numbers in sections[section]:
            match = pattern.match(line)
            if match:
                verdicts = newest.setdefault(match.group("command"), {})
                verdicts[section] = min([*numbers, *([verdicts[section]] if section in verdicts else [])])
    outdated = {
        (command, KNOWLEDGE if verdicts[FAILURES] < verdicts[KNOWLEDGE] else FAILURES)
        for command, verdicts in newest.items()
        if len(verdicts) == 2
    }
    for section, pattern in ((KNOWLEDGE, VERIFIED_COMMAND_LINE), (FAILURES, UNRESOLVED_COMMAND_LINE)):
        sections[section] = [
            (line, numbers)
            for line, numbers in sections[section]
            if not ((match := pattern.match(line)) and (match.group("command"), section) in outdated)
        ]


def line_key(line: str) -> str:
    """What two wordings of one line share: case, outer quotes and spacing folded."""
    return " ".join(line.casefold().strip(" \t\"'`.").split())


def project_name(cwd: str) -> str:
    if not cwd or cwd == UNKNOWN_CWD:
        return ""
    return cwd.rstrip("/").replace("\\", "/").rsplit("/", 1)[-1]
