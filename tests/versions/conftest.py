"""Fixtures of the versions tests: a fast-budget sandbox and a client of it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from practiceflow.api import Client, RateLimits
from practiceflow.testing import SandboxHandle
from runner._support import FAST


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
