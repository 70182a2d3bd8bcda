"""Fixtures shared by the per-action test files of the catalog.

Fixtures:
    kit: a :class:`Kit` bound to a ``responses`` mock (every registered call must fire) and
        to a client of a fake base URL that neither retries nor waits: the table-driven
        checks every action file repeats (bad input sends nothing, each error status keeps
        its class and gains the module's hint, output fits the output schema).
    live: a client of the session sandbox (``sandbox`` fixture, reset to its seed) with
        read-write credentials of region anz; ``live_ro`` with read-only ones.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import responses

from practiceflow.api import Client, RateLimits, RetryPolicy
from practiceflow.engine import ActionResult, run_action
from practiceflow.errors import (
    ApiError,
    AuthError,
    InDoubtError,
    InputError,
    NotFoundError,
    RateLimitError,
    ServerError,
    ValidationError,
    WriteAccessError,
)
from practiceflow.manifest import ActionModule, default_registry
from practiceflow.testing import SandboxHandle

BASE = "https://api.test/anz"
CLIENT_ID = "11111111-2222-3333-4444-555555555555"
SECRET = "s3cr3t-catalog-tests"
AUTH = {"X-SVC-Auth-ID": CLIENT_ID, "X-SVC-Auth-Key": SECRET}

ERRORS: Mapping[int, type[ApiError]] = {
    400: ValidationError,
    401: AuthError,
    403: WriteAccessError,
    404: NotFoundError,
    429: RateLimitError,
    500: ServerError,
}


class Kit:
    """Checks every action test file repeats; ``api`` is the ``responses`` mock."""

    base = BASE
    auth = AUTH

    def __init__(self, api: responses.RequestsMock, client: Client) -> None:
        self.api = api
        self.client = client

    @staticmethod
    def module(key: str) -> ActionModule:
        return default_registry().action(key)

    @staticmethod
    def no_body() -> Any:
        """A ``responses`` matcher for a request sent without a body."""

        def match(request: Any) -> tuple[bool, str]:
            return request.body in (None, b"", ""), f"expected no body; got {request.body!r}"

        return match

    def url(self, path: str) -> str:
        return self.base + path

    def run(self, key: str, data: Mapping[str, Any], **kwargs: Any) -> ActionResult:
        return run_action(key, data, self.client, **kwargs)

    def bad_input(self, key: str, data: Mapping[str, Any], path: str, message: str) -> None:
        """The input is refused with an issue at ``path`` starting with ``message``; no call."""
        with pytest.raises(InputError) as caught:
            self.run(key, data)
        found = [(issue.path, issue.message) for issue in caught.value.issues]
        assert any(at == path and text.startswith(message) for at, text in found), found
        assert "nothing was sent" in str(caught.value)
        assert len(self.api.calls) == 0

    def fits(self, key: str, result: ActionResult) -> None:
        """The output fits the module's output schema and nothing was surprising."""
        errors = list(self.module(key).output.validator.iter_errors(result.output))
        assert errors == [], errors
        assert result.warnings == []

    def error_status(
        self, key: str, data: Mapping[str, Any], method: str, url: str, status: int
    ) -> BaseException:
        """An error answer keeps its class (InDoubtError for a 5xx on a write) and hint."""
        module = self.module(key)
        body = {"status": status, "title": "Refused", "detail": "server says no"}
        headers = {"Retry-After": "7"} if status == 429 else {}
        self.api.add(method, url, status=status, json=body, headers=headers)
        expected: type[BaseException] = ERRORS[status]
        if status >= 500 and method != "GET":
            expected = InDoubtError
        with pytest.raises(expected) as caught:
            self.run(key, data)
        error = caught.value
        inner = error.cause if isinstance(error, InDoubtError) else error
        assert isinstance(inner, ERRORS[status])
        assert inner.status == status
        if status in module.errors:
            assert module.errors[status] in (inner.hint or "")
        if status == 429:
            assert isinstance(inner, RateLimitError)
            assert inner.retry_after == 7
        assert SECRET not in str(error)
        assert len(self.api.calls) == 1
        return error


def _client(base_url: str, client_id: str, secret: str, tmp_path: Any) -> Client:
    return Client(
        client_id,
        secret,
        base_url=base_url,
        environ={},
        profiles_file=tmp_path / "none.toml",
        retry=RetryPolicy(max_attempts=1),
        limits=RateLimits(max_wait=0),
    )


@pytest.fixture
def kit(tmp_path: Any) -> Iterator[Kit]:
    with (
        responses.RequestsMock(assert_all_requests_are_fired=True) as mock,
        _client(BASE, CLIENT_ID, SECRET, tmp_path) as client,
    ):
        yield Kit(mock, client)


@pytest.fixture
def live(sandbox: SandboxHandle, tmp_path: Any) -> Iterator[Client]:
    client_id, secret = sandbox.credentials("anz", "rw")
    with _client(sandbox.base_url("anz"), client_id, secret, tmp_path) as client:
        yield client


@pytest.fixture
def live_ro(sandbox: SandboxHandle, tmp_path: Any) -> Iterator[Client]:
    client_id, secret = sandbox.credentials("anz", "ro")
    with _client(sandbox.base_url("anz"), client_id, secret, tmp_path) as client:
        yield client
