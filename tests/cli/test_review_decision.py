"""`review --approve/--reject` on a run Prefect shows Paused before it has stored the form of the
input: the decision waits for the form instead of being refused ("Run input schema not found")."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any
from uuid import uuid4

import httpx
import pytest
from prefect.client.schemas.objects import StateDetails
from prefect.exceptions import PrefectHTTPStatusError
from prefect.states import Paused

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
