"""Shared pytest fixtures of the whole suite.

Fixtures:
    sandbox_server: session-scoped. One sandbox (``practiceflow.testing.running_sandbox``)
        on a free port of 127.0.0.1 for the whole run: seed 1, 300 entities per region,
        spec rate limits (60/min, 1000/h, 10000/day), webhook retries scaled to 2 % of the
        real schedule so retry tests are fast.
    sandbox: function-scoped. The same server, reset to its seed before the test (data,
        clock, faults, rate budgets, switches, logs). Use this one in tests.

A test marked ``@pytest.mark.variants`` that takes the ``variant`` fixture runs once per
variant of the matrix (``default`` and ``hostile``; every single variant under
``make test-variants``), and its ``sandbox`` plays that variant.

Both yield a :class:`practiceflow.testing.SandboxHandle`::

    def test_validate(sandbox):
        client_id, secret = sandbox.credentials("anz", "rw")   # or "ro", "inactive"
        url = sandbox.base_url("anz") + "/api/v1/auth/validate"
        sandbox.admin("POST", "/_admin/clock", {"advance": 60})  # the admin surface
        sandbox.state                                              # in-process state

Every test also gets the ``practiceflow`` logger back as it found it: a CLI command run
in-process configures it (handler, level), which would hide later tests' log records.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest

from _variants import play_variant, requested_variant, variant_matrix
from module_cache import load_module_cached
from practiceflow.manifest import module_registry
from practiceflow.testing import FakeClock, SandboxHandle, running_sandbox

_SESSION_STARTED = time.time()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Print the modules x runtimes table of the conformance run, when it ran."""
    from conformance.table import summary

    text = summary(config, _SESSION_STARTED)
    if text is not None:
        terminalreporter.write_sep("=", "conformance: modules x runtimes")
        terminalreporter.write_line(text)


@pytest.fixture(autouse=True)
def _practiceflow_logger_restored() -> Iterator[None]:
    logger = logging.getLogger("practiceflow")
    handlers, level, propagate = list(logger.handlers), logger.level, logger.propagate
    yield
    logger.handlers[:] = handlers
    logger.setLevel(level)
    logger.propagate = propagate


@pytest.fixture(autouse=True, scope="session")
def _modules_loaded_once_per_content() -> Iterator[None]:
    """Each module file is loaded (and linted, ~2 s for the shipped set) once per content in
    this process: every CLI command run in-process loads them all (``tests/module_cache.py``;
    an edited file is loaded afresh, a file that fails is loaded each time)."""
    with mock.patch.object(module_registry, "load_module", load_module_cached):
        yield


@pytest.fixture
def clock() -> FakeClock:
    """A fake clock at 2025-03-01 09:00 UTC that moves only when told to."""
    return FakeClock()


@pytest.fixture(scope="session")
def sandbox_server() -> Iterator[SandboxHandle]:
    """One sandbox for the whole test session (prefer ``sandbox``, which resets it)."""
    with running_sandbox(webhook_retry_scale=0.02) as handle:
        yield handle


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run each ``@pytest.mark.variants`` test once per variant of the matrix."""
    if metafunc.definition.get_closest_marker("variants") and "variant" in metafunc.fixturenames:
        metafunc.parametrize("variant", variant_matrix())


@pytest.fixture
def sandbox(sandbox_server: SandboxHandle, request: pytest.FixtureRequest) -> SandboxHandle:
    """The session sandbox, reset to its seed before this test (and playing the test's
    ``variant`` when it runs under the matrix)."""
    sandbox_server.reset()
    play_variant(sandbox_server, requested_variant(request))
    return sandbox_server
