"""`codex-memories recall`: what the command does once its options are parsed, for both ways in.

Contract:
- `run_recall(request)` searches the memory folder (`read.recall.recall_explained`), prints the
  results (file:lines [scope], then the text; or `{"results": [...]}` with `--json`) and returns
  the exit code: 0 with or without results, 2 for a bad request (blank query, limit < 1), 1 when
  the recall encoder is unavailable (a broken install is not "no memories").
- Saying why something is not shown (issue 30): when nothing is shown but other projects' lines
  match the question better than anything of the session's project or user-level ones, one line
  on stderr says so and names `--all-projects`; `--why` prints, on stderr, the session's project,
  the gate's evidence and decision, and those other projects' lines. Expired and forgotten
  memories are gone from the folder (phase 2 prunes them, `forget` removes them), so recall
  cannot name them; the state DB's audit holds them.
- Called by the typer command (`memory.recall`) and by the fast path (`launcher`), which skips
  typer and our settings tree for the common case; imports only the standard library at import
  time.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from codex_memories_cli.errors import EXIT_BAD_SETTING, EXIT_USER_ERROR, say_error


@dataclass(frozen=True)
class RecallRequest:
    root: Path
    query: str
    cwd: str
    limit: int = 5
    as_json: bool = False
    why: bool = False
    all_projects: bool = False


def run_recall(request: RecallRequest) -> int:
    """Search, print, and return the exit code (module docstring)."""
    from codex_memories.read.embedding import EmbedderUnavailable
    from codex_memories.read.recall import Recalled, RecallError, checked_request, recall_explained, results_as_json

    try:
        checked_request(request.query, request.limit)  # before the folder: a bad request is exit 2 even with none
        if not request.root.is_dir():
            say_error(f"no memory folder at {request.root}: nothing to recall")
            explained = Recalled(shown=[])
        else:
            explained = recall_explained(
                request.root, request.query, cwd=request.cwd, limit=request.limit, include_other_projects=request.all_projects
            )
    except RecallError as error:
        say_error(str(error))
        return EXIT_BAD_SETTING
    except EmbedderUnavailable as error:
        say_error(f"recall is unavailable: {error}")
        return EXIT_USER_ERROR
    results = [scored.as_result() for scored in explained.shown]
    if request.as_json:
        print(json.dumps(results_as_json(results), ensure_ascii=False))
    else:
        for result in results:
            scope = f" [{result.scope}]" if result.scope else ""
            print(f"{result.path}:{result.line_start}-{result.line_end}{scope}\n{result.text}\n")
    if request.why:
        for line in reasons(explained, request):
            print(line, file=sys.stderr)
    elif not results and explained.other_projects:
        say_error(
            f"nothing for {request.cwd}; {len(explained.other_projects)} line(s) of other projects match better "
            "and are not shown here (--all-projects shows them, --why says more)"
        )
    return 0


def reasons(explained: object, request: RecallRequest) -> list[str]:
    """`--why`: the session's project, the gate's evidence and decision, the other projects' lines."""
    from codex_memories.read.recall import Recalled
    from codex_memories.scopes import project_key_for_directory

    assert isinstance(explained, Recalled)
    lines = [f"why: asked from {request.cwd} (project {project_key_for_directory(request.cwd) or 'unknown'})"]
    if explained.evidence is None:
        lines.append("why: no memory line of this project or user-level to search")
    else:
        evidence = explained.evidence
        lines.append(
            f"why: best match cosine {evidence.contextual:.2f}, stands out by {evidence.contextual_gap:.2f}, "
            f"query words covered {evidence.coverage:.2f}, another project ahead by {-evidence.other_margin:.2f}"
        )
        if explained.probability is None:
            lines.append("why: a line holds every word of the question: shown without asking the gate")
        else:
            verdict = "answers" if explained.probability >= explained.threshold else "stays silent"
            lines.append(f"why: the gate {verdict}: P(answer) {explained.probability:.2f} against threshold {explained.threshold:.2f}")
    for scored in explained.other_projects:
        chunk = scored.chunk
        first = chunk.text.strip().split("\n")[0][:100]
        lines.append(f"why: not shown, another project's ({chunk.scope}): {chunk.path}:{chunk.line_start}-{chunk.line_end} {first}")
    if request.all_projects:
        lines.append("why: --all-projects: other projects' lines are shown after this project's")
    return lines
