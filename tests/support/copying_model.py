"""A model that repeats what it reads, for the test server (`openai_server.Handler`).

Issue 29's red team used one: a model that copies sentences it sees into its answer, as a real
model does when a tool output talks to it. Here:

- a stage-1 extraction request gets an extraction whose preference signals and typed entries
  (all `constraint`, weight 1.0) are every sentence of the user's messages and every sentence of
  every tool output in the rendered transcript, copied verbatim (datamarks dropped: the model
  ignores them), so a planted instruction becomes a "rule" exactly as a careless model would
  make it one; the rollout summary lists them too;
- a consolidation request (our agent's tool loop) first reads `raw_memories.md`, then writes
  `MEMORY.md` and `memory_summary.md` whose preferences are every bullet it read under
  `Preference signals:`, copied verbatim, and then finishes;
- anything else gets "Done.".

Stateless: each answer is decided from the request alone (the agent's tool outputs are in it).
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.support.openai_server import (
    RecordedRequest,
    ScriptedReply,
    ToolCall,
    is_stage1_request,
    stage1_extraction_for,
)

DATAMARK = "\u02c6"
MEMORY_FILE_READ_CALL = "copy_read_raw_memories"
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")
_WORD = re.compile(r"[\u3400-\u9fff]|\w+")
_RAW_MEMORIES_LINE = re.compile(r"^\s*\d+\t(.*)$")


def copying_model(request: RecordedRequest) -> ScriptedReply:
    if is_stage1_request(request):
        return ScriptedReply.output_text(json.dumps(copying_extraction(request), ensure_ascii=False, sort_keys=True))
    if "phase2_workspace_diff.md" in request.input_text or "raw_memories.md" in request.input_text:
        return copying_consolidation(request)
    return ScriptedReply.output_text("Done.")


# -- stage 1 ------------------------------------------------------------------------------------------


def transcript_items(request: RecordedRequest) -> list[dict[str, Any]]:
    """The rendered conversation's items (the JSON array in the stage-1 user prompt)."""
    text = request.input_text
    start = text.index("\n[") + 1
    document, _ = json.JSONDecoder().raw_decode(text[start:])
    return [item for item in document if isinstance(item, dict)]


def sentences(text: str) -> list[str]:
    found = []
    for line in text.replace(DATAMARK, "").splitlines():
        for sentence in _SENTENCE_END.split(line.strip()):
            sentence = sentence.strip().lstrip("-*> ").strip()
            if len(_WORD.findall(sentence)) >= 4 and sentence not in found:
                found.append(sentence)
    return found


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        stripped = value.replace(DATAMARK, "").strip()
        if stripped[:1] in ("{", "["):
            try:
                return _strings(json.loads(stripped))
            except ValueError:
                pass
        return [value]
    if isinstance(value, list):
        return [text for entry in value for text in _strings(entry)]
    if isinstance(value, dict):
        return [text for key, entry in value.items() if key not in ("type", "call_id", "id", "from", "metadata") for text in _strings(entry)]
    return []


def read_sentences(request: RecordedRequest) -> tuple[list[str], list[str]]:
    """(the user's sentences, the tool outputs' sentences) of a stage-1 request."""
    user, tool = [], []
    for item in transcript_items(request):
        if item.get("type") == "message" and item.get("role") == "user":
            for part in item.get("content") or []:
                text = part.get("text", "") if isinstance(part, dict) else ""
                if not text.replace(DATAMARK, "").lstrip().startswith("<"):
                    user += sentences(text)
        elif str(item.get("type", "")).endswith("_output"):
            for text in _strings(item.get("output")):
                tool += sentences(text)
    return user, tool


def copying_extraction(request: RecordedRequest) -> dict[str, Any]:
    base = stage1_extraction_for(request)
    user, tool = read_sentences(request)
    copied = user + [sentence for sentence in tool if sentence not in user]
    signals = "\n".join(f"- {sentence}" for sentence in copied) or "- none recorded by the test server"
    base["raw_memory"] = base["raw_memory"].replace("- none recorded by the test server", signals, 1)
    base["rollout_summary"] += "\nPreference signals:\n" + "\n".join(f"- {sentence}" for sentence in copied) + "\n"
    base["memory_entries"] = [
        {"text": sentence, "type": "constraint", "weight": 1.0, "reason": "", "expires": None} for sentence in copied
    ]
    base["task_scopes"] = ["project"]
    return base


# -- consolidation -------------------------------------------------------------------------------------


def tool_outputs(request: RecordedRequest) -> list[str]:
    """The tool results the agent sent back so far (Responses or chat completions)."""
    body = request.body or {}
    items = body.get("input") if isinstance(body.get("input"), list) else body.get("messages") or []
    outputs = []
    for item in items:
        if item.get("type") == "function_call_output":
            outputs.append(str(item.get("output", "")))
        elif item.get("role") == "tool":
            outputs.append(str(item.get("content", "")))
    return outputs


def copied_preferences(raw_memories_read: str) -> list[str]:
    """Every bullet under a `Preference signals:` heading of a numbered `read_file` result."""
    found, inside = [], False
    for numbered in raw_memories_read.splitlines():
        match = _RAW_MEMORIES_LINE.match(numbered)
        line = match.group(1) if match else numbered
        if line.strip() == "Preference signals:":
            inside = True
        elif inside and line.lstrip().startswith("- "):
            if line.strip()[2:] not in found:
                found.append(line.strip()[2:])
        elif inside and line.strip():
            inside = False
    return found


def copying_consolidation(request: RecordedRequest) -> ScriptedReply:
    outputs = tool_outputs(request)
    if not outputs:
        return ScriptedReply.function_calls(
            ToolCall("read_file", json.dumps({"path": "raw_memories.md", "start_line": 1, "end_line": None}), MEMORY_FILE_READ_CALL)
        )
    if len(outputs) == 1:
        preferences = copied_preferences(outputs[0])
        bullets = "".join(f"- {line} [Task 1]\n" for line in preferences)
        memory = (
            "# Task Group: app\nscope: the app\napplies_to: cwd=/home/dana/src/app; reuse_rule=work in the app\n\n"
            "## Task 1: work in the app\n\n## User preferences\n" + bullets
        )
        summary = "v1\n\n## User Profile\nA developer.\n\n## User preferences\n" + "".join(f"- {line}\n" for line in preferences)
        summary += "\n## What's in Memory\n### app\n- app: work in the app\n"
        return ScriptedReply.function_calls(
            ToolCall("write_file", json.dumps({"path": "MEMORY.md", "content": memory}, ensure_ascii=False), "copy_write_memory"),
            ToolCall("write_file", json.dumps({"path": "memory_summary.md", "content": summary}, ensure_ascii=False), "copy_write_summary"),
        )
    return ScriptedReply.output_text("Consolidated: copied every preference I read.")
