"""Every error status of spec section 7 becomes the right exception, with its fields."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
import requests
import responses

from practiceflow.api import Client, RetryPolicy
from practiceflow.errors import (
    ApiError,
    AuthError,
    InDoubtError,
    NotFoundError,
    PracticeflowError,
    RateLimitError,
    ServerError,
    TransportError,
    ValidationError,
    WriteAccessError,
)

from .conftest import BASE, SECRET

PROBLEM = {
    "type": "https://tools.ietf.org/html/rfc9110#section-15.5.1",
    "title": "One or more validation errors occurred.",
    "status": 400,
    "detail": None,
    "instance": "/api/v1/bills",
    "message": "lineItems[0]: taxAmount or taxPercent is required",
}


@pytest.mark.parametrize(
    ("status", "body", "headers", "cls", "kind", "detail"),
    [
        pytest.param(
            400, PROBLEM, {}, ValidationError, "config", PROBLEM["message"], id="400-problem"
        ),
        pytest.param(
            401,
            {"title": "Unauthorized", "status": 401},
            {},
            AuthError,
            "auth",
            "Unauthorized",
            id="401",
        ),
        pytest.param(
            403,
            {"title": "Forbidden", "status": 403, "detail": "read-only client"},
            {},
            WriteAccessError,
            "auth",
            "read-only client",
            id="403",
        ),
        pytest.param(
            404,
            {"message": "Entity not found", "status": 404},
            {},
            NotFoundError,
            "config",
            "Entity not found",
            id="404",
        ),
        pytest.param(
            429,
            {"status": 429, "title": "Too Many Requests"},
            {"Retry-After": "99999"},
            RateLimitError,
            "transient",
            "Too Many Requests",
            id="429",
        ),
        pytest.param(
            500,
            {"status": 500, "title": "Internal Server Error"},
            {},
            ServerError,
            "transient",
            "Internal Server Error",
            id="500",
        ),
        pytest.param(
            409, {"title": "Conflict"}, {}, ApiError, "config", "Conflict", id="409-other"
        ),
    ],
)
def test_error_statuses_map_to_exceptions_with_their_fields(
    rsps: responses.RequestsMock,
    make_client: Callable[..., Client],
    status: int,
    body: dict[str, Any],
    headers: dict[str, str],
    cls: type[ApiError],
    kind: str,
    detail: str,
) -> None:
    rsps.get(f"{BASE}/api/v1/entities/abc", status=status, json=body, headers=headers)
    client = make_client(retry=RetryPolicy(max_attempts=1))
    with pytest.raises(ApiError) as info:
        client.get("/api/v1/entities/abc", params={"email": "jane@example.com"})
    error = info.value
    assert type(error) is cls
    assert (error.method, error.path, error.status, error.kind) == (
        "GET",
        "/api/v1/entities/abc",
        status,
        kind,
    )
    assert error.problem == body
    assert error.detail == detail
    assert f"GET /api/v1/entities/abc -> {status}" in str(error)
    # Query strings may carry personal data: never in the error.
    assert "jane" not in str(error)
    assert SECRET not in str(error) + repr(error)


def test_validation_error_keeps_message_and_problem_fields(
    rsps: responses.RequestsMock, client: Client
) -> None:
    rsps.post(f"{BASE}/api/v1/bills", status=400, json=PROBLEM)
    with pytest.raises(ValidationError) as info:
        client.post("/api/v1/bills", json={"entityKey": "k"})
    assert info.value.problem["message"] == PROBLEM["message"]
    assert info.value.problem["instance"] == "/api/v1/bills"
    assert info.value.problem["title"] == PROBLEM["title"]
    assert len(rsps.calls) == 1


def test_401_hint_names_the_region_and_base_url(
    rsps: responses.RequestsMock, client: Client
) -> None:
    rsps.get(f"{BASE}/api/v1/auth/validate", status=401)
    with pytest.raises(AuthError) as info:
        client.validate()
    assert "region" in str(info.value)
    assert BASE in str(info.value)
    assert info.value.exit_code == 3


def test_403_hint_points_at_can_write(rsps: responses.RequestsMock, client: Client) -> None:
    rsps.post(f"{BASE}/api/v1/webhooks", status=403, json={"status": 403})
    with pytest.raises(WriteAccessError, match="canWrite"):
        client.post("/api/v1/webhooks", json={"hookUrl": "https://h.test"})


def test_429_carries_retry_after(rsps: responses.RequestsMock, client: Client) -> None:
    rsps.get(
        f"{BASE}/api/v1/groups/list",
        status=429,
        json={"status": 429, "title": "Too Many Requests"},
        headers={"Retry-After": "5000"},
    )
    with pytest.raises(RateLimitError) as info:
        client.get("/api/v1/groups/list")
    assert info.value.retry_after == 5000
    assert info.value.problem["title"] == "Too Many Requests"


@pytest.mark.parametrize(
    ("body", "content_type", "problem"),
    [
        pytest.param("<html><body>Bad gateway</body></html>", "text/html", {}, id="html"),
        pytest.param(
            "upstream timed out", "text/plain", {"detail": "upstream timed out"}, id="text"
        ),
        pytest.param("", "application/json", {}, id="empty"),
        pytest.param("{not json", "application/json", {}, id="broken-json"),
        pytest.param(
            '"just a string"', "application/json", {"message": "just a string"}, id="json-str"
        ),
        pytest.param("[1, 2]", "application/json", {}, id="json-list"),
    ],
)
def test_non_json_error_bodies_are_tolerated(
    rsps: responses.RequestsMock,
    make_client: Callable[..., Client],
    body: str,
    content_type: str,
    problem: dict[str, Any],
) -> None:
    rsps.get(f"{BASE}/api/v1/users/list", status=502, body=body, content_type=content_type)
    with pytest.raises(ServerError) as info:
        make_client(retry=RetryPolicy(max_attempts=1)).get("/api/v1/users/list")
    assert info.value.problem == problem
    assert info.value.status == 502


def test_connection_failure_is_a_transport_error(
    rsps: responses.RequestsMock, make_client: Callable[..., Client]
) -> None:
    rsps.get(f"{BASE}/api/v1/users/list", body=requests.ConnectionError("reset by peer"))
    with pytest.raises(TransportError) as info:
        make_client(retry=RetryPolicy(max_attempts=1)).get("/api/v1/users/list", params={"q": "x"})
    assert (info.value.method, info.value.path) == ("GET", "/api/v1/users/list")
    assert info.value.kind == "transient"


def test_body_that_cannot_be_serialised_is_a_config_error_not_in_doubt(
    rsps: responses.RequestsMock, client: Client
) -> None:
    with pytest.raises(PracticeflowError) as info:
        client.post("/api/v1/bills", json={"when": object()})
    assert info.value.kind == "config"
    assert not isinstance(info.value, InDoubtError)
    assert len(rsps.calls) == 0


def test_secret_never_reaches_logs_errors_or_reprs(
    rsps: responses.RequestsMock,
    make_client: Callable[..., Client],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    rsps.get(f"{BASE}/api/v1/auth/validate", json={"authenticated": True, "clientName": "A"})
    rsps.get(f"{BASE}/api/v1/groups/list", status=500)
    rsps.post(f"{BASE}/api/v1/bills", body=requests.ReadTimeout("slow"))
    rsps.get(f"{BASE}/api/v1/entities/x", status=401, json={"title": "Unauthorized"})
    rsps.get(f"{BASE}/api/v1/leads", status=429, headers={"Retry-After": "100000"})
    errors: list[BaseException] = []
    for auth_method in ("header", "basic"):
        client = make_client(auth_method=auth_method)
        client.validate()
        for method, path in (
            ("GET", "/api/v1/groups/list"),
            ("POST", "/api/v1/bills"),
            ("GET", "/api/v1/entities/x"),
            ("GET", "/api/v1/leads"),
        ):
            body = {"a": 1} if method == "POST" else None
            with pytest.raises(PracticeflowError) as info:
                client.request(method, path, json=body)
            errors.append(info.value)
        assert SECRET not in repr(client)
    assert caplog.records, "the client logs its requests"
    for record in caplog.records:
        assert SECRET not in record.getMessage()
        assert SECRET not in repr(record.args)
    for error in errors:
        for text in (str(error), repr(error), repr(vars(error))):
            assert SECRET not in text
    messages = [r.getMessage() for r in caplog.records if r.name == "practiceflow.api"]
    assert any("GET /api/v1/auth/validate -> 200 in" in m for m in messages)
