"""`review --approve/--reject` and the paused run: the decision reaches the run or is refused with
the reason (never decided on disk while the run may still wait), and on a run Prefect shows Paused
before it has stored the form of the input, the decision waits for the form instead of being
refused ("Run input schema not found")."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any
from uuid import uuid4

import httpx
import pytest
from prefect.client.schemas.objects import StateDetails
from prefect.exceptions import PrefectHTTPStatusError
from prefect.states import Paused

# `review` imports the phase-2 flow modules on first use, and `flows/phase2_support.py` binds
# `from prefect import get_client` when it is imported: imported under this module's fake client,
# it kept the fake for every later test of the process (tests/cli/test_status_and_show.py failed
# after this file). Imported here, before any test swaps `prefect.get_client`.
import codex_memories_flows.phase2_review  # noqa: F401
from codex_memories_cli import review


class _FormStoredLate:
    """A client whose paused run's form appears after `missing` reads (404 until then)."""

    def __init__(self, missing: int, status: int = 404) -> None:
        self.missing, self.status, self.reads = missing, status, []

    def read_flow_run_input(self, flow_run_id: Any, key: str) -> str:
        self.reads.append(key)
        if len(self.reads) <= self.missing:
            request = httpx.Request("GET", f"http://127.0.0.1/api/flow_runs/{flow_run_id}/input/{key}")
            response = httpx.Response(self.status, request=request, json={"detail": "Flow run input not found"})
            raise PrefectHTTPStatusError.from_httpx_error(httpx.HTTPStatusError("x", request=request, response=response))
        return "{}"


def _paused_run() -> Any:
    state = Paused(pause_key="1", reschedule=False)
    state.state_details = StateDetails(pause_key="1")
    return SimpleNamespace(id=uuid4(), state=state)


def test_the_decision_waits_until_the_form_is_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("time.sleep", lambda seconds: None)
    client = _FormStoredLate(missing=3)
    review._wait_for_the_form(client, _paused_run())
    assert client.reads == ["paused-1-schema"] * 4


def test_a_form_that_never_comes_is_waited_for_a_bounded_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(review, "FORM_WAIT_SECONDS", 0.0)
    client = _FormStoredLate(missing=10**6)
    review._wait_for_the_form(client, _paused_run())
    assert len(client.reads) == 1


def test_a_server_error_is_not_waited_on(monkeypatch: pytest.MonkeyPatch) -> None:
    client = _FormStoredLate(missing=10**6, status=500)
    review._wait_for_the_form(client, _paused_run())
    assert len(client.reads) == 1


class _Client:
    """A Prefect client that knows one run, in `state`."""

    def __init__(self, state: Any) -> None:
        self.state = state

    def __enter__(self) -> _Client:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def read_flow_run(self, flow_run_id: Any) -> Any:
        return SimpleNamespace(id=flow_run_id, state=self.state)


def _server(monkeypatch: pytest.MonkeyPatch, api_url: str | None, state: Any = None) -> None:
    monkeypatch.setattr(
        "codex_memories_cli.prefect_server.choose_prefect_server", lambda config: SimpleNamespace(api_url=api_url)
    )
    monkeypatch.setattr("prefect.get_client", lambda sync_client=True: _Client(state))


def test_a_decision_for_a_run_on_no_known_server_is_refused_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    _server(monkeypatch, None)
    run_id = str(uuid4())
    with pytest.raises(review.DecisionNotDelivered) as refused:
        review._resume_paused_run(SimpleNamespace(), run_id, approve=True, comment="")
    assert run_id in str(refused.value) and "PREFECT_API_URL is unset" in str(refused.value) and "--on-disk" in str(refused.value)


def test_a_decision_for_a_run_that_is_not_paused_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.states import Running

    _server(monkeypatch, "http://127.0.0.1:1/api", Running())
    with pytest.raises(review.DecisionNotDelivered, match="is Running, not paused"):
        review._resume_paused_run(SimpleNamespace(), str(uuid4()), approve=False, comment="")


@pytest.mark.parametrize("ended", ["Crashed", "Cancelled", "Completed", "Failed"])
def test_a_proposal_whose_run_has_ended_is_decided_on_disk(monkeypatch: pytest.MonkeyPatch, ended: str) -> None:
    import prefect.states

    _server(monkeypatch, "http://127.0.0.1:1/api", getattr(prefect.states, ended)())
    assert review._resume_paused_run(SimpleNamespace(), str(uuid4()), approve=True, comment="") is False


def test_a_server_that_does_not_answer_refuses_the_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    class Unreachable(_Client):
        def read_flow_run(self, flow_run_id: Any) -> Any:
            raise httpx.ConnectError("connection refused")

    monkeypatch.setattr(
        "codex_memories_cli.prefect_server.choose_prefect_server", lambda config: SimpleNamespace(api_url="http://127.0.0.1:1/api")
    )
    monkeypatch.setattr("prefect.get_client", lambda sync_client=True: Unreachable(None))
    with pytest.raises(review.DecisionNotDelivered, match="did not answer"):
        review._resume_paused_run(SimpleNamespace(), str(uuid4()), approve=True, comment="")


def test_the_decision_form_has_no_default_and_sends_what_the_cli_sends() -> None:
    from pydantic import ValidationError

    from codex_memories_flows.phase2_review import ReviewDecision, decision_input

    schema = ReviewDecision.model_json_schema()
    assert "decision" in schema["required"] and "default" not in schema["properties"]["decision"]
    assert schema["properties"]["decision"]["enum"] == ["approve", "reject"]
    with pytest.raises(ValidationError):
        ReviewDecision(comment="no decision")
    assert ReviewDecision(**decision_input(approve=False, comment="why")).approve is False
    assert ReviewDecision(**decision_input(approve=True, comment="")).approve is True
