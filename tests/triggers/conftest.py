"""Fixtures of the trigger tests: a state store, a sandbox client, a running receiver."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from practiceflow.api import Client
from practiceflow.state import SQLiteStore
from practiceflow.testing import SandboxHandle
from practiceflow.triggers import Receiver, ReceiverServer, serve_receiver
from practiceflow.webhooks import delivery_headers

PRACTICE = "anz-test"


@pytest.fixture
def store(tmp_path) -> Iterator[SQLiteStore]:
    with SQLiteStore(tmp_path / "state.db") as opened:
        yield opened


@pytest.fixture
def client(sandbox: SandboxHandle) -> Iterator[Client]:
    client_id, secret = sandbox.credentials("anz", "rw")
    with Client(client_id, secret, base_url=sandbox.base_url("anz"), environ={}) as api:
        yield api


@pytest.fixture
def receiver(store: SQLiteStore) -> Receiver:
    return Receiver(store)


@pytest.fixture
def served(receiver: Receiver) -> Iterator[ReceiverServer]:
    with serve_receiver(receiver) as server:
        yield server


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
