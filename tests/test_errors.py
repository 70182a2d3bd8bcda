"""The exception tree: messages say where and what, and carry the problem details."""

from __future__ import annotations

import pytest

from practiceflow.errors import (
    ApiError,
    AuthError,
    InDoubtError,
    Issue,
    ManifestError,
    NotFoundError,
    RateLimitError,
    ServerError,
    ValidationError,
    WriteAccessError,
)


def test_api_error_str_names_method_path_status_and_server_message() -> None:
    error = ValidationError(
        "POST", "/api/v1/bills", 400, {"title": "Bad Request", "message": "lineItems required"}
    )
    assert str(error) == "POST /api/v1/bills -> 400: lineItems required"
    assert error.problem["title"] == "Bad Request"
    assert error.kind == "config"


@pytest.mark.parametrize(
    ("cls", "word"),
    [(AuthError, "region"), (WriteAccessError, "canWrite")],
)
def test_auth_errors_carry_a_hint(cls: type[ApiError], word: str) -> None:
    assert word in str(cls("GET", "/api/v1/entities", 401))


def test_detail_falls_back_to_detail_then_title() -> None:
    assert NotFoundError("GET", "/x", 404, {"detail": "no such entity"}).detail == "no such entity"
    assert ServerError("GET", "/x", 500, {"title": "Internal"}).detail == "Internal"
    assert ServerError("GET", "/x", 500, None).detail == ""


def test_rate_limit_error_keeps_retry_after() -> None:
    error = RateLimitError("GET", "/api/v1/entities", retry_after=7.0)
    assert error.retry_after == 7.0
    assert error.status == 429
    assert error.kind == "transient"


def test_in_doubt_error_names_the_write_and_its_cause() -> None:
    cause = ServerError("POST", "/api/v1/bills", 502)
    error = InDoubtError("POST", "/api/v1/bills", cause)
    assert "POST /api/v1/bills" in str(error)
    assert "not repeated" in str(error)
    assert error.cause is cause
    assert error.exit_code == 5


def test_manifest_error_lists_every_issue_with_location() -> None:
    error = ManifestError(
        [
            Issue(
                "actions/a.yaml",
                14,
                7,
                "input.properties.x",
                "got 'amonut'; did you mean 'amount'?",
            ),
            Issue("actions/a.yaml", 20, 0, "", "template syntax error"),
        ]
    )
    text = str(error)
    assert "2 problems found" in text
    assert "actions/a.yaml:14:7 input.properties.x: got 'amonut'" in text
    assert "actions/a.yaml:20: template syntax error" in text
