"""The assistant's rate budget: a third of the practice's windows, and with a fleet's
PostgreSQL store, counted in the practice's shared bucket (the one every replica uses)."""

from __future__ import annotations

import time

import pytest

from pgserver import shared_server
from practiceflow.api.rate_budget import RateLimits
from practiceflow.errors import RateLimitError
from practiceflow.fleet.postgres_budget import shared_budget
from practiceflow.mcp import ASSISTANT_LIMITS, assistant_budget
from practiceflow.runner import PriorityBudget


def test_the_assistant_budget_is_at_most_a_third_of_every_window():
    practice = RateLimits()
    assert ASSISTANT_LIMITS.per_minute * 3 <= practice.per_minute
    assert ASSISTANT_LIMITS.per_hour * 3 <= practice.per_hour
    assert ASSISTANT_LIMITS.per_day * 3 <= practice.per_day


def test_with_a_file_store_the_assistant_has_a_budget_of_its_own(tmp_path):
    budget = assistant_budget(str(tmp_path / "state.db"), "client-a")
    assert isinstance(budget, PriorityBudget)
    assert budget.limits == ASSISTANT_LIMITS
    for _ in range(ASSISTANT_LIMITS.per_minute):
        budget.acquire("GET", "/api/v1/entities", deadline=budget.clock())
    with pytest.raises(RateLimitError):
        budget.acquire("GET", "/api/v1/entities", deadline=budget.clock())


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
