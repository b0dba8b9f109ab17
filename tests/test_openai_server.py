import json
import socket
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import openai
import pytest

from tests.support.openai_server import (
    RecordedRequest,
    ScriptedReply,
    ToolCall,
    default_handler,
    running_openai_server,
    stage1_extraction_for,
)


def client_for(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0, timeout=10)


def test_base_url_ends_in_v1_and_models_are_listed():
    with running_openai_server() as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        assert server.base_url.endswith("/v1")
        models = client_for(server).models.list()
        assert [model.id for model in models.data] == ["test-model"]
        assert server.requests[0].method == "GET"


def test_streamed_text_is_parsed_by_the_official_client_event_by_event():
    text = "A reply long enough to be split into several deltas by the test server."
    with running_openai_server(lambda request: ScriptedReply.output_text(text)) as server:
        client = client_for(server)
        with client.responses.stream(model="m", input="hello") as stream:
            events = list(stream)
            final = stream.get_final_response()
        assert server.requests[0].body["stream"] is True

    types = [event.type for event in events]
    assert types[0] == "response.created"
    assert types[-1] == "response.completed"
    for expected in ("response.output_item.added", "response.output_text.delta", "response.output_item.done"):
        assert expected in types
    deltas = [event.delta for event in events if event.type == "response.output_text.delta"]
    assert len(deltas) > 1
    assert "".join(deltas) == text
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert final.output_text == text
    assert final.usage.output_tokens > 0
    assert final.usage.total_tokens == final.usage.input_tokens + final.usage.output_tokens


def test_streamed_function_calls_arrive_as_complete_items():
    call = ToolCall(name="read_file", arguments=json.dumps({"path": "MEMORY.md", "offset": 0}), call_id="call_1")
    with running_openai_server(lambda request: ScriptedReply.function_calls(call)) as server:
        events = list(client_for(server).responses.create(model="m", input="go", stream=True))

    done = [event.item for event in events if event.type == "response.output_item.done"]
    assert len(done) == 1
    assert (done[0].type, done[0].name, done[0].call_id) == ("function_call", "read_file", "call_1")
    assert json.loads(done[0].arguments) == {"path": "MEMORY.md", "offset": 0}
    arguments = "".join(event.delta for event in events if event.type == "response.function_call_arguments.delta")
    assert arguments == call.arguments
    completed = events[-1]
    assert completed.type == "response.completed"
    assert completed.response.output[0].call_id == "call_1"


def test_function_calls_in_non_streaming_responses_and_chat_completions():
    call = ToolCall(name="write_file", arguments='{"path": "a.md"}', call_id="call_9")
    with running_openai_server(lambda request: ScriptedReply.function_calls(call)) as server:
        client = client_for(server)
        response = client.responses.create(model="m", input="go")
        chat = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}])

    assert response.output[0].type == "function_call"
    assert response.output[0].name == "write_file"
    tool_call = chat.choices[0].message.tool_calls[0]
    assert (tool_call.id, tool_call.function.name, tool_call.function.arguments) == ("call_9", "write_file", '{"path": "a.md"}')
    assert chat.choices[0].finish_reason == "tool_calls"


def test_requests_are_recorded_with_headers_and_json_body():
    with running_openai_server() as server:
        client_for(server).responses.create(
            model="gpt-x",
            instructions="system words",
            input=[{"role": "user", "content": [{"type": "input_text", "text": "user words"}]}],
        )
        recorded = server.requests

    assert len(recorded) == 1
    request = recorded[0]
    assert request.path == "/v1/responses"
    assert request.endpoint == "responses"
    assert request.headers["authorization"] == "Bearer test-key"
    assert request.body["model"] == "gpt-x"
    assert request.instructions == "system words"
    assert request.input_text == "user words"


@pytest.mark.parametrize("status", [429, 500, 503, 400])
def test_scripted_http_errors_reach_the_client(status):
    with running_openai_server(lambda request: ScriptedReply.http_error(status, "scripted failure")) as server:
        with pytest.raises(openai.APIStatusError) as raised:
            client_for(server).responses.create(model="m", input="x")
    assert raised.value.status_code == status


def test_set_handler_switches_answers_between_calls():
    with running_openai_server(lambda request: ScriptedReply.http_error(500)) as server:
        client = client_for(server)
        with pytest.raises(openai.InternalServerError):
            client.responses.create(model="m", input="x")
        server.set_handler(lambda request: ScriptedReply.output_text("recovered"))
        assert client.responses.create(model="m", input="x").output_text == "recovered"
        server.set_handler(None)
        assert client.responses.create(model="m", input="x").output_text == "Done."
        assert len(server.requests) == 3


def test_at_least_eight_requests_are_served_concurrently():
    # Every handler call waits at the barrier: a server handling one request at a time would
    # break it (BrokenBarrierError -> HTTP 500) instead of answering all eight.
    barrier = threading.Barrier(8, timeout=10)

    def handler(request: RecordedRequest) -> ScriptedReply:
        barrier.wait()
        return ScriptedReply.output_text("together")

    with running_openai_server(handler) as server:
        client = client_for(server)
        with ThreadPoolExecutor(max_workers=8) as pool:
            answers = list(pool.map(lambda _: client.responses.create(model="m", input="x").output_text, range(8)))
        assert server.handler_errors == []
    assert answers == ["together"] * 8


def test_a_raising_handler_becomes_a_500_and_is_kept_for_inspection():
    def broken(request: RecordedRequest) -> ScriptedReply:
        raise RuntimeError("handler bug")

    with running_openai_server(broken) as server:
        with pytest.raises(openai.InternalServerError):
            client_for(server).responses.create(model="m", input="x")
        assert [type(error) for error in server.handler_errors] == [RuntimeError]


def test_unknown_routes_are_404():
    with running_openai_server() as server:
        response = httpx.post(server.base_url + "/embeddings", json={"input": "x"})
        assert response.status_code == 404
        assert len(server.requests) == 1


def test_delay_is_applied_before_answering():
    with running_openai_server(lambda request: ScriptedReply.output_text("late", delay_seconds=5)) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0, timeout=0.3)
        with pytest.raises(openai.APITimeoutError):
            client.responses.create(model="m", input="x")


def test_server_stops_listening_after_the_context_exits():
    with running_openai_server() as server:
        port = server.port
        client_for(server).models.list()
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0


def test_default_handler_answers_stage1_requests_with_a_valid_extraction():
    body = {
        "model": "m",
        "text": {"format": {"type": "json_schema", "name": "stage1_memory", "schema": {}, "strict": True}},
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "rollout_context:\n- rollout_path: /s/r.jsonl\n- rollout_cwd: /src/shop\n"}]}],
    }
    request = RecordedRequest("POST", "/v1/responses", {}, body)
    reply = default_handler(request)
    extraction = json.loads(reply.text)
    assert set(extraction) == {"rollout_summary", "rollout_slug", "raw_memory"}
    assert "cwd: /src/shop" in extraction["raw_memory"]
    assert "/s/r.jsonl" in extraction["rollout_summary"]
    assert extraction == stage1_extraction_for(request), "deterministic"


def test_default_handler_answers_other_requests_with_plain_text():
    reply = default_handler(RecordedRequest("POST", "/v1/responses", {}, {"model": "m", "input": "hello"}))
    assert reply.text == "Done."


def test_default_stage1_extraction_passes_the_quality_check():
    from codex_memories.extract.quality import QualityRow, check_extraction_batch

    request = RecordedRequest("POST", "/v1/chat/completions", {}, {"messages": [{"role": "user", "content": "rollout_context:\n- rollout_cwd: /src/My Shop!\n"}]})
    report = check_extraction_batch([QualityRow(thread_id="t", **stage1_extraction_for(request))])
    assert report.success, report.rows


def test_a_request_whose_client_hung_up_before_its_answer_is_listed_and_not_answered():
    held = threading.Event()

    def handler(request: RecordedRequest) -> ScriptedReply:
        held.wait(10)  # the first client hangs up meanwhile
        return ScriptedReply.output_text("late")

    with running_openai_server(handler) as server:
        body = json.dumps({"model": "m", "input": "gone"}).encode()
        with socket.create_connection(("127.0.0.1", server.port)) as connection:
            connection.sendall(
                b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode() + body
            )
            while not server.requests:
                threading.Event().wait(0.02)
        held.set()
        answered = client_for(server).responses.create(model="m", input="still here")

        for _ in range(250):
            if server.hung_up:
                break
            threading.Event().wait(0.02)
        assert [request.body["input"] for request in server.hung_up] == ["gone"]
        assert answered.output_text == "late"
        assert len(server.requests) == 2 and server.requests[1] not in server.hung_up
