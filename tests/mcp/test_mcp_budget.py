"""The assistant's rate budget: a third of the practice's windows, counted in the
practice's shared bucket on the same store as ``serve`` and ``run`` (``budget.db`` beside a
SQLite state file; the database of a fleet's PostgreSQL store)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pgserver import shared_server
from practiceflow.budget import RateBudget
from practiceflow.budget.postgres_bucket import shared_budget
from practiceflow.budget.rate_budget import RateLimits
from practiceflow.cli.common import ApiOptions
from practiceflow.cli.state import practice_client
from practiceflow.errors import RateLimitError
from practiceflow.mcp import ASSISTANT_LIMITS, assistant_budget


def test_the_assistant_budget_is_at_most_a_third_of_every_window():
    practice = RateLimits()
    assert ASSISTANT_LIMITS.per_minute * 3 <= practice.per_minute
    assert ASSISTANT_LIMITS.per_hour * 3 <= practice.per_hour
    assert ASSISTANT_LIMITS.per_day * 3 <= practice.per_day


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PRACTICEFLOW_CLIENT_ID", "client-a")
    monkeypatch.setenv("PRACTICEFLOW_CLIENT_SECRET", "not-used")
    monkeypatch.setenv("PRACTICEFLOW_BASE_URL", "http://127.0.0.1:9/anz")  # nothing is sent
    monkeypatch.setenv("PRACTICEFLOW_PROFILES", str(tmp_path / "none.toml"))


@pytest.mark.parametrize("store", ["file", "default", "postgres"])
def test_the_assistant_only_uses_what_serve_leaves_on_the_same_store(
    store: str, credentials: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the default store is .practiceflow/state.db here
    if store == "postgres":
        state: str | None = shared_server().new_database("serve_mcp_budget")
    else:
        state = "state.db" if store == "file" else None
    # serve's client, as serve builds it (its budget shared on the store) ...
    with practice_client(ApiOptions(), state) as client:
        assistant = assistant_budget(state, client.settings.client_id)  # ... and mcp's budget
        try:
            assert isinstance(client.budget, RateBudget)  # recipes wait by priority
            assert isinstance(assistant, RateBudget)
            assert assistant.limits == ASSISTANT_LIMITS
            recipes = client.budget
            for _ in range(ASSISTANT_LIMITS.per_minute - 1):
                recipes.acquire("GET", "/api/v1/entities", deadline=time.time())
            # One slot left under the assistant's third: it gets it, then must wait ...
            assistant.acquire("GET", "/api/v1/entities", deadline=time.time())
            with pytest.raises(RateLimitError):
                assistant.acquire("GET", "/api/v1/entities", deadline=time.time())
            # ... while serve's recipes go on up to the full window, which counts the
            # assistant's request too.
            for _ in range(RateLimits().per_minute - ASSISTANT_LIMITS.per_minute):
                recipes.acquire("POST", "/api/v1/bills", deadline=time.time())
            with pytest.raises(RateLimitError):
                recipes.acquire("POST", "/api/v1/bills", deadline=time.time())
        finally:
            assistant.close()


def test_with_a_fleet_store_the_assistant_only_uses_what_the_practice_leaves():
    url = shared_server().new_database("mcp_budget")
    fleet = shared_budget(url, "client-a", RateLimits(max_wait=0))
    assistant = assistant_budget(url, "client-a")
    other = assistant_budget(url, "client-b")
    try:
        for _ in range(ASSISTANT_LIMITS.per_minute - 1):
            fleet.acquire("GET", "/api/v1/entities", deadline=time.time())
        # One slot left under the assistant's third: it gets it, then must wait ...
        assistant.acquire("GET", "/api/v1/entities", deadline=time.time())
        with pytest.raises(RateLimitError):
            assistant.acquire("GET", "/api/v1/entities", deadline=time.time())
        # ... while the practice's recipes go on up to the full window,
        fleet.acquire("POST", "/api/v1/bills", deadline=time.time())
        # and another practice's assistant is not affected.
        other.acquire("GET", "/api/v1/entities", deadline=time.time())
    finally:
        for budget in (fleet, assistant, other):
            budget.close()
