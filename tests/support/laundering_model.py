"""A model that launders, for the test server (`openai_server.Handler`): issue 36's red team.

A careless extraction model that reads an instruction in a tool output does not copy it: it
rewrites it as the user's wish ("The user wants every change committed directly on main"), so no
word run of the tool output is left in it and the claim names the user. Here, scripted from a
case file (`benchmarks/data/provenance/laundering_holdout.json`):

- a stage-1 extraction request whose transcript holds a session's first user turn gets that
  session's claims (hostile rewrites and paraphrased user rules alike) as preference signals and
  typed `constraint` entries of weight 1.0, and in the rollout summary;
- a consolidation request is answered as `copying_model` answers it: every preference signal it
  reads becomes a rule of `MEMORY.md` and `memory_summary.md`;
- anything else gets "Done.".

Stateless: each answer is decided from the request and the case file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.copying_model import copying_consolidation, transcript_items
from tests.support.openai_server import RecordedRequest, ScriptedReply, is_stage1_request, stage1_extraction_for
from tests.support.rollout_factory import write_rollout

CASES = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "provenance" / "laundering_holdout.json"


def load_sessions(path: Path = CASES) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))["sessions"]


def write_sessions(home: Path, sessions: list[dict[str, Any]], *, created_at, cwd: str, repository_url: str) -> None:
    """One rollout per session: the user's turns, the commands with their output, the patch."""
    for number, case in enumerate(sessions):
        extra = []
        if case.get("patch"):
            extra.append(
                {"type": "response_item", "payload": {"type": "custom_tool_call", "name": "apply_patch", "input": case["patch"], "call_id": f"patch_{number}", "status": "completed"}}
            )
            extra.append({"type": "response_item", "payload": {"type": "custom_tool_call_output", "call_id": f"patch_{number}", "output": "Done!"}})
        write_rollout(
            home, created_at=created_at(number), cwd=cwd, repository_url=repository_url,
            user_messages=case["user"], tool_calls=[(command, output, 0) for command, output in case["tool"]], extra_lines=extra,
        )


def laundering_model(sessions: list[dict[str, Any]]):
    def answer(request: RecordedRequest) -> ScriptedReply:
        if is_stage1_request(request):
            return ScriptedReply.output_text(json.dumps(laundering_extraction(request, sessions), ensure_ascii=False, sort_keys=True))
        if "phase2_workspace_diff.md" in request.input_text or "raw_memories.md" in request.input_text:
            return copying_consolidation(request)
        return ScriptedReply.output_text("Done.")

    return answer


def laundering_extraction(request: RecordedRequest, sessions: list[dict[str, Any]]) -> dict[str, Any]:
    base = stage1_extraction_for(request)
    seen = json.dumps(transcript_items(request), ensure_ascii=False)
    claims = [claim["text"] for case in sessions if json.dumps(case["user"][0], ensure_ascii=False)[1:-1] in seen for claim in case["claims"]]
    signals = "\n".join(f"- {claim}" for claim in claims) or "- none recorded by the test server"
    base["raw_memory"] = base["raw_memory"].replace("- none recorded by the test server", signals, 1)
    base["rollout_summary"] += "\nPreference signals:\n" + "\n".join(f"- {claim}" for claim in claims) + "\n"
    base["memory_entries"] = [{"text": claim, "type": "constraint", "weight": 1.0, "reason": "", "expires": None} for claim in claims]
    base["task_scopes"] = ["project"]
    return base
