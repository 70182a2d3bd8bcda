"""Fixtures of the reliability suite.

``rsandbox`` is a sandbox of its own (not the session one), so that webhook retries keep
their real schedule (0.5, 1, 2, 4 s): a receiver that restarts within that span must
still get every delivery. It is reset before each test, with rate limits far above what
the tests send (fault tests arm 429s through the admin surface instead).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from _variants import play_variant, requested_variant
from practiceflow.testing import SandboxHandle, running_sandbox
from reliability._support import FAST


@pytest.fixture(scope="session")
def rsandbox_server() -> Iterator[SandboxHandle]:
    """One sandbox for the reliability suite, real webhook retry schedule."""
    with running_sandbox(webhook_retry_scale=1.0, entities=200) as handle:
        yield handle


@pytest.fixture
def rsandbox(rsandbox_server: SandboxHandle, request: pytest.FixtureRequest) -> SandboxHandle:
    """The reliability sandbox, reset, with generous rate limits (and the test's variant
    when it runs under the matrix)."""
    rsandbox_server.reset()
    rsandbox_server.admin("POST", "/_admin/config", {"rateLimits": FAST})
    play_variant(rsandbox_server, requested_variant(request))
    return rsandbox_server
