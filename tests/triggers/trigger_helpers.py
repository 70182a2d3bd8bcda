"""Step-by-step checks shared by the per-module trigger tests (one file per module).

Each ``test_<key>.py`` calls these with its own tables: loading the module, mapping odd
delivery bodies, the rendered poll request (``responses`` asserting method, path, query and
headers), rows to events, dedupe, and every error status of its list endpoint.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
import requests
import responses
from responses import matchers

from practiceflow.api import Client, RetryPolicy
from practiceflow.errors import (
    ApiError,
    AuthError,
    NotFoundError,
    RateLimitError,
    ServerError,
    ValidationError,
    WriteAccessError,
)
from practiceflow.state import SQLiteStore
from practiceflow.triggers import Poller, TriggerDefinition, load_definition
from practiceflow.webhooks import delivery_headers

BASE = "https://api.test/anz"
AUTH = {"X-SVC-Auth-ID": "5a4db0c0-0000-4000-8000-000000000011", "X-SVC-Auth-Key": "s3cret"}

#: Each error status of a list endpoint and the exception a poll raises for it.
ERROR_STATUSES: Sequence[tuple[int, type[ApiError]]] = (
    (400, ValidationError),
    (401, AuthError),
    (403, WriteAccessError),
    (404, NotFoundError),
    (429, RateLimitError),
    (500, ServerError),
)


def offline_client() -> Client:
    """A client for ``responses``: no waiting, one attempt, small 429 patience."""
    return Client(
        AUTH["X-SVC-Auth-ID"],
        AUTH["X-SVC-Auth-Key"],
        base_url=BASE,
        environ={},
        sleep=lambda seconds: None,
        retry=RetryPolicy(max_attempts=1, max_rate_limited=1),
    )


def check_loads(key: str, *, webhook: bool, poll: bool) -> TriggerDefinition:
    """The module loads, validates its sample, and has the declared ways to receive."""
    loaded = load_definition(key)
    assert loaded.key == key
    assert (loaded.webhook is not None) == webhook
    assert (loaded.poll is not None) == poll
    assert not list(loaded.module.output_validator.iter_errors(loaded.module.sample))
    return loaded


def check_delivery_cases(
    key: str,
    cases: Sequence[tuple[Any, str, Mapping[str, Any]]],
    options: Mapping[str, Any] | None = None,
) -> None:
    """Each body maps to the expected dedupe key and contains the expected fields."""
    spec = load_definition(key).webhook
    assert spec is not None
    headers = {"event": "x.y", "eventId": "evt-9", "timestamp": "1700000000"}
    for body, expected_key, expected_fields in cases:
        dedupe, data = spec.to_event(body, headers, dict(options or {}), "evt-9")
        assert dedupe == expected_key, body
        for name, value in expected_fields.items():
            assert data.get(name) == value, (body, name)


def expect_page(
    path: str,
    query: Mapping[str, str],
    rows: Any,
    *,
    status: int = 200,
) -> None:
    """Register one GET answer that matches the path, the exact query and the auth headers."""
    responses.add(
        responses.GET,
        BASE + path,
        json=rows,
        status=status,
        match=[matchers.query_param_matcher(dict(query)), matchers.header_matcher(AUTH)],
    )


def poller(
    store: SQLiteStore,
    key: str,
    options: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Poller:
    """A poller of a shipped module over the offline client."""
    return Poller(offline_client(), store, "p", load_definition(key), options, **kwargs)


def check_error_statuses(store: SQLiteStore, key: str, path: str, options: Any = None) -> None:
    """Every error status of the list endpoint raises its error, and nothing moves."""
    for status, error in ERROR_STATUSES:
        with responses.RequestsMock() as mocked:
            mocked.add(
                responses.GET, BASE + path, json={"status": status, "title": "x"}, status=status
            )
            with pytest.raises(error):
                poller(store, key, options).poll_once()
        assert store.get_cursor_state("p", key) is None
        assert store.pending_events("p") == []


def run_polls(
    store: SQLiteStore,
    key: str,
    path: str,
    pages: Sequence[tuple[Mapping[str, str], Any]],
    *,
    options: Mapping[str, Any] | None = None,
    polls: int = 2,
    **kwargs: Any,
) -> list[list[str]]:
    """Run ``polls`` polls against the exact pages given (each query must be asked).

    A first page shorter than the ``pageSize`` sent is followed by the one request the
    poller makes to learn whether the server ignores ``pageSize``: page 2, answered empty.
    """
    found: list[list[str]] = []
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mocked:
        for query, rows in pages:
            mocked.add(
                responses.GET,
                BASE + path,
                json=rows,
                match=[matchers.query_param_matcher(dict(query)), matchers.header_matcher(AUTH)],
            )
            size = query.get("pageSize")
            if (
                size is not None
                and query.get("pageNumber") == "1"
                and isinstance(rows, list)
                and 0 < len(rows) < int(size)
            ):
                probe = {**query, "pageNumber": "2"}
                mocked.add(
                    responses.GET,
                    BASE + path,
                    json=[],
                    match=[matchers.query_param_matcher(probe), matchers.header_matcher(AUTH)],
                )
        watcher = poller(store, key, options, **kwargs)
        for _ in range(polls):
            found.append([event.id for event in watcher.poll_once().events])
    return found


def entity(key: str, status: str, updated: str, **extra: Any) -> dict[str, Any]:
    """An entities-list row (summary) as the spec lists its fields."""
    return {"entityKey": key, "entityName": "N", "status": status, "lastUpdated": updated, **extra}


def post_delivery(
    url: str,
    secret: str,
    body: Any,
    *,
    event: str = "proposal.accepted",
    event_id: str = "evt-1",
    timestamp: int | None = None,
) -> requests.Response:
    """POST a delivery signed as the API would sign it."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = delivery_headers(secret, event, event_id, raw, timestamp=timestamp)
    headers["Content-Type"] = "application/json"
    return requests.post(url, data=raw, headers=headers, timeout=5)
