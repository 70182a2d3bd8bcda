"""Fixtures of the trigger tests: a state store, a sandbox client, a running receiver."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from practiceflow.api import Client
from practiceflow.state import SQLiteStore
from practiceflow.testing import SandboxHandle
from practiceflow.triggers import Receiver, ReceiverServer, serve_receiver

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
