"""A small, real OpenAI-compatible HTTP server for tests and benchmarks (stdlib only).

It listens on 127.0.0.1 on a free port, in a background thread, one thread per request, and serves:

- `POST /v1/responses`: a JSON `Response`, or with `"stream": true` a Server-Sent Events stream in
  the Responses streaming format (`response.created`, `response.in_progress`,
  `response.output_item.added`, `response.content_part.added`, `response.output_text.delta`,
  `response.output_text.done`, `response.content_part.done`,
  `response.function_call_arguments.delta/.done`, `response.output_item.done`,
  `response.completed` with usage), as the official client and the Codex CLI expect;
- `POST /v1/chat/completions` (non-streaming);
- `GET /v1/models`.

Every request is recorded (`server.requests`) before it is answered; one whose client hung up
before its answer was ready (a killed run) is not answered and is listed in `server.hung_up`. The answer comes from a
scripted handler `Callable[[RecordedRequest], ScriptedReply]`: output text, function calls (for
tool-calling loops), an HTTP error status, a raw body, and an optional delay. The default handler
answers stage-1 extraction requests with a valid extraction derived from the request text, and
anything else with a short plain answer.

    with running_openai_server() as server:
        client = OpenAI(base_url=server.base_url, api_key="test")
        ...
        assert server.requests[0].body["model"] == "test-model"
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import itertools
import json
import re
import select
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_MODEL = "test-model"
STAGE1_SCHEMA_NAME = "stage1_memory"


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received. Header names are lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None

    @property
    def endpoint(self) -> str:
        """`responses`, `chat.completions`, `models` or the raw path."""
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.endswith("/responses"):
            return "responses"
        if path.endswith("/chat/completions"):
            return "chat.completions"
        if path.endswith("/models"):
            return "models"
        return path

    @property
    def model(self) -> str:
        if self.body and isinstance(self.body.get("model"), str):
            return self.body["model"]
        return DEFAULT_MODEL

    @property
    def is_streaming(self) -> bool:
        return bool(self.body and self.body.get("stream"))

    @property
    def instructions(self) -> str:
        """System text: Responses `instructions`, or chat `system`/`developer` messages."""
        if not self.body:
            return ""
        if self.endpoint == "responses":
            value = self.body.get("instructions")
            return value if isinstance(value, str) else ""
        messages = self.body.get("messages") or []
        return "\n".join(_content_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))

    @property
    def input_text(self) -> str:
        """All non-system input text, in order (user messages, tool outputs)."""
        if not self.body:
            return ""
        if self.endpoint == "responses":
            value = self.body.get("input")
            if isinstance(value, str):
                return value
            texts = []
            for item in value or []:
                if item.get("type") in ("function_call_output", "custom_tool_call_output"):
                    texts.append(_content_text(item.get("output")))
                elif "content" in item and item.get("role") not in ("system", "developer"):
                    texts.append(_content_text(item.get("content")))
            return "\n".join(texts)
        messages = self.body.get("messages") or []
        return "\n".join(_content_text(m.get("content")) for m in messages if m.get("role") not in ("system", "developer"))

    @property
    def json_schema_name(self) -> str | None:
        """The name of the requested structured-output schema, if any."""
        if not self.body:
            return None
        if self.endpoint == "responses":
            text_format = (self.body.get("text") or {}).get("format") or {}
            return text_format.get("name") if text_format.get("type") == "json_schema" else None
        response_format = self.body.get("response_format") or {}
        if response_format.get("type") == "json_schema":
            return (response_format.get("json_schema") or {}).get("name")
        return None


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str
    call_id: str
    # Responses API only: the tool namespace (Codex exposes MCP servers as `mcp__<server>`).
    namespace: str | None = None


@dataclass(frozen=True)
class ScriptedReply:
    """What the server answers. Build with the class methods; `delay_seconds` applies to any kind."""

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    status: int = 200
    error_message: str = ""
    raw_body: str | None = None
    delay_seconds: float = 0.0
    usage: dict[str, int] | None = None
    # Extra response headers for this reply (e.g. `codex_rate_limit_headers(...)`).
    headers: tuple[tuple[str, str], ...] = ()

    def with_headers(self, headers: dict[str, str]) -> ScriptedReply:
        return dataclasses.replace(self, headers=(*self.headers, *headers.items()))

    @classmethod
    def output_text(cls, text: str, *, delay_seconds: float = 0.0) -> ScriptedReply:
        return cls(text=text, delay_seconds=delay_seconds)

    @classmethod
    def function_calls(cls, *calls: ToolCall, text: str | None = None, delay_seconds: float = 0.0) -> ScriptedReply:
        return cls(text=text, tool_calls=tuple(calls), delay_seconds=delay_seconds)

    @classmethod
    def http_error(cls, status: int, message: str = "scripted error", *, delay_seconds: float = 0.0) -> ScriptedReply:
        return cls(status=status, error_message=message, delay_seconds=delay_seconds)

    @classmethod
    def raw(cls, body: str, *, status: int = 200) -> ScriptedReply:
        """A body sent as-is with `Content-Type: application/json` (for malformed-server tests)."""
        return cls(raw_body=body, status=status)


Handler = Callable[[RecordedRequest], ScriptedReply]


def default_handler(request: RecordedRequest) -> ScriptedReply:
    """Stage-1 requests get a valid extraction built from the prompt; anything else a short answer."""
    if is_stage1_request(request):
        return ScriptedReply.output_text(json.dumps(stage1_extraction_for(request), sort_keys=True))
    return ScriptedReply.output_text("Done.")


def is_stage1_request(request: RecordedRequest) -> bool:
    return request.json_schema_name == STAGE1_SCHEMA_NAME or "rollout_context:" in request.input_text


_CONTEXT_LINE = re.compile(r"^\s*-?\s*(rollout_path|rollout_cwd):\s*(.*?)\s*$", re.MULTILINE)


def stage1_extraction_for(request: RecordedRequest) -> dict[str, str]:
    """A deterministic, well-formed extraction: front matter, one task block, a summary and a slug."""
    text = request.input_text
    context = {key: value for key, value in _CONTEXT_LINE.findall(text)}
    cwd = context.get("rollout_cwd") or "unknown"
    rollout_path = context.get("rollout_path") or "unknown"
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    project = cwd.rstrip("/").rsplit("/", 1)[-1] or "unknown"
    slug = re.sub(r"[^a-z0-9_-]+", "-", f"test-server-{project}-{digest}".lower()).strip("-")[:80]
    raw_memory = "\n".join(
        [
            "---",
            f"description: Scripted memory from the test server for {project} ({digest})",
            f"task: work in {project}",
            f"task_group: {project}",
            "task_outcome: success",
            f"cwd: {cwd}",
            f"keywords: test-server, {project}, {digest}",
            "---",
            "",
            f"### Task 1: work in {project}",
            f"task: work in {project}",
            f"task_group: {project}",
            "task_outcome: success",
            "",
            "Preference signals:",
            "- none recorded by the test server",
            "",
            "Reusable knowledge:",
            f"- the rollout at {rollout_path} was processed (input hash {digest})",
            "",
            "Failures and how to do differently:",
            "- none recorded by the test server",
            "",
            "References:",
            f"- {rollout_path}",
            "",
        ]
    )
    summary = "\n".join(
        [
            f"# Test-server summary of work in {project}",
            "",
            f"Rollout context: {cwd}",
            "",
            f"## Task 1: work in {project}",
            "Outcome: success",
            "",
            "Reusable knowledge:",
            f"- input hash {digest}",
            "",
            "References:",
            f"[1] {rollout_path}",
            "",
        ]
    )
    return {"rollout_summary": summary, "rollout_slug": slug, "raw_memory": raw_memory}


def codex_rate_limit_headers(
    primary_used_percent: float,
    secondary_used_percent: float | None = None,
    *,
    primary_window_minutes: int = 300,
    secondary_window_minutes: int = 10080,
    reset_after_seconds: int = 3600,
    now: float | None = None,
) -> dict[str, str]:
    """The headers Codex turns into a rollout `token_count.rate_limits` (codex-hooks.md)."""
    moment = int(now if now is not None else time.time())
    headers = {}
    for name, used, minutes in (
        ("primary", primary_used_percent, primary_window_minutes),
        ("secondary", secondary_used_percent, secondary_window_minutes),
    ):
        if used is None:
            continue
        headers |= {
            f"x-codex-{name}-used-percent": str(float(used)),
            f"x-codex-{name}-window-minutes": str(minutes),
            f"x-codex-{name}-reset-at": str(moment + reset_after_seconds),
            f"x-codex-{name}-reset-after-seconds": str(reset_after_seconds),
        }
    return headers


def openai_rate_limit_headers(
    *, limit_requests: int, remaining_requests: int, limit_tokens: int, remaining_tokens: int, reset: str = "6m0s"
) -> dict[str, str]:
    """The OpenAI API's `x-ratelimit-*` headers."""
    return {
        "x-ratelimit-limit-requests": str(limit_requests),
        "x-ratelimit-remaining-requests": str(remaining_requests),
        "x-ratelimit-limit-tokens": str(limit_tokens),
        "x-ratelimit-remaining-tokens": str(remaining_tokens),
        "x-ratelimit-reset-requests": reset,
        "x-ratelimit-reset-tokens": reset,
    }


class OpenAITestServer:
    """Owns the HTTP server and its thread. Use `running_openai_server()` rather than this directly."""

    def __init__(self, handler: Handler | None = None, latency_seconds: float = 0.0, stream_chunk_chars: int = 24) -> None:
        self.latency_seconds = latency_seconds
        self.stream_chunk_chars = max(1, stream_chunk_chars)
        self._handler: Handler = handler or default_handler
        # Headers sent with every answer (rate-limit headers for the guard tests).
        self.response_headers: dict[str, str] = {}
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._handler_errors: list[BaseException] = []
        self._hung_up: list[RecordedRequest] = []
        self._ids = itertools.count(1)
        self._httpd = _Server(("127.0.0.1", 0), _RequestHandler)
        self._httpd.owner = self
        # A short poll interval keeps `stop()` (which waits for one poll) fast in tests.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="openai-test-server", daemon=True
        )

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def handler_errors(self) -> list[BaseException]:
        with self._lock:
            return list(self._handler_errors)

    @property
    def hung_up(self) -> list[RecordedRequest]:
        """Requests whose client had closed the connection when their answer was ready: never
        answered (compare with `is`: two requests can be equal)."""
        with self._lock:
            return list(self._hung_up)

    def set_handler(self, handler: Handler | None) -> None:
        with self._lock:
            self._handler = handler or default_handler

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    def start(self) -> OpenAITestServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)

    def _record(self, request: RecordedRequest) -> Handler:
        with self._lock:
            self._requests.append(request)
            return self._handler

    def _record_hang_up(self, request: RecordedRequest) -> None:
        with self._lock:
            self._hung_up.append(request)

    def _record_handler_error(self, error: BaseException) -> None:
        with self._lock:
            self._handler_errors.append(error)

    def _next_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):06d}"


@contextmanager
def running_openai_server(handler: Handler | None = None, latency_seconds: float = 0.0) -> Iterator[OpenAITestServer]:
    server = OpenAITestServer(handler=handler, latency_seconds=latency_seconds).start()
    try:
        yield server
    finally:
        server.stop()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    owner: OpenAITestServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-answer (a killed run, an agent that timed out, Codex exiting
        # while its background agent streams) is normal here; anything else is still printed.
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


class _RequestHandler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY, as production HTTP servers set it: an answer goes out as two writes (headers,
    # then body), and with Nagle's algorithm the body waited for the client's delayed ACK of the
    # headers, which held 10-15 % of answers for 0.3-0.5 s (benchmarks/README.md, "Phase-1
    # efficiency"): a stall of the test server, not of the client under test.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        # Quiet by design: tests assert on `server.requests`, not on stderr noise.
        return

    def do_GET(self) -> None:
        request = RecordedRequest("GET", self.path, {key.lower(): value for key, value in self.headers.items()}, None)
        self.server.owner._record(request)
        if request.endpoint == "models":
            self._send_json(200, {"object": "list", "data": [{"id": DEFAULT_MODEL, "object": "model", "created": 0, "owned_by": "codex-memories-tests"}]})
            return
        self._send_error(404, f"no route for GET {self.path}")

    def do_POST(self) -> None:
        owner = self.server.owner
        try:
            body = self._read_json_body()
        except ValueError as error:
            owner._record(RecordedRequest("POST", self.path, {key.lower(): value for key, value in self.headers.items()}, None))
            self._send_error(400, f"request body is not JSON: {error}")
            return
        request = RecordedRequest("POST", self.path, {key.lower(): value for key, value in self.headers.items()}, body)
        handler = owner._record(request)
        if request.endpoint not in ("responses", "chat.completions"):
            self._send_error(404, f"no route for POST {self.path}")
            return
        try:
            reply = handler(request)
        except Exception as error:  # a broken test handler must surface as a 500, and be inspectable
            owner._record_handler_error(error)
            self._send_error(500, f"scripted handler raised {type(error).__name__}")
            return

        delay = owner.latency_seconds + reply.delay_seconds
        if delay > 0:
            time.sleep(delay)
        if self._client_hung_up():
            owner._record_hang_up(request)
            self.close_connection = True
            return
        self._extra_headers = {**owner.response_headers, **dict(reply.headers)}
        if reply.raw_body is not None:
            self._send_bytes(reply.status, reply.raw_body.encode("utf-8"), "application/json")
            return
        if reply.status >= 400:
            self._send_error(reply.status, reply.error_message or "scripted error")
            return
        if request.endpoint == "responses":
            response = _build_response(owner, request, reply)
            if request.is_streaming:
                self._send_response_stream(owner, response)
            else:
                self._send_json(reply.status, response)
            return
        if request.is_streaming:
            self._send_error(400, "the test server does not stream chat completions")
            return
        self._send_json(reply.status, _build_chat_completion(owner, request, reply))

    def _client_hung_up(self) -> bool:
        """The client closed its end (its process was killed): the socket reads as at its end."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True

    # -- reading ---------------------------------------------------------------------------------

    def _read_json_body(self) -> dict[str, Any]:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = self._read_chunked()
        else:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding", "").lower() == "gzip":
            raw = gzip.decompress(raw)
        if not raw:
            return {}
        payload = json.loads(raw.decode("utf-8"))
        if not isinstance(payload, dict):
            raise ValueError("expected a JSON object")
        return payload

    def _read_chunked(self) -> bytes:
        chunks = []
        while True:
            size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                self.rfile.readline()
                return b"".join(chunks)
            chunks.append(self.rfile.read(size))
            self.rfile.readline()

    # -- writing ---------------------------------------------------------------------------------

    def _send_extra_headers(self) -> None:
        for name, value in getattr(self, "_extra_headers", {}).items():
            self.send_header(name, value)

    def _send_bytes(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self._send_extra_headers()
        self.end_headers()
        self.wfile.write(payload)

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        self._send_bytes(status, json.dumps(payload).encode("utf-8"), "application/json")

    def _send_error(self, status: int, message: str) -> None:
        error_type = "server_error" if status >= 500 else "rate_limit_error" if status == 429 else "invalid_request_error"
        self._send_json(status, {"error": {"message": message, "type": error_type, "param": None, "code": f"scripted_{status}"}})

    def _send_response_stream(self, owner: OpenAITestServer, response: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        # No Content-Length: the stream ends when the connection closes.
        self.send_header("Connection", "close")
        self._send_extra_headers()
        self.end_headers()
        self.close_connection = True
        for event in _response_stream_events(response, owner.stream_chunk_chars):
            data = json.dumps(event)
            self.wfile.write(f"event: {event['type']}\ndata: {data}\n\n".encode("utf-8"))
            self.wfile.flush()


# -- payload builders ---------------------------------------------------------------------------


def _usage_numbers(request: RecordedRequest, reply: ScriptedReply, output_text: str) -> dict[str, int]:
    if reply.usage is not None:
        numbers = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_output_tokens": 0}
        numbers.update(reply.usage)
        return numbers
    # A rough, deterministic stand-in for a tokenizer: four characters per token.
    input_chars = len(request.instructions) + len(request.input_text)
    return {
        "input_tokens": input_chars // 4 + 1,
        "cached_input_tokens": 0,
        "output_tokens": len(output_text) // 4 + 1,
        "reasoning_output_tokens": 0,
    }


def _build_response(owner: OpenAITestServer, request: RecordedRequest, reply: ScriptedReply) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if reply.text is not None:
        output.append(
            {
                "id": owner._next_id("msg"),
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    for call in reply.tool_calls:
        item = {
            "id": owner._next_id("fc"),
            "type": "function_call",
            "status": "completed",
            "call_id": call.call_id,
            "name": call.name,
            "arguments": call.arguments,
        }
        if call.namespace is not None:
            item["namespace"] = call.namespace
        output.append(item)
    numbers = _usage_numbers(request, reply, (reply.text or "") + "".join(c.arguments for c in reply.tool_calls))
    body = request.body or {}
    return {
        "id": owner._next_id("resp"),
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "metadata": {},
        "model": request.model,
        "output": output,
        "parallel_tool_calls": True,
        "temperature": 1.0,
        "top_p": 1.0,
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools", []),
        "text": body.get("text", {"format": {"type": "text"}}),
        "usage": {
            "input_tokens": numbers["input_tokens"],
            "input_tokens_details": {"cached_tokens": numbers["cached_input_tokens"], "cache_write_tokens": 0},
            "output_tokens": numbers["output_tokens"],
            "output_tokens_details": {"reasoning_tokens": numbers["reasoning_output_tokens"]},
            "total_tokens": numbers["input_tokens"] + numbers["output_tokens"],
        },
    }


def _response_stream_events(response: dict[str, Any], chunk_chars: int) -> Iterator[dict[str, Any]]:
    sequence = itertools.count(0)
    in_progress = {**response, "status": "in_progress", "output": [], "usage": None}
    yield {"type": "response.created", "sequence_number": next(sequence), "response": in_progress}
    yield {"type": "response.in_progress", "sequence_number": next(sequence), "response": in_progress}
    for index, item in enumerate(response["output"]):
        if item["type"] == "message":
            yield {
                "type": "response.output_item.added",
                "sequence_number": next(sequence),
                "output_index": index,
                "item": {**item, "status": "in_progress", "content": []},
            }
            for part_index, part in enumerate(item["content"]):
                text = part["text"]
                yield {
                    "type": "response.content_part.added",
                    "sequence_number": next(sequence),
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": part_index,
                    "part": {"type": "output_text", "text": "", "annotations": []},
                }
                for start in range(0, len(text), chunk_chars):
                    yield {
                        "type": "response.output_text.delta",
                        "sequence_number": next(sequence),
                        "item_id": item["id"],
                        "output_index": index,
                        "content_index": part_index,
                        "delta": text[start : start + chunk_chars],
                        "logprobs": [],
                    }
                yield {
                    "type": "response.output_text.done",
                    "sequence_number": next(sequence),
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": part_index,
                    "text": text,
                    "logprobs": [],
                }
                yield {
                    "type": "response.content_part.done",
                    "sequence_number": next(sequence),
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": part_index,
                    "part": part,
                }
        else:
            arguments = item["arguments"]
            yield {
                "type": "response.output_item.added",
                "sequence_number": next(sequence),
                "output_index": index,
                "item": {**item, "status": "in_progress", "arguments": ""},
            }
            for start in range(0, len(arguments), chunk_chars):
                yield {
                    "type": "response.function_call_arguments.delta",
                    "sequence_number": next(sequence),
                    "item_id": item["id"],
                    "output_index": index,
                    "delta": arguments[start : start + chunk_chars],
                }
            yield {
                "type": "response.function_call_arguments.done",
                "sequence_number": next(sequence),
                "item_id": item["id"],
                "output_index": index,
                "arguments": arguments,
            }
        yield {"type": "response.output_item.done", "sequence_number": next(sequence), "output_index": index, "item": item}
    yield {"type": "response.completed", "sequence_number": next(sequence), "response": response}


def _build_chat_completion(owner: OpenAITestServer, request: RecordedRequest, reply: ScriptedReply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": call.call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            for call in reply.tool_calls
        ]
    numbers = _usage_numbers(request, reply, (reply.text or "") + "".join(c.arguments for c in reply.tool_calls))
    return {
        "id": owner._next_id("chatcmpl"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool_calls else "stop", "logprobs": None}],
        "usage": {
            "prompt_tokens": numbers["input_tokens"],
            "prompt_tokens_details": {"cached_tokens": numbers["cached_input_tokens"]},
            "completion_tokens": numbers["output_tokens"],
            "completion_tokens_details": {"reasoning_tokens": numbers["reasoning_output_tokens"]},
            "total_tokens": numbers["input_tokens"] + numbers["output_tokens"],
        },
    }


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_content_text(part) for part in content)
    if isinstance(content, dict):
        for key in ("text", "output", "content"):
            if key in content:
                return _content_text(content[key])
    return ""
