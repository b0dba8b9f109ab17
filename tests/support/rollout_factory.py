"""Write realistic Codex rollout files (spec section 10) for tests and benchmarks.

`write_rollout` lays a session out the way Codex does: `session_meta`, then per user turn a
`turn_context`, the user message (the first turn also carries the injected
`<environment_context>` message and a developer message), the `user_message` event, a reasoning
item, the shell calls with their outputs, the assistant answer as response item and
`agent_message` event, and a `token_count` event. Line timestamps advance from `created_at`.
"""

from __future__ import annotations

import json
import os
import random
import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

DEFAULT_CWD = "/home/dana/src/app"

ToolCall = tuple[str, str] | tuple[str, str, int]  # (command, output[, exit_code])


DEFAULT_REPOSITORY_URL = "git@github.com:acme/app.git"
NO_REPOSITORY = ""  # as `repository_url`: a session outside any repository (no `git` in session_meta)


def uuid7_at(moment: datetime, *, rng: random.Random | None = None) -> str:
    """A UUIDv7 whose embedded millisecond timestamp is `moment` (naive = UTC)."""
    rng = rng or random.Random()
    millis = int(_utc(moment).timestamp() * 1000)
    rand_a = rng.getrandbits(12)
    rand_b = rng.getrandbits(62)
    value = (millis & ((1 << 48) - 1)) << 80 | 0x7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b
    return str(uuid.UUID(int=value))


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _stamp(moment: datetime) -> str:
    return _utc(moment).strftime("%Y-%m-%dT%H:%M:%S.") + f"{_utc(moment).microsecond // 1000:03d}Z"


def rollout_file_name(created_at: datetime, thread_id: str) -> str:
    local = _utc(created_at).astimezone()  # Codex names files in local time (spec 10.1)
    return f"rollout-{local.strftime('%Y-%m-%dT%H-%M-%S')}-{thread_id}.jsonl"


def rollout_path_for(codex_home: Path, created_at: datetime, thread_id: str, *, archived: bool = False) -> Path:
    name = rollout_file_name(created_at, thread_id)
    if archived:
        return codex_home / "archived_sessions" / name
    local = _utc(created_at).astimezone()
    return codex_home / "sessions" / f"{local:%Y}" / f"{local:%m}" / f"{local:%d}" / name


class _Clock:
    def __init__(self, start: datetime, rng: random.Random) -> None:
        self.now = _utc(start)
        self.rng = rng

    def tick(self, low_ms: int = 200, high_ms: int = 6000) -> str:
        self.now += timedelta(milliseconds=self.rng.randint(low_ms, high_ms))
        return _stamp(self.now)


def _line(timestamp: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": timestamp, "type": kind, "payload": payload}


def _user_item(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _assistant_item(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
        "phase": "final_answer",
    }


def environment_context(cwd: str) -> str:
    return (
        "<environment_context>\n"
        f"  <cwd>{cwd}</cwd>\n"
        "  <approval_policy>on-request</approval_policy>\n"
        "  <sandbox_mode>workspace-write</sandbox_mode>\n"
        "  <network_access>restricted</network_access>\n"
        "  <shell>zsh</shell>\n"
        "</environment_context>"
    )


def shell_call_lines(
    clock: _Clock, call_id: str, command: str, output: str, exit_code: int, cwd: str
) -> list[dict[str, Any]]:
    arguments = json.dumps({"command": ["bash", "-lc", command], "workdir": cwd, "timeout_ms": 120000})
    result = json.dumps(
        {"output": output, "metadata": {"exit_code": exit_code, "duration_seconds": round(clock.rng.uniform(0.05, 9), 1)}}
    )
    return [
        _line(clock.tick(), "response_item", {"type": "function_call", "name": "shell", "arguments": arguments, "call_id": call_id}),
        _line(clock.tick(), "response_item", {"type": "function_call_output", "call_id": call_id, "output": result}),
    ]


def rollout_lines(
    *,
    thread_id: str,
    created_at: datetime,
    cwd: str = DEFAULT_CWD,
    source: str | dict[str, Any] | None = "cli",
    user_messages: Sequence[str],
    tool_calls: Sequence[ToolCall] = (),
    assistant_messages: Sequence[str] | None = None,
    extra_lines: Iterable[dict[str, Any]] = (),
    web_search: bool = False,
    rng: random.Random | None = None,
    repository_url: str = DEFAULT_REPOSITORY_URL,
    tool_calls_per_turn: Sequence[Sequence[ToolCall]] | None = None,
) -> list[dict[str, Any]]:
    """The JSON objects of one rollout, in file order (see the module docstring).

    `tool_calls` are spread evenly over the turns; `tool_calls_per_turn` (one list per user
    message) places each call in its own turn instead."""
    rng = rng or random.Random(thread_id)
    clock = _Clock(created_at, rng)
    meta: dict[str, Any] = {
        "id": thread_id,
        "timestamp": _stamp(created_at),
        "cwd": cwd,
        "originator": "codex_vscode" if source == "vscode" else "codex_cli_rs",
        "cli_version": "0.121.0",
        "model_provider": "openai",
        "base_instructions": {"text": "You are Codex, a coding agent."},
    }
    if repository_url != NO_REPOSITORY:
        meta["git"] = {"commit_hash": f"{rng.getrandbits(160):040x}", "branch": "main", "repository_url": repository_url}
    if source is not None:
        meta["source"] = source
    lines = [_line(_stamp(created_at), "session_meta", meta)]
    turns = max(1, len(user_messages))
    per_turn = -(-len(tool_calls) // turns) if tool_calls else 0
    answers = list(assistant_messages or [])
    call_number = 0
    for turn, text in enumerate(user_messages):
        turn_id = uuid7_at(clock.now, rng=rng)
        lines.append(
            _line(
                clock.tick(),
                "turn_context",
                {
                    "turn_id": turn_id,
                    "cwd": cwd,
                    "approval_policy": "on-request",
                    "sandbox_policy": {"type": "workspace-write", "writable_roots": [], "network_access": False},
                    "model": "gpt-5.4",
                    "effort": "medium",
                    "summary": "auto",
                },
            )
        )
        if turn == 0:
            lines.append(
                _line(
                    clock.tick(),
                    "response_item",
                    {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions instructions>Sandbox: workspace-write.</permissions instructions>"}]},
                )
            )
            lines.append(_line(clock.tick(), "response_item", _user_item(environment_context(cwd))))
        lines.append(_line(clock.tick(), "event_msg", {"type": "task_started", "turn_id": turn_id, "model_context_window": 272000}))
        lines.append(_line(clock.tick(), "response_item", _user_item(text)))
        lines.append(_line(clock.tick(), "event_msg", {"type": "user_message", "message": text, "images": []}))
        lines.append(
            _line(
                clock.tick(),
                "response_item",
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Planning the change**"}], "content": None, "encrypted_content": "gAAAAAB" + f"{rng.getrandbits(256):064x}"},
            )
        )
        if web_search and turn == 0:
            lines.append(
                _line(clock.tick(), "response_item", {"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": text[:60]}})
            )
        if tool_calls_per_turn is not None:
            calls = list(tool_calls_per_turn[turn]) if turn < len(tool_calls_per_turn) else []
        else:
            calls = list(tool_calls[turn * per_turn : (turn + 1) * per_turn])
        for call in calls:
            command, output = call[0], call[1]
            exit_code = call[2] if len(call) > 2 else 0
            call_number += 1
            lines.extend(shell_call_lines(clock, f"call_{thread_id[-6:]}_{call_number}", command, output, exit_code, cwd))
        answer = answers[turn] if turn < len(answers) else "Done."
        lines.append(_line(clock.tick(), "response_item", _assistant_item(answer)))
        lines.append(_line(clock.tick(), "event_msg", {"type": "agent_message", "message": answer}))
        lines.append(
            _line(
                clock.tick(),
                "event_msg",
                {
                    "type": "token_count",
                    "info": {"total_token_usage": {"input_tokens": 9000 * (turn + 1), "cached_input_tokens": 8000 * turn, "output_tokens": 300, "reasoning_output_tokens": 128, "total_tokens": 9300 * (turn + 1)}, "model_context_window": 272000},
                    "rate_limits": None,
                },
            )
        )
        lines.append(_line(clock.tick(), "event_msg", {"type": "task_complete", "turn_id": turn_id, "last_agent_message": answer}))
    for extra in extra_lines:
        if "timestamp" not in extra and "type" in extra and "payload" in extra:
            extra = {"timestamp": clock.tick(), **extra}
        lines.append(extra)
    return lines


def write_rollout(
    codex_home: Path,
    *,
    thread_id: str | None = None,
    created_at: datetime,
    cwd: str = DEFAULT_CWD,
    source: str | dict[str, Any] | None = "cli",
    user_messages: Sequence[str],
    tool_calls: Sequence[ToolCall] = (),
    assistant_messages: Sequence[str] | None = None,
    extra_lines: Iterable[dict[str, Any]] = (),
    archived: bool = False,
    web_search: bool = False,
    repository_url: str | None = None,
    tool_calls_per_turn: Sequence[Sequence[ToolCall]] | None = None,
) -> Path:
    """Write one rollout under `codex_home` (sessions/YYYY/MM/DD/ or archived_sessions/)."""
    thread_id = thread_id or uuid7_at(created_at)
    path = rollout_path_for(codex_home, created_at, thread_id, archived=archived)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = rollout_lines(
        thread_id=thread_id,
        created_at=created_at,
        cwd=cwd,
        source=source,
        user_messages=user_messages,
        tool_calls=tool_calls,
        assistant_messages=assistant_messages,
        extra_lines=extra_lines,
        web_search=web_search,
        repository_url=DEFAULT_REPOSITORY_URL if repository_url is None else repository_url,
        tool_calls_per_turn=tool_calls_per_turn,
    )
    with path.open("w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
    return path


_LOG_WORDS = (
    "PASS FAIL src/webhook/sender.rs tests/test_api.py::test_retry compiling warning unused "
    "import resolved 200 OK GET /v1/items latency_ms=12 retry=3 cache hit miss ünïcode 漢字 ✓"
).split()


def write_large_rollout(path: Path, target_bytes: int, *, seed: int = 7, secret: str | None = None) -> int:
    """Write a long but realistic session of about `target_bytes` (streaming); returns bytes.

    Many turns of shell calls with log-like outputs of 1-60 KB, so the file is dominated by tool
    output as real large rollouts are. `secret`, when given, is planted in the last tool output.
    """
    rng = random.Random(seed)
    created_at = datetime(2026, 11, 3, 9, 0, 0, tzinfo=UTC)
    thread_id = uuid7_at(created_at, rng=rng)
    clock = _Clock(created_at, rng)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    turn = 0
    with path.open("w", encoding="utf-8") as handle:

        def emit(obj: dict[str, Any]) -> None:
            nonlocal written
            text = json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"
            handle.write(text)
            written += len(text.encode("utf-8"))

        for obj in rollout_lines(
            thread_id=thread_id,
            created_at=created_at,
            user_messages=["Run the full test suite and fix whatever fails; always use pnpm, never npm."],
            rng=rng,
        ):
            emit(obj)
        while written < target_bytes:
            turn += 1
            emit(_line(clock.tick(), "response_item", _user_item(f"Step {turn}: keep going with the next failing test.")))
            for _ in range(rng.randint(1, 4)):
                size = rng.randint(1_000, 60_000)
                words: list[str] = []
                length = 0
                while length < size:
                    word = rng.choice(_LOG_WORDS)
                    words.append(word)
                    length += len(word) + 1
                output = " ".join(words)
                last = written + size * 2 >= target_bytes
                if last and secret:
                    output += f"\nexport API_TOKEN={secret}\n"
                for obj in shell_call_lines(clock, f"call_{turn}_{length}", "pnpm test --reporter=dot", output, rng.choice((0, 0, 0, 1)), DEFAULT_CWD):
                    emit(obj)
            emit(_line(clock.tick(), "response_item", _assistant_item(f"Fixed step {turn}.")))
            emit(_line(clock.tick(), "event_msg", {"type": "agent_message", "message": f"Fixed step {turn}."}))
        handle.flush()
        os.fsync(handle.fileno())
    return written
