"""Fixtures of the store-agnostic suite: every test runs against each store backend.

``sqlite`` gets a file in the test's temporary folder; ``postgresql`` gets a fresh
schema (as its ``search_path``) on the session's throw-away server (``tests/pgserver.py``:
initdb in a temporary folder, 127.0.0.1 only, stopped at the end). The tests themselves
do not change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pgserver import shared_server
from practiceflow.state import StateStore, open_store
from practiceflow.testing import FakeClock

BACKENDS = ["sqlite", "postgresql"]

START = datetime(2025, 3, 1, 9, 0, 0, tzinfo=UTC)


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL naming a fresh, empty store of each backend."""
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'state.db'}"
    if request.param == "postgresql":
        return shared_server().new_schema(prefix="state")
    raise NotImplementedError(request.param)  # pragma: no cover


@pytest.fixture
def open_store_again(store_url: str, clock: FakeClock) -> Iterator[Callable[[], StateStore]]:
    """Open (another handle on) the same store; every handle is closed at the end."""
    opened: list[StateStore] = []

    def reopen() -> StateStore:
        store = open_store(store_url, clock=clock)
        opened.append(store)
        return store

    yield reopen
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store_again: Callable[[], StateStore]) -> StateStore:
    return open_store_again()
