"""Fixtures of the runner tests: modules, recipes, a state store, a fast-budget sandbox.

The trigger ``test_event`` (``tests/runner/modules/triggers``) is one the tests feed
themselves: they record events in the state store, as a trigger would, and the runner
takes them from there (the boundary between triggers and runner).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from practiceflow.api import Client, RateLimits
from practiceflow.manifest import ModuleRegistry, load_modules
from practiceflow.state import SQLiteStore, StateStore, open_store
from practiceflow.testing import SandboxHandle
from runner._support import FAST, MODULES


@pytest.fixture
def registry() -> ModuleRegistry:
    """Shipped modules plus the test trigger."""
    return load_modules([MODULES])


@pytest.fixture
def store(tmp_path: Path) -> Iterator[StateStore]:
    """A fresh SQLite state store."""
    with open_store(str(tmp_path / "state.db")) as opened:
        assert isinstance(opened, SQLiteStore)
        yield opened


@pytest.fixture
def fast_sandbox(sandbox: SandboxHandle) -> SandboxHandle:
    """The reset sandbox with rate limits far above what the tests send."""
    sandbox.admin("POST", "/_admin/config", {"rateLimits": FAST})
    return sandbox


@pytest.fixture
def client(fast_sandbox: SandboxHandle) -> Iterator[Client]:
    """A read-write client of the sandbox's ANZ practice, with a fast local budget."""
    client_id, secret = fast_sandbox.credentials("anz", "rw")
    limits = RateLimits(per_minute=100_000, per_hour=1_000_000, per_day=10_000_000)
    with Client(
        client_id, secret, base_url=fast_sandbox.base_url("anz"), limits=limits, timeout=5
    ) as made:
        yield made
