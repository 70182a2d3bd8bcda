"""A request built ahead of sending it: :meth:`Client.prepare` sends nothing and spends no
budget; :meth:`Client.send` sends exactly what was built, with the retries of
:meth:`Client.request` (which is the two in a row)."""

from __future__ import annotations

import json

import pytest
import responses

from practiceflow.api import Client
from practiceflow.api.client import PreparedCall
from practiceflow.errors import ConfigError, InDoubtError

from .conftest import BASE, CLIENT_ID, SECRET, FakeClock


def test_prepare_sends_nothing_and_spends_no_budget(
    rsps: responses.RequestsMock, client: Client
) -> None:
    admitted: list[object] = []
    client.budget.on_admit(lambda *args: admitted.append(args))
    call = client.prepare("post", "/api/v1/bills", params={"syncNow": True}, json={"a": 1})
    assert len(rsps.calls) == 0
    assert admitted == []
    assert (call.method, call.path, call.json) == ("POST", "/api/v1/bills", {"a": 1})
    assert call.request.url == f"{BASE}/api/v1/bills?syncNow=true"
    # The credentials are on the built request, never in its repr (logs, tracebacks).
    assert call.request.headers["X-SVC-Auth-Key"] == SECRET
    assert SECRET not in repr(call)
    rsps.post(f"{BASE}/api/v1/bills", json={}, status=201)
    client.send(call)
    assert len(admitted) == 1  # spent when sent


def test_send_sends_what_prepare_built_once_and_parses_the_answer(
    rsps: responses.RequestsMock, client: Client
) -> None:
    rsps.post(f"{BASE}/api/v1/entities", json={"entityKey": "k1"}, status=201)
    call = client.prepare(
        "POST", "/api/v1/entities", json={"entityName": "Ada"}, headers={"X-Request-Id": "r1"}
    )
    answer = client.send(call)
    assert (answer.status, answer.data) == (201, {"entityKey": "k1"})
    (sent,) = rsps.calls
    assert sent.request.method == "POST"
    assert json.loads(sent.request.body or b"") == {"entityName": "Ada"}
    assert sent.request.headers["X-SVC-Auth-ID"] == CLIENT_ID
    assert sent.request.headers["X-SVC-Auth-Key"] == SECRET
    assert sent.request.headers["X-Request-Id"] == "r1"
    assert sent.request.headers["Content-Type"] == "application/json"


def test_request_is_prepare_then_send_byte_for_byte(
    rsps: responses.RequestsMock, client: Client
) -> None:
    url = f"{BASE}/api/v1/bills"
    rsps.post(url, json={"billKey": 1}, status=201)
    rsps.post(url, json={"billKey": 2}, status=201)
    body = {"entityKey": "k", "lineItems": [{"amount": 1.5}]}
    client.request("POST", "/api/v1/bills", params={"syncNow": True}, json=body)
    client.send(client.prepare("POST", "/api/v1/bills", params={"syncNow": True}, json=body))
    first, second = (call.request for call in rsps.calls)
    assert (first.method, first.url, first.body) == (second.method, second.url, second.body)
    assert dict(first.headers) == dict(second.headers)


def test_a_sent_call_is_retried_as_request_retries_it(
    rsps: responses.RequestsMock, client: Client, clock: FakeClock
) -> None:
    url = f"{BASE}/api/v1/entities/k/integrations"
    rsps.get(url, status=503)
    rsps.get(url, json={"entityKey": "k"})
    assert client.send(client.prepare("GET", "/api/v1/entities/k/integrations")).data == {
        "entityKey": "k"
    }
    assert len(rsps.calls) == 2
    assert len(clock.sleeps) == 1  # one backoff between the two


def test_a_write_answered_5xx_is_in_doubt_not_retried(
    rsps: responses.RequestsMock, client: Client
) -> None:
    rsps.post(f"{BASE}/api/v1/entities", status=502)
    with pytest.raises(InDoubtError):
        client.send(client.prepare("POST", "/api/v1/entities", json={"entityName": "Ada"}))
    assert len(rsps.calls) == 1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"path": "api/v1/bills"}, "starting with '/'"),
        ({"path": "/api/v1/bills", "json": {"x": float("nan")}}, "cannot be encoded"),
        ({"path": "/api/v1/bills", "headers": {"X-Note": "a\nb"}}, "could not be built"),
        ({"path": "/api/v1/bills", "headers": {"X-SVC-Auth-Key": "x"}}, "credential"),
    ],
)
def test_prepare_refuses_what_cannot_be_sent_and_names_it(
    rsps: responses.RequestsMock, client: Client, kwargs: dict[str, object], match: str
) -> None:
    path = str(kwargs.pop("path"))
    with pytest.raises(ConfigError, match=match) as caught:
        client.prepare("POST", path, **kwargs)  # type: ignore[arg-type]
    assert "a\nb" not in str(caught.value)
    assert len(rsps.calls) == 0


def test_a_prepared_call_is_a_plain_value(client: Client) -> None:
    call = client.prepare("GET", "/api/v1/groups/list", params={"isActive": True})
    assert isinstance(call, PreparedCall)
    assert call.request.url == f"{BASE}/api/v1/groups/list?isActive=true"
    assert call.json is None
    assert call.settings["stream"] is False
