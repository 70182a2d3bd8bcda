"""Fixtures of the API client tests: a clean environment, a fake clock, responses."""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import responses

from practiceflow.api import Client, RateLimits, RetryPolicy
from practiceflow.testing import FakeClock

BASE = "https://api.test/anz"
CLIENT_ID = "11111111-2222-3333-4444-555555555555"
SECRET = "s3cr3t-VALUE-never-shown"
NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No PRACTICEFLOW_* variable of the machine leaks into a test; no real profile file."""

    for name in list(os.environ):
        if name.startswith("PRACTICEFLOW_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PRACTICEFLOW_PROFILES", str(tmp_path / "no-profiles.toml"))


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        yield mock


@pytest.fixture
def make_client(clock: FakeClock) -> Iterator[Callable[..., Client]]:
    made: list[Client] = []

    def factory(**kwargs: Any) -> Client:
        options: dict[str, Any] = {
            "client_id": CLIENT_ID,
            "client_secret": SECRET,
            "base_url": BASE,
            "clock": clock.monotonic,
            "sleep": clock.sleep,
            "rng": random.Random(1234),
            "utcnow": lambda: NOW,
            "retry": RetryPolicy(max_attempts=3),
            "limits": RateLimits(),
        }
        options.update(kwargs)
        client = Client(**options)
        made.append(client)
        return client

    yield factory
    for client in made:
        client.close()


@pytest.fixture
def client(make_client: Callable[..., Client]) -> Client:
    return make_client()
